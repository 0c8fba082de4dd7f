"""Interoperability with fastmcp (PyPI), as a client of our server and as a server for our client.

- fastmcp's ``Client`` (``tests/peers_py/fastmcp_client.py``, in fastmcp's own
  virtualenv) drives ``tests/peers_py/mcp_sync_target.py`` over stdio,
  Streamable HTTP and the legacy HTTP+SSE transport, in both of its
  negotiation modes: ``legacy`` (the initialize handshake) and ``auto``
  (``server/discover``, the 2026-07-28 era).
- Our client drives a fastmcp server (``tests/peers_py/fastmcp_server.py``)
  over stdio and over ``mcp.run(transport="http")``, in each era; with
  ``era="auto"`` it settles on 2026-07-28.

Both directions cover tools (structured output, tool errors), resources and
templates, prompts, progress, logging, sampling and elicitation answered by
the client's handlers, a timed-out call being cancelled on the server, and
ping. The peer is installed on first use and cached (``tests/peers.py``).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import peers
import pytest
from helpers import free_port

import mcp_sync
from mcp_sync import MCP_CODES, MCPClient, MCPError
from mcp_sync.server import start_http
from mcp_sync.types import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptReference,
    Root,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.timeout(300)  # the first run installs the peer

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
PEERS_PY = TESTS / "peers_py"
CLIENT_SCRIPT = PEERS_PY / "fastmcp_client.py"
SERVER_SCRIPT = PEERS_PY / "fastmcp_server.py"
TARGET_SCRIPT = PEERS_PY / "mcp_sync_target.py"
TIMEOUT = 30.0
"""The longest one request may take (seconds)."""
SCRIPT_TIMEOUT = 120.0
"""The longest a fastmcp client script may run (seconds)."""
HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
TARGET_TOOLS = {"echo", "weather", "broken", "count", "shout", "sample", "ask", "slow", "cancelled_calls", "roots"}
"""The tools of ``tests/peers_py/mcp_sync_target.py``."""

peer_log = logging.getLogger("tests.interop.fastmcp")
peer_log.setLevel(logging.INFO)  # a failing test shows what the peer said on stderr


def load_target() -> ModuleType:
    """``tests/peers_py/mcp_sync_target.py``, imported from its path (that directory is not a package)."""
    spec = importlib.util.spec_from_file_location("mcp_sync_target", TARGET_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_until(condition: Any, timeout: float = TIMEOUT) -> Any:
    """Poll ``condition()`` until it gives something true or ``timeout`` passes; its last value."""
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


@pytest.fixture(scope="module")
def fastmcp_python() -> str:
    return peers.fastmcp_python()


# ------------------------------------------------------- fastmcp, the client


@pytest.fixture
def our_http_url() -> Iterator[str]:
    """Our target server over HTTP (Streamable HTTP at ``/mcp``, legacy SSE at ``/sse``), for one test.

    One per test: the embedded server's pooled worker threads end with it, and
    it starts in a moment, in this process. (In 2026-07-28 a client cancels
    a request over HTTP by closing its connection, which the server notices
    within half a second: the timed-out call's handler sees its cancellation.)
    """
    with start_http(load_target().build()) as running:
        yield running.url


def run_fastmcp_client(python: str, *arguments: str) -> dict[str, Any]:
    """Run the fastmcp client script with ``arguments``; its report."""
    done = subprocess.run(
        [python, str(CLIENT_SCRIPT), *arguments],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        env=peers.peer_environment(),
        check=False,
    )
    assert done.returncode == 0, f"the fastmcp client failed:\n{done.stderr[-6000:]}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def text_of(blocks: list[dict[str, Any]]) -> list[str]:
    return [block["text"] for block in blocks if block["type"] == "text"]


@pytest.mark.parametrize(
    ("transport", "mode"),
    [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy"), ("http", "auto"), ("sse", "legacy"), ("sse", "auto")],
)
def test_the_fastmcp_client_drives_our_server(
    fastmcp_python: str, our_http_url: str, transport: str, mode: str
) -> None:
    if transport == "stdio":
        # fastmcp gives a stdio server only a few safe variables: name our checkout explicitly.
        target = ["--stdio", "env", f"PYTHONPATH={ROOT}", sys.executable, str(TARGET_SCRIPT)]
    elif transport == "http":
        target = ["--http", our_http_url]
    else:
        target = ["--sse", our_http_url.removesuffix("/mcp") + "/sse"]
    report = run_fastmcp_client(fastmcp_python, "--mode", mode, *target)

    # fastmcp's "auto" probes server/discover and adopts the 2026-07-28 era, which we serve, except
    # over the 2024-11-05 HTTP+SSE transport, which has no such era: there it falls back to the handshake.
    stateless = mode == "auto" and transport != "sse"
    assert report["protocol_version"] == (STATELESS if stateless else HANDSHAKE)
    assert report["server_info"] == {"name": "mcp-sync-target", "version": "1.0"}
    if not stateless:
        assert report["ping"] is True
    else:  # ping is not a 2026-07-28 method: a clear JSON-RPC error, not a hang
        assert report["ping"] == f"MCPError: Method not found: ping (not in {STATELESS})"
    tools = {tool["name"]: tool for tool in report["tools"]}  # served three a page: fastmcp follows the cursors
    assert set(tools) == TARGET_TOOLS
    assert tools["weather"]["outputSchema"]["required"] == ["city", "celsius"]
    assert tools["echo"]["inputSchema"]["required"] == ["text"]

    assert text_of(report["echo"]) == ["hello"]
    # Structured output: the raw object, and the typed object fastmcp builds from the output schema.
    assert report["weather"] == {"structured": {"city": "Oslo", "celsius": 21.5}, "data": ["Oslo", 21.5]}
    assert report["broken"] == "Error: the gauge is broken"  # fastmcp's ToolError, from isError
    assert report["broken_raw"]["isError"] is True
    assert text_of(report["broken_raw"]["content"]) == ["Error: the gauge is broken"]

    seen = report["seen"]
    assert text_of(report["shout"]) == ["QUIET"]
    assert seen["logs"] == [
        {"level": "debug", "logger": "target", "data": "a debug line"},
        {"level": "warning", "logger": "target", "data": {"shouted": "quiet"}},
    ]
    assert text_of(report["count"]) == ["counted to 3"]
    assert seen["progress"] == [[1, 3, "step 1 of 3"], [2, 3, "step 2 of 3"], [3, 3, "step 3 of 3"]]
    # Sampling and elicitation, answered by fastmcp's handlers (in 2026-07-28 as input requests).
    assert seen["sampled"] == [["hi"]]
    [sampled] = text_of(report["sample"])
    assert sampled.startswith("the model (") and sampled.endswith(") said: a fastmcp answer")
    assert text_of(report["ask"]) == ["the user likes teal"]
    assert seen["elicited"] == [
        {
            "message": "Colour?",
            "schema": {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]},
        }
    ]

    # Roots (asked of fastmcp's client by our server) and completions.
    assert json.loads(report["roots"]) == [["file:///srv/project", "project"]]
    assert report["completion"] == {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}

    assert [(r["uri"], r["name"], r["mimeType"]) for r in report["resources"]] == [
        ("target://readme", "readme", "text/plain"),
        ("target://logo", "logo", "image/png"),
    ]
    assert [(t["uriTemplate"], t["name"]) for t in report["templates"]] == [("target://notes/{name}", "note")]
    assert [c["text"] for c in report["readme"]] == ["Read me first."]
    assert [base64.b64decode(c["blob"]) for c in report["logo"]] == [load_target().LOGO]
    assert [(c["uri"], c["text"]) for c in report["note"]] == [("target://notes/todo", "The note called todo.")]
    assert report["missing"] == "MCPError: Resource not found: target://missing"
    [prompt] = report["prompts"]
    assert prompt["name"] == "greet"
    assert [(a["name"], a["required"]) for a in prompt["arguments"]] == [("name", True), ("style", False)]
    assert [m["content"]["text"] for m in report["greet"]["messages"]] == ["Greet Ada in a warm style."]

    # A call that times out: fastmcp gives up and tells the server (notifications/cancelled, or in
    # 2026-07-28 over HTTP by closing the request's stream), and the handler sees its cancellation.
    assert report["slow"] == "MCPError: Request 'tools/call' timed out"
    assert text_of(report["echo_after_timeout"]) == ["still here"]
    assert report["marker"] in report["cancelled_calls"]


# ------------------------------------------------------- fastmcp, the server


@pytest.fixture(scope="module")
def fastmcp_http_url(fastmcp_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fastmcp server, run by ``mcp.run(transport="http")`` on a free loopback port: its URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("fastmcp") / "server.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [fastmcp_python, str(SERVER_SCRIPT), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            env=peers.peer_environment(),
        )

    def listening() -> bool:
        if process.poll() is not None:
            return True  # it ended: the assertion below says so
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert wait_until(listening, timeout=60.0), f"nothing listens on port {port}:\n{log.read_text()}"
        assert process.poll() is None, f"the fastmcp server ended:\n{log.read_text()}"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(TIMEOUT)


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[0].content
    text = prompt.text if isinstance(prompt, TextContent) else ""
    return CreateMessageResult(role="assistant", content=TextContent(text=f"ours: {text}"), model="our-model")


def elicit(params: ElicitRequestFormParams) -> ElicitResult:
    # fastmcp's `ask` wraps a scalar answer in a `value` field; the guarded one asks for `colour`.
    field = "value" if "value" in params.requested_schema.properties else "colour"
    return ElicitResult(action="accept", content={field: "teal"})


def connect_to_fastmcp(transport: str, python: str, url: str, era: str, logs: list[Any]) -> MCPClient:
    target: str | list[str] = url if transport == "http" else [python, str(SERVER_SCRIPT)]
    stdio = {} if transport == "http" else {"env": peers.peer_environment(), "inherit_env": False, "stderr": peer_log}
    return mcp_sync.connect(
        target,
        era=era,
        timeout=TIMEOUT,
        sampling_provider=sample,
        elicitation_provider=elicit,
        roots_provider=lambda: [Root(uri="file:///srv/project", name="project")],
        log_handler=logs.append,
        **stdio,
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_our_client_settles_on_2026_07_28_with_a_fastmcp_server(
    request: pytest.FixtureRequest, fastmcp_python: str, transport: str
) -> None:
    url = request.getfixturevalue("fastmcp_http_url") if transport == "http" else ""
    with connect_to_fastmcp(transport, fastmcp_python, url, "auto", []) as client:
        # fastmcp speaks 2026-07-28, so "auto" settles on it.
        assert (client.negotiated_era, client.protocol_version) == ("stateless", STATELESS)
        assert client.call_tool("echo", {"text": "auto"}).text == "auto"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_our_client_drives_a_fastmcp_server(
    request: pytest.FixtureRequest, fastmcp_python: str, transport: str, era: str
) -> None:
    url = request.getfixturevalue("fastmcp_http_url") if transport == "http" else ""
    logs: list[LoggingMessageNotificationParams] = []
    with connect_to_fastmcp(transport, fastmcp_python, url, era, logs) as client:
        stateless = era == "stateless"
        assert client.negotiated_era == era
        assert client.protocol_version == (STATELESS if stateless else HANDSHAKE)
        assert (client.server_info.name, client.server_info.version) == ("fastmcp-peer", "4.1")
        client.ping()

        tools = {tool.name: tool for tool in client.list_tools().tools}
        assert {"echo", "weather", "broken", "count", "shout", "sample", "ask", "slow"} <= set(tools)
        assert client.call_tool("echo", {"text": "hello"}).text == "hello"
        weather = client.call_tool("weather", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
        output_schema = tools["weather"].output_schema
        assert output_schema is not None and set(output_schema["required"]) == {"city", "celsius"}
        broken = client.call_tool("broken", {})
        assert broken.is_error and broken.text == "the gauge is broken"
        with pytest.raises(MCPError, match="the gauge is broken"):
            client.call_tool("broken", {}, raise_on_error=True)

        client.set_log_level("debug")
        assert client.call_tool("shout", {"text": "quiet"}).text == "QUIET"
        assert wait_until(lambda: len(logs) >= 2)
        assert [(m.level, m.logger, m.data["msg"]) for m in logs] == [
            ("debug", "fm", "a debug line"),
            ("warning", "fm", "shouted quiet"),
        ]
        progress: list[ProgressNotificationParams] = []
        assert client.call_tool("count", {"steps": 3}, progress=progress.append).text == "counted to 3"
        assert [(p.progress, p.total, p.message) for p in progress] == [
            (1, 3, "step 1 of 3"),
            (2, 3, "step 2 of 3"),
            (3, 3, "step 3 of 3"),
        ]

        if stateless:
            # No back-channel in 2026-07-28: fastmcp's imperative questions fail as tool errors, and its
            # guard pattern (an input-required result, then the call again with the answers) works.
            assert "no back-channel" in client.call_tool("sample", {"prompt": "hi"}).text
            assert "unavailable on 2026-07-28" in client.call_tool("ask", {"question": "Colour?"}).text
            sampled = client.call_tool("sample_guarded", {"prompt": "hi"})
            asked = client.call_tool("ask_guarded", {"question": "Colour?"})
        else:
            sampled = client.call_tool("sample", {"prompt": "hi"})
            asked = client.call_tool("ask", {"question": "Colour?"})
            with pytest.raises(MCPError, match="only exists at MCP 2026-07-28") as refused:
                client.call_tool("ask_guarded", {"question": "Colour?"})
            assert refused.value.code == MCP_CODES.INVALID_PARAMS
        assert sampled.text == "the model (our-model) said: ours: hi"
        assert asked.text == "the user likes teal"

        if not stateless:
            assert json.loads(client.call_tool("roots", {}).text or "") == [["file:///srv/project", "project"]]
        completion = client.complete(PromptReference(name="greet"), "name", "A").completion
        assert completion.values == ["Ada", "Alan"]

        assert [(r.uri, r.mime_type) for r in client.list_resources().resources] == [
            ("fm://readme", "text/plain"),
            ("fm://logo", "image/png"),
        ]
        [template] = client.list_resource_templates().resource_templates
        assert (template.uri_template, template.name) == ("fm://notes/{name}", "note")
        [readme] = client.read_resource("fm://readme").contents
        assert isinstance(readme, TextResourceContents) and readme.text == "Read me first."
        [logo] = client.read_resource("fm://logo").contents
        assert isinstance(logo, BlobResourceContents) and base64.b64decode(logo.blob) == load_target().LOGO
        [note] = client.read_resource("fm://notes/todo").contents
        assert isinstance(note, TextResourceContents) and note.text == "The note called todo."
        with pytest.raises(MCPError, match="Resource not found") as missing:
            client.read_resource("fm://missing")
        assert missing.value.code == MCP_CODES.INVALID_PARAMS

        [prompt] = client.list_prompts().prompts
        assert prompt.name == "greet"
        assert [(a.name, a.required) for a in prompt.arguments or []] == [("name", True), ("style", False)]
        greeting = client.get_prompt("greet", {"name": "Ada", "style": "warm"})
        assert [m.content.text for m in greeting.messages if isinstance(m.content, TextContent)] == [
            "Greet Ada in a warm style."
        ]

        # A call that times out is cancelled: fastmcp cancels the handler, which records its marker. (In
        # 2026-07-28 over HTTP, fastmcp sends no headers before its first ping, 15 s on: our transport shuts the
        # request's connection down, and fastmcp hears the cancellation at once.)
        marker = f"{transport}-{era}"
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("slow", {"marker": marker}, timeout=0.5)
        assert timed_out.value.code == MCP_CODES.TIMEOUT
        assert wait_until(lambda: marker in json.loads(client.call_tool("cancelled_calls", {}).text))
