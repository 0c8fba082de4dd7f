"""OpenTelemetry spans of requests, on both sides, and the trace context carried in ``_meta``.

Spans are recorded by the SDK's ``InMemorySpanExporter``; the tests put an
SDK ``TracerProvider`` where mcp_sync looks for the global one (patched for
the test only, as ``trace.set_tracer_provider`` would, so the rest of the suite
keeps running without a provider).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import RecordingTransport, connect_pair
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, SpanKind

from mcp_sync import MCPError, MCPServer
from mcp_sync.client.core import MCPClient
from mcp_sync.runtime import tracing
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.server import start_http
from mcp_sync.server.context import Context
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import CompleteRequestParams, PromptReference

ERAS = ("handshake", "stateless")


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield exported
    provider.shutdown()


def build_server(inner: MCPClient | None = None) -> MCPServer:
    server = MCPServer("traced")

    @server.tool
    def echo(text: str) -> str:
        return text

    @server.tool
    def boom() -> str:
        raise RuntimeError("failed")

    @server.tool
    def meta(ctx: Context) -> str:
        return json.dumps(ctx.meta)

    @server.tool
    def nested() -> str:
        assert inner is not None
        return inner.call_tool("echo", {"text": "deep"}).text

    @server.resource("mem://note")
    def note() -> str:
        return "a note"

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    def broken(params: CompleteRequestParams, ctx: Context) -> list[str]:
        raise ValueError("no completions")

    server.set_completion_provider(broken)
    return server


def spans_named(exporter: InMemorySpanExporter, name: str) -> tuple[ReadableSpan, ReadableSpan]:
    """The client span and the server span of the one request named ``name``."""
    found = [span for span in exporter.get_finished_spans() if span.name == name]
    client = [span for span in found if span.kind == SpanKind.CLIENT]
    server = [span for span in found if span.kind == SpanKind.SERVER]
    assert len(client) == 1 and len(server) == 1, found
    return client[0], server[0]


def assert_parent(child: ReadableSpan, parent: ReadableSpan) -> None:
    assert child.context is not None and parent.context is not None and child.parent is not None
    assert child.context.trace_id == parent.context.trace_id
    assert child.parent.span_id == parent.context.span_id


@pytest.mark.parametrize("era", ERAS)
def test_one_trace_runs_from_the_caller_through_the_server_in_memory(exporter: InMemorySpanExporter, era: str) -> None:
    server = build_server()
    client = connect_pair(server, MCPClient(era=era))
    app = trace.get_tracer_provider().get_tracer("app")
    try:
        with app.start_as_current_span("view") as view:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
            client.read_resource("mem://note")
            client.get_prompt("greet", {"name": "Ada"})
            assert client.call_tool("boom", {}).is_error
            with pytest.raises(MCPError):
                client.call_tool("missing", {})
            with pytest.raises(MCPError):
                client.complete(PromptReference(name="greet"), "name", "A")
    finally:
        client.disconnect()
        server.stop()
    root = next(span for span in exporter.get_finished_spans() if span.name == "view")
    assert root.context is not None and root.context.span_id == view.get_span_context().span_id

    sent, served = spans_named(exporter, "tools/call echo")
    assert_parent(sent, root)
    assert_parent(served, sent)
    for span in (sent, served):
        attributes = dict(span.attributes or {})
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == "echo"
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["jsonrpc.request.id"] == str(sent.attributes["jsonrpc.request.id"])  # type: ignore[index]
        assert "error.type" not in attributes and "network.transport" not in attributes

    sent, served = spans_named(exporter, "resources/read")
    assert sent.attributes is not None and sent.attributes["mcp.resource.uri"] == "mem://note"
    assert_parent(served, sent)
    sent, served = spans_named(exporter, "prompts/get greet")
    assert served.attributes is not None and served.attributes["gen_ai.prompt.name"] == "greet"

    for name, expected in (("tools/call boom", "tool_error"), ("tools/call missing", "-32602")):
        sent, served = spans_named(exporter, name)
        assert sent.attributes is not None and served.attributes is not None
        assert sent.attributes["error.type"] == served.attributes["error.type"] == expected
        assert not sent.status.is_ok and not served.status.is_ok
    sent, served = spans_named(exporter, "completion/complete")
    assert served.attributes is not None and served.attributes["error.type"] == "ValueError"
    assert sent.attributes is not None and sent.attributes["error.type"] == "-32603"


def test_the_trace_context_travels_in_meta_and_handlers_continue_it(exporter: InMemorySpanExporter) -> None:
    downstream = build_server()
    inner = connect_pair(downstream, MCPClient(era="handshake"))
    server = build_server(inner)
    client_end, server_end = InMemoryTransport.pair()
    recorded = RecordingTransport(client_end)
    server.start(server_end)
    client = MCPClient(era="handshake")
    client.connect(recorded)
    try:
        meta = json.loads(client.call_tool("meta", {}).text)
        assert client.call_tool("nested", {}).text == "deep"
    finally:
        client.disconnect()
        inner.disconnect()
        server.stop()
        downstream.stop()
    sent, _ = spans_named(exporter, "tools/call meta")
    assert sent.context is not None
    assert meta["traceparent"].startswith(f"00-{sent.context.trace_id:032x}-{sent.context.span_id:016x}-")
    on_the_wire = [json.loads(line) for line in recorded.sent]
    calls = [message for message in on_the_wire if message.get("method") == "tools/call"]
    assert all(message["params"]["_meta"]["traceparent"].startswith("00-") for message in calls)

    # The handler of "nested" called another server: that call is part of the same trace.
    outer_sent, outer_served = spans_named(exporter, "tools/call nested")
    echoes = [span for span in exporter.get_finished_spans() if span.name == "tools/call echo"]
    inner_sent = next(span for span in echoes if span.kind == SpanKind.CLIENT)
    inner_served = next(span for span in echoes if span.kind == SpanKind.SERVER)
    assert_parent(outer_served, outer_sent)
    assert_parent(inner_sent, outer_served)
    assert_parent(inner_served, inner_sent)


@pytest.mark.parametrize("era", ERAS)
def test_spans_over_streamable_http(exporter: InMemorySpanExporter, era: str) -> None:
    server = build_server()
    running = start_http(server)
    client = MCPClient.http(running.url, era=era)
    try:
        assert client.call_tool("echo", {"text": "over http"}).text == "over http"
    finally:
        client.disconnect()
        running.close()
        server.stop()
    sent, served = spans_named(exporter, "tools/call echo")
    assert_parent(served, sent)
    assert sent.attributes is not None and served.attributes is not None
    assert sent.attributes["network.transport"] == served.attributes["network.transport"] == "tcp"
    if era == "handshake":
        assert isinstance(sent.attributes["mcp.session.id"], str)
    else:
        assert "mcp.session.id" not in sent.attributes


def test_nothing_is_traced_without_a_configured_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tracing.active_tracer() is None  # nothing configured
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", NoOpTracerProvider())
    assert tracing.active_tracer() is None
    server = build_server()
    client = connect_pair(server, MCPClient(era="handshake"))
    try:
        assert "traceparent" not in json.loads(client.call_tool("meta", {}).text)
    finally:
        client.disconnect()
        server.stop()


def test_requests_that_name_no_target_and_meta_that_is_not_an_object(exporter: InMemorySpanExporter) -> None:
    a, b = InMemoryTransport.pair()
    server = JsonRpcDispatcher(b, side="server")
    server.register_handler("tools/call", lambda params, ctx: {"meta": params.get("_meta")})
    server.register_handler("prompts/get", lambda params, ctx: {})
    server.register_handler("resources/read", lambda params, ctx: {})
    client = JsonRpcDispatcher(a, side="client")
    server.start()
    client.start()
    try:
        assert client.request("tools/call", {"name": 1, "_meta": "odd"}, timeout=5) == {"meta": "odd"}
        client.request("prompts/get", {}, timeout=5)
        client.request("resources/read", {}, timeout=5)
    finally:
        client.close()
        server.close()
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == ["prompts/get", "prompts/get", "resources/read", "resources/read", "tools/call", "tools/call"]
    for span in exporter.get_finished_spans():
        assert span.attributes is not None
        assert not {"gen_ai.tool.name", "gen_ai.prompt.name", "mcp.resource.uri"} & set(span.attributes)


def test_result_error_only_marks_failed_tool_results() -> None:
    assert tracing.result_error("tools/call", {"isError": True}) == "tool_error"
    assert tracing.result_error("tools/call", {"content": []}) is None
    assert tracing.result_error("prompts/get", {"isError": True}) is None


def test_a_span_context_is_readable(exporter: InMemorySpanExporter) -> None:
    tracer: Any = tracing.active_tracer()
    assert tracer is not None and tracing.active_tracer() is tracer  # looked up once per provider


# ------------------------------------------------------ the official SDK

SDK_CLIENT = """
import json, sys
import anyio
from mcp import Client
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

