"""JSON-RPC batches, served where MCP 2025-03-26 makes them legal, and refused everywhere else.

2025-03-26 added batches (implementations MUST support receiving them;
``initialize`` MUST NOT be part of one) and 2025-06-18 removed them. Over
stdio, a real server subprocess gets batch lines after a handshake at
2025-03-26: each element is served as if sent alone, and the answers to its
requests come back as one line holding a JSON array. Over Streamable HTTP
(an embedded server on loopback) a POSTed array is answered as a JSON array
or as an SSE stream of the responses. A session at 2025-11-25 still gets the
single ``-32600`` any array got before.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import end_raw_peer
from redisserver import running_redis
from test_http_server import Stream
from test_scale_out_sessions import Pair

from mcp_sync import MCPServer
from mcp_sync.protocol.errors import MCP_CODES, MCPTransportError
from mcp_sync.protocol.types import JSONRPCNotification
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.server import start_http
from mcp_sync.server.backend import BackendUnavailable
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.transports.stdio import StdioTransport

TIMEOUT = 10.0
BATCH_REVISION = "2025-03-26"

SERVER_SCRIPT = """
import threading
from mcp_sync import MCPServer
from mcp_sync.server.stdio import serve_stdio

server = MCPServer("batches")
server.register_tool("echo", lambda args, ctx: "echo:" + str(args.get("text")))


def slow(args, ctx):
    # Held until cancelled (or 5 s pass, which no test lets happen).
    return "cancelled" if ctx.cancelled.wait(5.0) else "slow done"


def chatty(args, ctx):
    ctx.log("info", "working on it")
    return "chatty done"


def roots(args, ctx):
    return "roots:" + ",".join(root.uri for root in ctx.session.list_roots(timeout=5.0).roots)


