"""The way back of a 2026-07-28 POST (RequestWriter) and the host that serves such POSTs, in units.

Over HTTP the same is tested end to end in test_http_stateless.py and test_http_lending.py.
"""

from __future__ import annotations

import pytest

from mcp_sync import MCPServer, StreamableHTTPApp
from mcp_sync.protocol.errors import MCPTransportError
from mcp_sync.protocol.jsonrpc import error_response
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.runtime.workers import ElasticPool
from mcp_sync.server.http.answers import Answer
from mcp_sync.server.http.lending import Lender
from mcp_sync.server.http.sessions import Signal, StreamEvent
from mcp_sync.server.http.stateless_host import RequestWriter, StatelessHost
from mcp_sync.server.stateless import StatelessRequest
from mcp_sync.types import JSONRPCNotification, JSONRPCRequest

PROGRESS = JSONRPCNotification(method="notifications/progress", params={"progressToken": 1, "progress": 1})
META = {PROTOCOL_VERSION: "2026-07-28", CLIENT_INFO: {"name": "unit", "version": "1"}, CLIENT_CAPABILITIES: {}}


def drained(writer: RequestWriter) -> list[object]:
    items: list[object] = []
    while not writer.post.queue.empty():
        items.append(writer.post.queue.get_nowait())
    return items


def test_what_comes_first_decides_between_json_and_a_stream() -> None:
    quick = RequestWriter(1, json_only=False)
    quick(error_response(1, -32601, "Method not found"))
    quick(PROGRESS)  # after the response: nothing more goes out
    quick.start_streaming(quick.post)  # (the ping interval passed meanwhile: too late, the answer is JSON)
    assert quick.post.mode == "json" and len(drained(quick)) == 1
    chatty = RequestWriter(2, json_only=False)
    chatty(PROGRESS)
    chatty(error_response(2, -32603, "failed"))
    items = drained(chatty)
    assert chatty.post.mode == "sse" and [type(item) for item in items[:2]] == [StreamEvent, StreamEvent]
    assert items[2] is Signal.END


def test_a_json_only_answer_carries_the_response_alone() -> None:
    writer = RequestWriter(3, json_only=True)
    writer(PROGRESS)  # dropped: nowhere to carry it
    with pytest.raises(MCPTransportError, match="cannot carry a request"):
        writer(JSONRPCRequest(id="s-1", method="roots/list"))
    assert drained(writer) == []


def test_a_cancel_ends_the_post_once_and_tells_the_handler_only_while_it_runs() -> None:
    running = RequestWriter(4, json_only=False)
    running.cancel()
    running.cancel()
    assert running.cancelled.is_set() and drained(running) == [Signal.END]
    answered = RequestWriter(5, json_only=False)
    answered(error_response(5, -32601, "Method not found"))
    answered.cancel()  # the answer went out: nothing to tell
    answered.end()
    assert not answered.cancelled.is_set() and len(drained(answered)) == 1
    closing = RequestWriter(6, json_only=False)
    closing.end()
    assert drained(closing) == [Signal.CLOSED]


def test_a_closed_host_serves_nothing_and_a_failing_kernel_ends_the_post() -> None:
    server = MCPServer("unit")
    pool = ElasticPool("unit-handler")
    host = StatelessHost(
        server,
        list_all=False,
        handlers=pool,
        lender=Lender(pool, ping_interval=5, retry_ms=0, cors=None),
        ping_interval=5,
    )
    request = JSONRPCRequest(id=1, method="tools/list", params={"_meta": META})
    read = StatelessRequest.read(request.params or {})
    try:
        answered = host.post(request, read, Answer(True, True, False, stateless=True))
        assert answered.status == 200 and host.session is not None and host.session.per_request
        # What the host session would send for no request in particular has nowhere to go: it is dropped.
        host.session.dispatcher.notify("notifications/message", {"level": "info", "data": "to nobody"})
        # A kernel that fails (it never should: handlers' errors are answers) still ends the POST.
        broken = host.session
        broken.serve_one = lambda *args, **kwargs: (_ for _ in ()).throw(RuntimeError("broken"))  # type: ignore[method-assign]
        failed = host.post(request, read, Answer(True, True, False, stateless=True))
        assert failed.message is not None and "session ended" in str(failed.message)
    finally:
        host.close(5.0)
    refused = host.post(request, read, Answer(True, True, False, stateless=True))
    assert refused.status == 503
    pool.close(5.0)
    server.stop()


def test_a_stateless_mode_request_arriving_as_the_app_closes_is_refused() -> None:
    """Stateless mode (handshake revisions, no sessions): a request that passed the app's check as it closed
    gets 503 rather than a session made after the close."""
    server = MCPServer("unit")
    app = StreamableHTTPApp(server, stateless=True)
    app.close()
    request = JSONRPCRequest(id=1, method="tools/list")
    refused = app._serve_alone(request, Answer(True, True, False), "2025-11-25")
    assert refused.status == 503 and server.sessions == []
    server.stop()