url, trace_id, span_id = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)


async def main():
    caller = SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(1))
    with anyio.fail_after(60), trace.use_span(NonRecordingSpan(caller)):
        async with Client(url) as client:
            result = await client.call_tool("meta", {})
    print(result.content[0].text)


anyio.run(main)
"""

SDK_SERVER = """
from mcp.server.mcpserver import MCPServer
from opentelemetry import trace

server = MCPServer("sdk-traced")


@server.tool()
def where() -> str:
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}-{context.span_id:016x}"


server.run()
"""


@pytest.fixture(scope="module")
def peer_python() -> str:
    import peers

    return peers.peer_python()


@pytest.mark.interop
def test_the_official_sdk_client_continues_its_trace_into_our_server(
    exporter: InMemorySpanExporter, peer_python: str, tmp_path: Path
) -> None:
    import peers

    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    trace_id, span_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    server = build_server()
    with start_http(server) as running:
        done = subprocess.run(
            [peer_python, str(script), running.url, trace_id, span_id],
            capture_output=True,
            text=True,
            timeout=120,
            env=peers.peer_environment(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    server.stop()
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout)["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
    served = next(span for span in exporter.get_finished_spans() if span.name == "tools/call meta")
    assert served.kind == SpanKind.SERVER and served.context is not None and served.parent is not None
    assert (served.context.trace_id, served.parent.span_id) == (int(trace_id, 16), int(span_id, 16))


@pytest.mark.interop
@pytest.mark.parametrize("era", ERAS)
def test_the_official_sdk_server_reads_our_trace_context(
    exporter: InMemorySpanExporter, peer_python: str, tmp_path: Path, era: str
) -> None:
    import peers

    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER)
    with MCPClient.stdio([peer_python, str(script)], env=peers.peer_environment(), era=era) as client:
        where = client.call_tool("where", {}).text
    sent = next(span for span in exporter.get_finished_spans() if span.name == "tools/call where")
    assert sent.kind == SpanKind.CLIENT and sent.context is not None
    # Without an OpenTelemetry SDK there, its current span is the one our request carried.
    assert where == f"{sent.context.trace_id:032x}-{sent.context.span_id:016x}"


def test_no_tracer_while_opentelemetry_is_not_imported(
    monkeypatch: pytest.MonkeyPatch, exporter: InMemorySpanExporter
) -> None:
    """Not imported by the application and not named in the environment: no provider can be configured, and
    nothing is imported to find out; named in OTEL_PYTHON_TRACER_PROVIDER, it is found."""
    from mcp_sync.runtime import telemetry

    monkeypatch.delitem(sys.modules, "opentelemetry.trace")
    monkeypatch.setattr(tracing, "_api", None)
    monkeypatch.setattr(telemetry, "_NAMED", {})
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    assert tracing.active_tracer() is None
    assert "opentelemetry.trace" not in sys.modules

    monkeypatch.setattr(telemetry, "_NAMED", {})
    monkeypatch.setenv("OTEL_PYTHON_TRACER_PROVIDER", "sdk_tracer_provider")
    assert tracing.active_tracer() is not None  # (the fixture's provider stands for the one the API installs)