server.register_tool("slow", slow)
server.register_tool("chatty", chatty)
server.register_tool("roots", roots)
serve_stdio(server)
"""


class RawPeer:
    """A client written by hand: it writes lines to the server process and reads what comes back."""

    def __init__(self, script: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), *sys.path])}
        self.process = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="test-batch-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def write(self, message: Any) -> None:
        self.write_text(json.dumps(message))

    def write_text(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def read(self) -> Any:
        """The next line the server writes, as JSON (fails after ``TIMEOUT`` without one)."""
        return self.lines.get(timeout=TIMEOUT)

    def initialize(self, revision: str, capabilities: dict[str, Any] | None = None) -> None:
        params = {
            "protocolVersion": revision,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        self.write({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert self.read()["result"]["protocolVersion"] == revision
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        end_raw_peer(self.process, self._reader, TIMEOUT)


def call(request_id: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def text_of(response: dict[str, Any]) -> str:
    text: str = response["result"]["content"][0]["text"]
    return text


def by_id(answers: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {answer["id"]: answer for answer in answers}


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    script = tmp_path / "batch_server.py"
    script.write_text(SERVER_SCRIPT)
    return script


@pytest.fixture
def peer(server_script: Path) -> Iterator[RawPeer]:
    peer = RawPeer(server_script)
    try:
        yield peer
    finally:
        peer.close()


# ------------------------------------------------------------------ stdio


def test_stdio_batch_answers_its_requests_as_one_array(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION)
    peer.write(
        [
            call(1, "echo", text="a"),
            {"jsonrpc": "2.0", "id": "two", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            call(3, "echo", text="c"),
        ]
    )
    answer = peer.read()
    assert isinstance(answer, list) and len(answer) == 3
    answers = by_id(answer)
    assert text_of(answers[1]) == "echo:a"
    assert answers["two"] == {"jsonrpc": "2.0", "id": "two", "result": {}}
    assert text_of(answers[3]) == "echo:c"
    # The connection goes on as usual afterwards.
    peer.write({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    assert peer.read() == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_stdio_batch_requests_run_concurrently(peer: RawPeer) -> None:
    # "slow" is held until cancelled: the echo after it in the same batch is served meanwhile,
    # and the array comes once the cancelled slow call counts as done (without a response).
    peer.initialize(BATCH_REVISION)
    peer.write([call(1, "slow"), call(2, "chatty")])
    log = peer.read()  # the notification chatty sends goes out alone, before the array
    assert log["method"] == "notifications/message" and log["params"]["data"] == "working on it"
    peer.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    answer = peer.read()
    assert isinstance(answer, list) and len(answer) == 1
    assert answer[0]["id"] == 2 and text_of(answer[0]) == "chatty done"


def test_stdio_batch_whose_requests_were_all_cancelled_gets_no_answer(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION)
    peer.write([call(1, "slow")])
    peer.write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    peer.write({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert peer.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    peer.write({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_stdio_batch_invalid_elements_and_initialize_get_their_own_errors(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION)
    init = {"protocolVersion": BATCH_REVISION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    peer.write(
        [
            1,
            {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": init},
            {"jsonrpc": "1.0", "id": 8, "method": "ping"},
            [],
            {"jsonrpc": "2.0", "method": 5},  # a broken notification: never answered
            {"jsonrpc": "2.0", "id": 9, "method": "ping"},
        ]
    )
    answer = peer.read()
    assert isinstance(answer, list) and len(answer) == 5
    errors = [a for a in answer if "error" in a]
    assert [a["error"]["code"] for a in errors] == [-32600] * 4
    assert sorted(str(a["id"]) for a in errors) == ["7", "8", "None", "None"]
    assert "initialize cannot be in a batch" in by_id(errors)[7]["error"]["message"]
    assert by_id(answer)[9] == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_stdio_empty_array_and_array_of_numbers_follow_json_rpc(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION)
    peer.write([])
    empty = peer.read()
    assert empty["id"] is None and empty["error"]["code"] == -32600  # one error, not an array
    peer.write_text("[1,2,3]")
    three = peer.read()
    assert isinstance(three, list) and len(three) == 3
    assert all(a["id"] is None and a["error"]["code"] == -32600 for a in three)


def test_stdio_batch_of_notifications_only_gets_no_answer(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION)
    peer.write(
        [
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        ]
    )
    peer.write({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert peer.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_stdio_responses_in_a_batch_are_delivered(peer: RawPeer) -> None:
    peer.initialize(BATCH_REVISION, {"roots": {}})
    peer.write(call(1, "roots"))
    question = peer.read()
    assert question["method"] == "roots/list"
    # The client answers the server's question inside a batch (with a request beside it).
    roots = {"roots": [{"uri": "file:///work"}]}
    peer.write(
        [{"jsonrpc": "2.0", "id": question["id"], "result": roots}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    )
    first, second = peer.read(), peer.read()
    answers = {json.dumps(first): first, json.dumps(second): second}
    assert [{"jsonrpc": "2.0", "id": 2, "result": {}}] in answers.values()
    single = next(a for a in answers.values() if isinstance(a, dict))
    assert single["id"] == 1 and text_of(single) == "roots:file:///work"


@pytest.mark.parametrize("revision", ["2025-11-25", "2025-06-18", "2024-11-05"])
def test_stdio_batch_at_other_revisions_gets_one_error(peer: RawPeer, revision: str) -> None:
    peer.initialize(revision)
    peer.write([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    answer = peer.read()
    assert answer == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request: expected a JSON object, got a batch"},
    }


def test_stdio_batch_before_initialize_gets_one_error(peer: RawPeer) -> None:
    init = {"protocolVersion": BATCH_REVISION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    peer.write([{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}])
    answer = peer.read()
    assert answer["id"] is None and answer["error"]["code"] == -32600


# ------------------------------------------------- the dispatcher, in process


class PipeServer:
    """A server dispatcher on a :class:`StdioTransport` over two real OS pipes, serving batches."""

    def __init__(self) -> None:
        read_in, self._write_in = os.pipe()
        self._read_out, write_out = os.pipe()
        self.transport = StdioTransport(os.fdopen(read_in, "rb", buffering=0), os.fdopen(write_out, "wb", buffering=0))
        self.dispatcher = JsonRpcDispatcher(self.transport, side="server")
        self.dispatcher.accept_batch = lambda: True
        self._pending = b""

    def write(self, message: Any) -> None:
        os.write(self._write_in, json.dumps(message).encode() + b"\n")

    def read(self) -> Any:
        """The next line written, as JSON; ``None`` at the end of the output."""
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._read_out], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "no output in time"
            chunk = os.read(self._read_out, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line)

    def close(self) -> None:
        self.dispatcher.close(TIMEOUT)
        os.close(self._write_in)
        os.close(self._read_out)


@pytest.fixture
def pipe_server() -> Iterator[PipeServer]:
    server = PipeServer()
    try:
        yield server
    finally:
        server.close()


def test_batch_response_that_cannot_be_sent_becomes_an_internal_error(pipe_server: PipeServer) -> None:
    # One result that is not JSON must not lose the answers of the batch's other requests.
    pipe_server.dispatcher.register_handler("weird", lambda params, ctx: {"value": object()})
    pipe_server.dispatcher.register_handler("fine", lambda params, ctx: {"ok": True})
    pipe_server.dispatcher.start()
    pipe_server.write([{"jsonrpc": "2.0", "id": 1, "method": "weird"}, {"jsonrpc": "2.0", "id": 2, "method": "fine"}])
    answers = by_id(pipe_server.read())
    assert answers[1]["error"]["code"] == -32603 and "serialize" in answers[1]["error"]["message"]
    assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {"ok": True}}


def test_batch_answer_is_dropped_once_the_connection_closed(pipe_server: PipeServer) -> None:
    def close_connection(params: Any, ctx: RequestContext) -> dict[str, Any]:
        pipe_server.transport.close()
        return {}

    pipe_server.dispatcher.register_handler("close", close_connection)
    pipe_server.dispatcher.start()
    pipe_server.write([{"jsonrpc": "2.0", "id": 1, "method": "close"}])
    assert pipe_server.read() is None  # the output ended with no answer, and nothing was raised
    assert pipe_server.dispatcher.closed


def test_transport_without_array_framing_sends_a_batch_answer_message_by_message() -> None:
    left, right = InMemoryTransport.pair()
    got: queue.Queue[Any] = queue.Queue()
    right.on_message(got.put)
    left.send_batch([JSONRPCNotification(method="notifications/a"), JSONRPCNotification(method="notifications/b")])
    assert [got.get(timeout=TIMEOUT).method for _ in range(2)] == ["notifications/a", "notifications/b"]
    left.close()
    with pytest.raises(MCPTransportError) as raised:
        left.send_batch([JSONRPCNotification(method="notifications/c")])
    assert raised.value.code == MCP_CODES.TRANSPORT_CLOSED
    right.close()


# ------------------------------------------------------------------ Streamable HTTP


BOTH = "application/json, text/event-stream"


class HTTPServed:
    """An embedded HTTP server on loopback, and what its slow tool tells the test."""

    def __init__(self, **options: Any) -> None:
        self.slow_started = threading.Event()
        server = MCPServer("batches")
        server.register_tool("echo", lambda args, ctx: "echo:" + str(args.get("text")))
        server.register_tool("slow", self._slow)
        server.register_tool("reset", lambda args, ctx: "reset", scopes=["admin"])
        self.running = start_http(server, **options)
        self.url = self.running.url

    def _slow(self, args: dict[str, Any], ctx: Any) -> str:
        self.slow_started.set()
        return "cancelled" if ctx.cancelled.wait(5.0) else "slow done"

    def open_session(self, revision: str, **headers: str) -> str:
        params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        response = requests.post(self.url, json=body, headers={"Accept": BOTH, **headers}, timeout=TIMEOUT)
        assert response.status_code == 200, response.text
        session_id = response.headers["Mcp-Session-Id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        sent = requests.post(self.url, json=initialized, headers=self.headers(session_id, **headers), timeout=TIMEOUT)
        assert sent.status_code == 202
        return session_id

    def headers(self, session_id: str | None, accept: str = BOTH, **extra: str) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json", **extra}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        return headers

    def post(self, body: Any, session_id: str | None, accept: str = BOTH, **extra: str) -> requests.Response:
        data = body if isinstance(body, str) else json.dumps(body)
        return requests.post(self.url, data=data, headers=self.headers(session_id, accept, **extra), timeout=TIMEOUT)


@pytest.fixture
def http_json() -> Iterator[HTTPServed]:
    served = HTTPServed(json_response=True)
    try:
        yield served
    finally:
        served.running.close()


@pytest.fixture
def http_sse() -> Iterator[HTTPServed]:
    served = HTTPServed()
    try:
        yield served
    finally:
        served.running.close()


def sse_messages(response: requests.Response) -> list[Any]:
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_http_batch_is_answered_as_a_json_array_in_json_response_mode(http_json: HTTPServed) -> None:
    session = http_json.open_session(BATCH_REVISION)
    init = {"protocolVersion": BATCH_REVISION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    batch = [
        call(1, "echo", text="a"),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init},
        3,
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
    ]
    response = http_json.post(batch, session)  # no MCP-Protocol-Version: the session's revision decides
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    assert response.headers["Mcp-Session-Id"] == session
    answers = response.json()
    assert isinstance(answers, list) and len(answers) == 4
    assert text_of(by_id(answers)[1]) == "echo:a"
    assert by_id(answers)["p"] == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert by_id(answers)[2]["error"]["code"] == -32600
    assert by_id(answers)[None]["error"]["code"] == -32600
    # The named revision serves it too.
    again = http_json.post([call(5, "echo", text="b")], session, **{"MCP-Protocol-Version": BATCH_REVISION})
    assert [text_of(a) for a in again.json()] == ["echo:b"]


def test_http_batch_is_streamed_as_sse_events_that_end_after_the_last(http_sse: HTTPServed) -> None:
    session = http_sse.open_session(BATCH_REVISION)
    response = http_sse.post([call(1, "echo", text="a"), call(2, "echo", text="b"), [], "x"], session)
    assert response.status_code == 200
    messages = sse_messages(response)  # the whole body: the stream ended after the last response
    assert len(messages) == 4
    assert sorted(text_of(m) for m in messages if "result" in m) == ["echo:a", "echo:b"]
    assert [m["error"]["code"] for m in messages if "error" in m] == [-32600, -32600]


def test_http_batch_accepting_only_json_gets_a_json_array(http_sse: HTTPServed) -> None:
    session = http_sse.open_session(BATCH_REVISION)
    response = http_sse.post([call(1, "echo", text="a")], session, accept="application/json")
    assert [text_of(a) for a in response.json()] == ["echo:a"]


def test_http_batch_of_notifications_and_responses_gets_202(http_sse: HTTPServed) -> None:
    session = http_sse.open_session(BATCH_REVISION)
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 77, "result": {}},  # answers nothing the server asked: dropped
        {"jsonrpc": "2.0", "method": 5},
    ]
    response = http_sse.post(batch, session)
    assert response.status_code == 202 and response.content == b""


def test_http_batch_whose_requests_were_all_cancelled_gets_202(http_json: HTTPServed) -> None:
    session = http_json.open_session(BATCH_REVISION)
    answered: queue.Queue[requests.Response] = queue.Queue()
    poster = threading.Thread(
        target=lambda: answered.put(http_json.post([call(1, "slow")], session)), name="test-batch-post"
    )
    poster.start()
    try:
        assert http_json.slow_started.wait(TIMEOUT)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        assert http_json.post(cancel, session).status_code == 202
        response = answered.get(timeout=TIMEOUT)
    finally:
        poster.join(TIMEOUT)
    assert response.status_code == 202 and response.content == b""


def test_http_batch_whose_session_ends_gets_the_error_saying_so(http_json: HTTPServed) -> None:
    session = http_json.open_session(BATCH_REVISION)
    answered: queue.Queue[requests.Response] = queue.Queue()
    batch = [call(1, "slow"), 2]  # (an echo beside it might still run when the session ends)
    poster = threading.Thread(target=lambda: answered.put(http_json.post(batch, session)), name="test-batch-post")
    poster.start()
    try:
        assert http_json.slow_started.wait(TIMEOUT)
        ended = requests.delete(http_json.url, headers=http_json.headers(session), timeout=TIMEOUT)
        assert ended.status_code == 204
        response = answered.get(timeout=TIMEOUT)
    finally:
        poster.join(TIMEOUT)
    answers = by_id(response.json())
    assert answers[None]["error"]["code"] == -32600
    assert answers[1]["error"] == {"code": -32603, "message": "The session ended before the request was answered"}


def test_http_batch_without_a_session_is_refused_clearly(http_sse: HTTPServed) -> None:
    init = {"protocolVersion": BATCH_REVISION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    response = http_sse.post([{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}], None)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600 and "initialize alone, not in a batch" in error["message"]
    # And with a session id that names no session: 404, as for any message.
    missing = http_sse.post([call(1, "echo", text="a")], "no-such-session")
    assert missing.status_code == 404


def test_http_batch_the_client_cannot_accept_gets_406(http_json: HTTPServed) -> None:
    session = http_json.open_session(BATCH_REVISION)
    response = http_json.post([call(1, "echo", text="a")], session, accept="text/event-stream")
    assert response.status_code == 406


@pytest.mark.parametrize(
    ("negotiated", "header"),
    [("2025-11-25", None), ("2025-11-25", "2025-11-25"), (BATCH_REVISION, "2025-11-25"), ("2025-06-18", None)],
)
def test_http_batch_at_other_revisions_gets_one_error(
    http_sse: HTTPServed, negotiated: str, header: str | None
) -> None:
    extra = {} if header is None else {"MCP-Protocol-Version": header}
    session = http_sse.open_session(negotiated, **extra)
    response = http_sse.post([call(1, "echo", text="a")], session, **extra)
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request: expected a JSON object, got a batch"},
    }


def verify(token: str) -> dict[str, Any]:
    """``subject:scope,scope`` tokens."""
    subject, _, scopes = token.partition(":")
    return {"sub": subject, "client_id": "cli", "scope": scopes.replace(",", " "), "exp": time.time() + 3600}


def test_http_batch_with_a_request_the_token_may_not_make_is_refused_whole() -> None:
    served = HTTPServed(token_verifier=verify)
    try:
        auth = {"Authorization": "Bearer alice:read"}
        session = served.open_session(BATCH_REVISION, **auth)
        response = served.post([call(1, "echo", text="a"), call(2, "reset")], session, **auth)
        assert response.status_code == 403
        assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
        allowed = served.post([call(1, "echo", text="a")], session, accept="application/json", **auth)
        assert [text_of(a) for a in allowed.json()] == ["echo:a"]
    finally:
        served.running.close()


# ------------------------------------------------------------ sessions shared by processes (real Redis)


@pytest.fixture
def shared_pair(tmp_path: Path) -> Iterator[Pair]:
    with running_redis(tmp_path / "redis.log") as redis_server:
        made = Pair(redis_server.url)
        try:
            yield made
        finally:
            made.close()


def test_http_batch_passes_an_answer_for_another_process_on(shared_pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tool on app "a" asks the client; the client answers inside a batch POSTed to app "b".
    a, b = shared_pair.urls
    params = {
        "protocolVersion": BATCH_REVISION,
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = requests.post(
        a,
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        headers={"Accept": BOTH},
        timeout=TIMEOUT,
    )
    session = opened.headers["Mcp-Session-Id"]
    headers = {"Accept": BOTH, "Content-Type": "application/json", "Mcp-Session-Id": session}
    with requests.post(a, json=call(1, "ask", question="hi?"), headers=headers, stream=True, timeout=TIMEOUT) as asked:
        events = (json.loads(line[len(b"data: ") :]) for line in asked.iter_lines() if line.startswith(b"data: "))
        question = next(events)
        assert question["method"] == "sampling/createMessage"
        sampled = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
        batch = [
            {"jsonrpc": "2.0", "id": question["id"], "result": sampled},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
        answered = requests.post(b, json=batch, headers={**headers, "Accept": "application/json"}, timeout=TIMEOUT)
        assert answered.status_code == 200 and answered.json() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
        assert text_of(next(events)) == "a: hello"
    assert "a" in shared_pair.delivered

    def down(*args: Any) -> None:
        raise BackendUnavailable("down")

    for app in shared_pair.apps:
        monkeypatch.setattr(app.backend, "send_to_session", down)
    unserved = [{"jsonrpc": "2.0", "id": "nobody-1", "result": {}}, {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
    refused = requests.post(b, json=unserved, headers=headers, timeout=TIMEOUT)
    assert refused.status_code == 503 and "backend is unavailable" in refused.json()["error"]["message"]


# ------------------------------------------------------------ the 2024-11-05 HTTP+SSE transport


class LegacyConnection:
    """A connection of the 2024-11-05 transport: its SSE stream, and where its messages are POSTed."""

    def __init__(self, url: str, revision: str, **headers: str) -> None:
        base = url.removesuffix("/mcp")
        self.headers = {"Content-Type": "application/json", **headers}
        self.stream = Stream(base + "/sse", Accept="text/event-stream", **headers)
        endpoint = self.stream.block()
        assert endpoint["event"] == "endpoint"
        self.url = base + endpoint["data"]
        params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).status_code == 202
        assert self.stream.message()[1]["result"]["protocolVersion"] == revision
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202

    def post(self, body: Any) -> requests.Response:
        return requests.post(self.url, data=json.dumps(body), headers=self.headers, timeout=TIMEOUT)

    def close(self) -> None:
        self.stream.connection.close()


def test_legacy_transport_batch_is_served_at_2025_03_26_each_answer_an_event() -> None:
    served = HTTPServed(legacy_sse=True)
    try:
        connection = LegacyConnection(served.url, BATCH_REVISION)
        accepted = connection.post([call(1, "echo", text="a"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}, 5])
        assert (accepted.status_code, accepted.content) == (202, b"")
        answers = by_id([connection.stream.message()[1] for _ in range(3)])
        assert text_of(answers[1]) == "echo:a"
        assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert answers[None]["error"]["code"] == -32600
        assert connection.post([]).status_code == 400  # [] is one invalid request, not a batch
        connection.close()
        older = LegacyConnection(served.url, "2024-11-05")
        refused = older.post([call(1, "echo", text="a")])
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32600)
        older.close()
        nowhere = requests.post(
            connection.url.split("?")[0] + "?session_id=nope", json=[call(1, "echo")], timeout=TIMEOUT
        )
        assert nowhere.status_code == 404
    finally:
        served.running.close()


def test_legacy_transport_batch_with_a_request_the_token_may_not_make_is_refused_whole() -> None:
    served = HTTPServed(token_verifier=verify, legacy_sse=True)
    try:
        connection = LegacyConnection(served.url, BATCH_REVISION, Authorization="Bearer alice:read")
        refused = connection.post([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, call(2, "reset")])
        assert refused.status_code == 403
        assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
        assert connection.post([call(3, "echo", text="a")]).status_code == 202
        assert text_of(connection.stream.message()[1]) == "echo:a"
        connection.close()
    finally:
        served.running.close()


# ------------------------------------------------------------ without sessions (stateless mode)


def test_stateless_mode_serves_a_batch_at_2025_03_26_with_a_session_of_its_own() -> None:
    served = HTTPServed(stateless=True)
    try:
        batch = [call(1, "echo", text="a"), {"jsonrpc": "2.0", "id": 2, "method": "ping"}, 5]
        as_json = served.post(batch, None, accept="application/json")  # no header: 2025-03-26, the default
        assert as_json.status_code == 200 and "Mcp-Session-Id" not in as_json.headers
        answers = by_id(as_json.json())
        assert (
            text_of(answers[1]) == "echo:a" and answers[2]["result"] == {} and answers[None]["error"]["code"] == -32600
        )
        streamed = served.post(batch, None, **{"MCP-Protocol-Version": BATCH_REVISION})
        assert len(sse_messages(streamed)) == 3
        refused = served.post(batch, None, **{"MCP-Protocol-Version": "2025-11-25"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32600)
    finally:
        served.running.close()


def test_stateless_mode_batch_refused_for_its_scopes_or_while_the_app_closes() -> None:
    holder: list[HTTPServed] = []

    def verify_or_close(token: str) -> dict[str, Any]:
        if token == "closing":  # the app starts closing while this request is being authenticated
            holder[0].running.app.close()
        return verify(token)

    served = HTTPServed(stateless=True, token_verifier=verify_or_close)
    holder.append(served)
    try:
        batch = [call(1, "echo", text="a"), call(2, "reset")]
        refused = served.post(batch, None, accept="application/json", Authorization="Bearer alice:read")
        assert refused.status_code == 403
        closing = served.post(
            [call(1, "echo", text="a")], None, accept="application/json", Authorization="Bearer closing"
        )
        assert closing.status_code == 503 and closing.json()["error"]["message"] == "The server is shutting down"
    finally:
        served.running.close()
