"""An MCP server with an MCP App: a counter the model can show, with a button only the app can press.

Run it as ``python examples/apps_server.py`` (stdio). Two tools share the app
``ui://counter/app.html``:

- ``show_counter`` (seen by the model): its result is the count, as text for
  any client and as ``structuredContent`` for the app;
- ``increment`` (``visibility=["app"]``): the app's "+1" button calls it
  through the host; a host keeps it from the model.

The app is plain HTML and a small inline script, no library and no network:
it speaks the app's side of the protocol by hand over ``postMessage``
(``ui/initialize``, then ``ui/notifications/initialized``), shows the tool's
input and result as the host sends them, reports its size, answers
``ui/resource-teardown``, and calls ``increment`` with ``tools/call``.
"""

from __future__ import annotations

import threading

from mcp_sync import MCPServer
from mcp_sync.server import Context
from mcp_sync.types import CallToolResult, TextContent

APP = "ui://counter/app.html"

HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Counter</title>
<style>
  body { font-family: var(--font-sans, system-ui, sans-serif); margin: 0; padding: 12px;
         color: var(--color-text-primary, #171717); background: var(--color-background-primary, transparent); }
  #count { font-size: 2.5em; font-weight: bold; margin: 4px 0; }
  .dim { color: var(--color-text-secondary, #666); font-size: 0.85em; }
  button { font-size: 1em; padding: 4px 14px; }
</style>
</head>
<body>
<div class="dim" id="host">connecting...</div>
<div id="count">?</div>
<button id="increment" disabled>+1</button>
<div class="dim">input: <span id="input">none yet</span></div>
<div class="dim">result: <span id="result">none yet</span></div>
<script>
"use strict";
// The app's side of MCP Apps, by hand: JSON-RPC 2.0 over postMessage with the host (our parent frame).
const pending = new Map();
let nextId = 1;

function send(message) { window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*"); }

function request(method, params) {
  const id = nextId++;
  send({ id: id, method: method, params: params });
  return new Promise(function (resolve, reject) { pending.set(id, { resolve: resolve, reject: reject }); });
}

function notify(method, params) { send({ method: method, params: params }); }

function showResult(result) {
  document.getElementById("result").textContent = JSON.stringify(result.structuredContent || result.content);
  if (result.structuredContent && typeof result.structuredContent.count === "number") {
    document.getElementById("count").textContent = String(result.structuredContent.count);
  }
}

function applyContext(context) {
  if (context && context.theme) { document.documentElement.style.colorScheme = context.theme; }
}

const handlers = {
  "ui/notifications/tool-input": function (params) {
    document.getElementById("input").textContent = JSON.stringify(params.arguments || {});
  },
  "ui/notifications/tool-result": showResult,
  "ui/notifications/host-context-changed": applyContext,
  "ui/resource-teardown": function () { document.getElementById("increment").disabled = true; return {}; },
  "ping": function () { return {}; },
};

window.addEventListener("message", function (event) {
  const message = event.data;
  if (event.source !== window.parent || !message || message.jsonrpc !== "2.0") { return; }
  if (message.method === undefined) {  // a response to one of our requests
    const waiter = pending.get(message.id);
    if (!waiter) { return; }
    pending.delete(message.id);
    if (message.error) { waiter.reject(new Error(message.error.message)); } else { waiter.resolve(message.result); }
    return;
  }
  const handler = handlers[message.method];
  if (message.id === undefined) { if (handler) { handler(message.params || {}); } return; }
  if (handler) { send({ id: message.id, result: handler(message.params || {}) }); }
  else { send({ id: message.id, error: { code: -32601, message: "Method not found: " + message.method } }); }
});

document.getElementById("increment").addEventListener("click", function () {
  request("tools/call", { name: "increment", arguments: { by: 1 } }).then(showResult, function (error) {
    document.getElementById("result").textContent = "error: " + error.message;
  });
});

request("ui/initialize", {
  appInfo: { name: "counter-app", version: "1.0" },
  appCapabilities: {},
  protocolVersion: "2026-01-26",
}).then(function (result) {
  document.getElementById("host").textContent = "shown by " + ((result.hostInfo || {}).name || "a host");
  applyContext(result.hostContext);
  notify("ui/notifications/initialized", {});
  document.getElementById("increment").disabled = false;
  new ResizeObserver(function () {
    const box = document.documentElement.getBoundingClientRect();
    notify("ui/notifications/size-changed", { width: Math.ceil(box.width), height: Math.ceil(box.height) });
  }).observe(document.documentElement);
});
</script>
</body>
</html>
"""

server = MCPServer("counter", "1.0")
server.add_app_resource(
    APP, html=HTML, title="Counter", description="The counter, with a +1 button.", prefers_border=True
)

_count = 0
_lock = threading.Lock()


def _counted(count: int, text: str) -> CallToolResult:
    # The text is what a client without apps shows (and what a model reads); the app reads structuredContent.
    return CallToolResult(content=[TextContent(text=text)], structured_content={"count": count})


@server.tool(ui=APP)
def show_counter(ctx: Context) -> CallToolResult:
    """Show the counter (in an app with a +1 button where the client shows apps)."""
    with _lock:
        count = _count
    hint = "" if ctx.client_supports_apps else " (a client that shows MCP Apps has a +1 button for it)"
    return _counted(count, f"The counter is at {count}.{hint}")


@server.tool(ui=APP, visibility=["app"])
def increment(by: int = 1) -> CallToolResult:
    """Add ``by`` to the counter; the app's button calls it, the model does not see it."""
    global _count
    with _lock:
        _count += by
        count = _count
    return _counted(count, f"The counter is now at {count}.")


if __name__ == "__main__":
    server.serve_stdio()
