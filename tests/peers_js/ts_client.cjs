// The official TypeScript SDK's client driving an MCP server (tests/peers_py/mcp_sync_target.py);
// prints a JSON report on its last line of stdout.
//
// Run it with NODE_PATH set to the node_modules holding @modelcontextprotocol/sdk (tests/peers.py):
//
//     node ts_client.cjs --http http://127.0.0.1:8000/mcp
//     node ts_client.cjs --sse http://127.0.0.1:8000/sse
//     node ts_client.cjs --stdio python mcp_sync_target.py
//
// The script answers the server's sampling, elicitation and roots requests itself, records the log and
// progress notifications it gets, lets one call time out (the SDK then sends notifications/cancelled),
// and, over HTTP, resumes a stream from a resumption token, then ends the session with a DELETE.
"use strict";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { SSEClientTransport } = require("@modelcontextprotocol/sdk/client/sse.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} = require("@modelcontextprotocol/sdk/types.js");

const TIMEOUT = 30000;

async function attempt(promise) {
  try {
    return await promise;
  } catch (error) {
    return `${error.constructor.name}: ${error.message}`;
  }
}

// Every page of a listing (the SDK gives one page per call): the items under `key`, and the page count.
async function everyPage(list, key) {
  const items = [];
  let cursor;
  let pages = 0;
  do {
    const page = await list(cursor === undefined ? {} : { cursor });
    items.push(...page[key]);
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor !== undefined);
  return { items, pages };
}

async function main() {
  const [kind, ...target] = process.argv.slice(2);
  const seen = { logs: [], progress: [], sampled: [], elicited: [], errors: [] };
  const report = { seen };
  const client = new Client(
    { name: "ts-interop", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
  );
  client.onerror = (error) => seen.errors.push(error.message);
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    const { level, logger, data } = notification.params;
    seen.logs.push({ level, logger, data });
  });
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    seen.sampled.push(request.params.messages.map((message) => message.content.text));
    return { role: "assistant", content: { type: "text", text: "a typescript answer" }, model: "ts-model" };
  });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    seen.elicited.push({ message: request.params.message, schema: request.params.requestedSchema });
    return { action: "accept", content: { colour: "teal" } };
  });

  client.setRequestHandler(ListRootsRequestSchema, () => ({
    roots: [{ uri: "file:///srv/project", name: "project" }],
  }));

  let transport;
  if (kind === "--http") {
    transport = new StreamableHTTPClientTransport(new URL(target[0]));
  } else if (kind === "--sse") {
    transport = new SSEClientTransport(new URL(target[0]));
  } else {
    transport = new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "inherit" });
  }
  const options = { timeout: TIMEOUT };
  await client.connect(transport, options);
  report.protocol_version = transport.protocolVersion ?? null;
  report.server_info = client.getServerVersion();
  report.session_id = transport.sessionId ?? null;
  report.ping = await attempt(client.ping(options));
  const tools = await everyPage((params) => client.listTools(params, options), "tools");
  report.tools = tools.items;
  report.tool_pages = tools.pages;
  report.echo = (await client.callTool({ name: "echo", arguments: { text: "hello" } }, undefined, options)).content;
  report.weather = await client.callTool({ name: "weather", arguments: { city: "Oslo" } }, undefined, options);
  report.broken = await client.callTool({ name: "broken", arguments: {} }, undefined, options);
  await client.setLoggingLevel("debug", options);
  report.shout = (await client.callTool({ name: "shout", arguments: { text: "quiet" } }, undefined, options)).content;
  const onprogress = (progress) => seen.progress.push([progress.progress, progress.total, progress.message]);
  const counted = await client.callTool({ name: "count", arguments: { steps: 3 } }, undefined, { ...options, onprogress });
  report.count = counted.content;
  report.sample = (await client.callTool({ name: "sample", arguments: { prompt: "hi" } }, undefined, options)).content;
  report.ask = (await client.callTool({ name: "ask", arguments: { question: "Colour?" } }, undefined, options)).content;
  report.resources = (await client.listResources({}, options)).resources;
  report.templates = (await client.listResourceTemplates({}, options)).resourceTemplates;
  report.readme = (await client.readResource({ uri: "target://readme" }, options)).contents;
  report.logo = (await client.readResource({ uri: "target://logo" }, options)).contents;
  report.note = (await client.readResource({ uri: "target://notes/todo" }, options)).contents;
  report.roots = (await client.callTool({ name: "roots", arguments: {} }, undefined, options)).content[0].text;
  const reference = { type: "ref/prompt", name: "greet" };
  report.completion = (await client.complete({ ref: reference, argument: { name: "name", value: "A" } }, options))
    .completion;
  report.missing = await attempt(client.readResource({ uri: "target://missing" }, options));
  report.prompts = (await client.listPrompts({}, options)).prompts;
  report.greet = await client.getPrompt({ name: "greet", arguments: { name: "Ada", style: "warm" } }, options);

  // A call that times out: the SDK sends notifications/cancelled, and the handler records its marker.
  const marker = `timed-out-${process.pid}`;
  report.marker = marker;
  report.slow = await attempt(client.callTool({ name: "slow", arguments: { marker } }, undefined, { timeout: 500 }));
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    const listed = await client.callTool({ name: "cancelled_calls", arguments: {} }, undefined, options);
    report.cancelled_calls = JSON.parse(listed.content[0].text);
    if (report.cancelled_calls.includes(marker) || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  if (kind === "--http") {
    // Resumption: remember the last event id of a call's stream, then ask for the stream again from there.
    const tokens = [];
    const streamed = await client.request(
      { method: "tools/call", params: { name: "count", arguments: { steps: 2 }, _meta: { progressToken: "resume" } } },
      CallToolResultSchema,
      { ...options, onprogress: () => {}, onresumptiontoken: (token) => tokens.push(token) },
    );
    report.resumption_tokens = tokens;
    report.streamed = streamed.content;
    // Resume that stream after its first event: the server replays the rest (the SDK sends a GET with
    // Last-Event-ID, and gives the replayed response to this new request).
    const replayedProgress = [];
    const replayed = await client.request(
      { method: "tools/call", params: { name: "count", arguments: { steps: 2 }, _meta: { progressToken: "resume" } } },
      CallToolResultSchema,
      {
        ...options,
        resumptionToken: tokens[0],
        onprogress: (progress) => replayedProgress.push([progress.progress, progress.total, progress.message]),
      },
    );
    report.replayed = replayed.content;
    report.replayed_progress = replayedProgress;
    await transport.terminateSession();
    report.session_after_delete = transport.sessionId ?? null;
  }
  await client.close();
  console.log(JSON.stringify(report));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
