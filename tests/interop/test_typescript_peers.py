"""Interoperability with the official TypeScript SDK, as a client of our server and as the "everything" server.

- The SDK's ``Client`` (``tests/peers_js/ts_client.cjs``, on node) drives
  ``tests/peers_py/mcp_sync_target.py`` with ``StreamableHTTPClientTransport``,
  ``SSEClientTransport`` and ``StdioClientTransport``: tools, resources, prompts,
  completions, progress, logging, sampling, elicitation and roots answered by
  the script, a timed-out call being
  cancelled, and over HTTP the resumption of a stream from a resumption token
  and the end of the session (DELETE).
- Our client drives ``@modelcontextprotocol/server-everything`` (built on that
  SDK) over Streamable HTTP (its ``streamableHttp`` argument) and the legacy
  HTTP+SSE transport (``sse``). It speaks only the handshake era: our client
  negotiates down to it.

The peers are installed on first use and cached (``tests/peers.py``).
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peers
import pytest
import requests
from helpers import free_port
from test_fastmcp_peers import TARGET_SCRIPT, TARGET_TOOLS, TIMEOUT, load_target, wait_until

import mcp_sync
from mcp_sync import MCP_CODES, MCPError
from mcp_sync.server import start_http
from mcp_sync.types import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ImageContent,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.timeout(300)  # the first run installs the peers

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
TS_CLIENT = TESTS / "peers_js" / "ts_client.cjs"
SCRIPT_TIMEOUT = 120.0
"""The longest the TypeScript client script may run (seconds)."""
PING_INTERVAL = 0.5
"""How often our HTTP server pings an open response stream (seconds)."""
HANDSHAKE = "2025-11-25"
UNKNOWN_TOKEN = "Received a progress notification for an unknown token: "

peer_log = logging.getLogger("tests.interop.typescript")
peer_log.setLevel(logging.INFO)  # a failing test shows what the peer said on stderr


def text_of(blocks: list[dict[str, Any]]) -> list[str]:
    return [block["text"] for block in blocks if block["type"] == "text"]


@pytest.fixture(scope="module")
def node() -> str:
    return peers.require("node")


@pytest.fixture(scope="module")
def sdk_modules() -> Path:
    return peers.typescript_sdk_modules()


# ---------------------------------------------------- the TypeScript client


@pytest.fixture
def our_http_url() -> Iterator[str]:
    """Our target server over Streamable HTTP, for one test (its pooled threads end with it)."""
    with start_http(load_target().build(), ping_interval=PING_INTERVAL) as running:
        yield running.url


def late_progress(errors: list[str]) -> list[list[Any]]:
    """The progress notifications the SDK got after it had settled their request (it reports them as errors)."""
    late = [
        json.loads(error.removeprefix(UNKNOWN_TOKEN))["params"] for error in errors if error.startswith(UNKNOWN_TOKEN)
    ]
    return [[params["progress"], params["total"], params["message"]] for params in late]


@pytest.mark.parametrize("transport", ["http", "sse", "stdio"])
def test_the_typescript_client_drives_our_server(
    request: pytest.FixtureRequest, node: str, sdk_modules: Path, transport: str
) -> None:
    if transport == "http":
        url = request.getfixturevalue("our_http_url")
        target = ["--http", url]
    elif transport == "sse":
        target = ["--sse", request.getfixturevalue("our_http_url").removesuffix("/mcp") + "/sse"]
    else:
        # The SDK gives a stdio server only a few safe variables: name our checkout explicitly.
        target = ["--stdio", "env", f"PYTHONPATH={ROOT}", sys.executable, str(TARGET_SCRIPT)]
    environment = peers.peer_environment({"NODE_PATH": str(sdk_modules)})
    done = subprocess.run(
        [node, str(TS_CLIENT), *target],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, f"the TypeScript client failed:\n{done.stderr[-6000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    seen = report["seen"]

    assert report["server_info"] == {"name": "mcp-sync-target", "version": "1.0"}
    assert report["ping"] == {}
    tools = {tool["name"]: tool for tool in report["tools"]}
    assert report["tool_pages"] == 4  # ten tools, three a page
    assert set(tools) == TARGET_TOOLS
    assert text_of(report["echo"]) == ["hello"]
    assert report["weather"]["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
    assert json.loads(text_of(report["weather"]["content"])[0]) == {"city": "Oslo", "celsius": 21.5}
    assert report["broken"]["isError"] is True
    assert text_of(report["broken"]["content"]) == ["Error: the gauge is broken"]

    assert text_of(report["shout"]) == ["QUIET"]
    assert seen["logs"] == [
        {"level": "debug", "logger": "target", "data": "a debug line"},
        {"level": "warning", "logger": "target", "data": {"shouted": "quiet"}},
    ]
    assert text_of(report["count"]) == ["counted to 3"]
    # The SDK runs notification handlers a microtask late but settles a response at once, so the
    # progress that arrives in the same read as the response reaches it after the request is done,
    # and it reports those as errors. All three came, in order, before the response (the wire order).
    expected = [[1, 3, "step 1 of 3"], [2, 3, "step 2 of 3"], [3, 3, "step 3 of 3"]]
    late = [item for item in late_progress(seen["errors"]) if item[1] == 3]
    assert seen["progress"] + late == expected

    assert seen["sampled"] == [["hi"]]
    assert text_of(report["sample"]) == ["the model (ts-model) said: a typescript answer"]
    assert seen["elicited"] == [
        {
            "message": "Colour?",
            "schema": {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]},
        }
    ]
    assert text_of(report["ask"]) == ["the user likes teal"]

    assert json.loads(report["roots"]) == [["file:///srv/project", "project"]]
    assert report["completion"] == {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}

    assert [(r["uri"], r["mimeType"]) for r in report["resources"]] == [
        ("target://readme", "text/plain"),
        ("target://logo", "image/png"),
    ]
    assert [t["uriTemplate"] for t in report["templates"]] == ["target://notes/{name}"]
    assert [c["text"] for c in report["readme"]] == ["Read me first."]
    assert [base64.b64decode(c["blob"]) for c in report["logo"]] == [load_target().LOGO]
    assert [c["text"] for c in report["note"]] == ["The note called todo."]
    assert report["missing"] == "McpError: MCP error -32002: Resource not found: target://missing"
    [prompt] = report["prompts"]
    assert [(a["name"], a["required"]) for a in prompt["arguments"]] == [("name", True), ("style", False)]
    assert [m["content"]["text"] for m in report["greet"]["messages"]] == ["Greet Ada in a warm style."]

    # The timed-out call: the SDK sent notifications/cancelled, and the handler saw its cancellation.
    assert report["slow"] == "McpError: MCP error -32001: Request timed out"
    assert report["marker"] in report["cancelled_calls"]

    if transport != "http":
        return
    assert report["protocol_version"] == HANDSHAKE
    assert report["session_id"]
    # Resumption: every event of the call's stream had an id, and asking again from the first one
    # replayed the rest: its progress (for the first request's token, so the SDK calls it late) and
    # the response, which the SDK gives to the resuming request.
    tokens = report["resumption_tokens"]
    assert len(tokens) >= 3 and len({token.rsplit(":", 1)[0] for token in tokens}) == 1
    assert text_of(report["streamed"]) == ["counted to 2"]
    assert text_of(report["replayed"]) == ["counted to 2"]
    # (the first call's own progress may have come late too, before the replayed copies)
    assert [item for item in late_progress(seen["errors"]) if item[1] == 2][-2:] == [
        [1, 2, "step 1 of 2"],
        [2, 2, "step 2 of 2"],
    ]
    # terminateSession() sent a DELETE: the session is gone on our side too.
    assert report["session_after_delete"] is None
    gone = requests.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": report["session_id"],
            "MCP-Protocol-Version": HANDSHAKE,
        },
        timeout=TIMEOUT,
    )
    assert gone.status_code == 404


# ------------------------------------------------------- server-everything


def everything_url(node: str, mode: str, log: Path) -> Iterator[str]:
    """Run server-everything with ``mode`` (``streamableHttp`` or ``sse``) on a free loopback port; its URL."""
    port = free_port()
    package = peers.npm_package_dir(peers.EVERYTHING_SERVER)
    # The gzip tool can fetch URLs: keep it to the loopback even if it tried.
    environment = peers.peer_environment({"PORT": str(port), "GZIP_ALLOWED_DOMAINS": "localhost"})
    with open(log, "w") as output:
        process = subprocess.Popen(
            [node, str(peers.node_entry(package)), mode],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=environment,
        )

    def listening() -> bool:
        if process.poll() is not None:
            return True  # it ended: the assertion below says so
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert wait_until(listening, timeout=60.0), f"nothing listens on port {port}:\n{log.read_text()}"
        assert process.poll() is None, f"server-everything ended:\n{log.read_text()}"
        yield f"http://127.0.0.1:{port}/" + ("mcp" if mode == "streamableHttp" else "sse")
    finally:
        process.terminate()
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(TIMEOUT)


@pytest.fixture(scope="module", params=["streamableHttp", "sse"])
def everything(request: pytest.FixtureRequest, node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("everything") / "server.log"
    yield from everything_url(node, request.param, log)


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[0].content
    text = prompt.text if isinstance(prompt, TextContent) else ""
    return CreateMessageResult(role="assistant", content=TextContent(text=f"ours: {text}"), model="our-model")


def test_our_client_drives_server_everything_over_http(everything: str) -> None:
    asked: list[ElicitRequestFormParams] = []

    def elicit(params: ElicitRequestFormParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="decline")

    logs: list[LoggingMessageNotificationParams] = []
    with mcp_sync.connect(
        everything, timeout=TIMEOUT, sampling_provider=sample, elicitation_provider=elicit, log_handler=logs.append
    ) as client:
        # It speaks only the handshake era: "auto" settles on it.
        assert (client.negotiated_era, client.protocol_version) == ("handshake", HANDSHAKE)
        assert client.server_info.name == "mcp-servers/everything"
        client.ping()
        tools = {tool.name: tool for tool in client.list_tools().tools}
        assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= set(tools)
        assert client.call_tool("echo", {"message": "over HTTP"}).text == "Echo: over HTTP"
        assert "is 5" in (client.call_tool("get-sum", {"a": 2, "b": 3}).text or "")

        structured = client.call_tool("get-structured-content", {"location": "Chicago"})
        assert structured.structured_content is not None
        assert tools["get-structured-content"].output_schema is not None
        assert set(structured.structured_content) >= set(tools["get-structured-content"].output_schema["required"])
        image = client.call_tool("get-tiny-image", {})
        [picture] = [block for block in image.content if isinstance(block, ImageContent)]
        assert picture.mime_type == "image/png" and base64.b64decode(picture.data).startswith(b"\x89PNG")
        refused = client.call_tool("get-sum", {"a": "two"})
        assert refused.is_error

        progress: list[ProgressNotificationParams] = []
        done = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress=progress.append
        )
        assert "Steps: 3" in (done.text or "")
        assert [(p.progress, p.total) for p in progress] == [(1, 3), (2, 3), (3, 3)]

        sampled = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}).text or ""
        assert json.loads(sampled.split("\n", 1)[1]) == {
            "model": "our-model",
            "role": "assistant",
            "content": {"type": "text", "text": "ours: Resource trigger-sampling-request context: hello"},
        }
        declined = client.call_tool("trigger-elicitation-request", {}).text or ""
        assert "declined" in declined
        assert len(asked) == 1 and asked[0].requested_schema.properties

        resources = client.list_resources().resources
        assert resources and all(r.uri.startswith("demo://") for r in resources)
        [document] = client.read_resource(resources[0].uri).contents
        assert isinstance(document, TextResourceContents) and document.text
        templates = {t.uri_template for t in client.list_resource_templates().resource_templates}
        assert "demo://resource/dynamic/blob/{resourceId}" in templates
        [blob] = client.read_resource("demo://resource/dynamic/blob/7").contents
        assert isinstance(blob, BlobResourceContents) and base64.b64decode(blob.blob)
        [text] = client.read_resource("demo://resource/dynamic/text/7").contents
        assert isinstance(text, TextResourceContents) and "7" in text.text

        prompts = {prompt.name for prompt in client.list_prompts().prompts}
        assert {"simple-prompt", "args-prompt"} <= prompts
        messages = client.get_prompt("args-prompt", {"city": "Oslo", "state": "Oslo"}).messages
        assert any(isinstance(m.content, TextContent) and "Oslo" in m.content.text for m in messages)

        # Log messages that belong to no request (they come on the session's own stream, once at
        # once and then every 5 s, at a random level: "debug" lets every one through).
        client.set_log_level("debug")
        assert "Started" in (client.call_tool("toggle-simulated-logging", {}).text or "")
        try:
            assert wait_until(lambda: logs)
            assert str(logs[0].data).split(" - ")[0].endswith("message")
            assert logs[0].data.lower().startswith(logs[0].level.split("-")[0])
        finally:
            client.call_tool("toggle-simulated-logging", {})

        # A call that times out is given up (and cancelled); the connection goes on.
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("trigger-long-running-operation", {"duration": 20, "steps": 2}, timeout=0.5)
        assert timed_out.value.code == MCP_CODES.TIMEOUT
        assert client.call_tool("echo", {"message": "still here"}).text == "Echo: still here"


def test_our_client_held_to_2026_07_28_gets_a_clear_error_from_server_everything(everything: str) -> None:
    # server-everything has no server/discover and no stateless requests: held to that era, our
    # client fails at once with the server's own answer, rather than hanging or guessing.
    with pytest.raises(MCPError, match=f"could not connect to the MCP server at {everything}") as refused:
        mcp_sync.connect(everything, era="stateless", timeout=TIMEOUT)
    reason = str(refused.value)
    expected = "Server not initialized" if everything.endswith("/mcp") else "answered server/discover with HTTP 404"
    assert expected in reason
