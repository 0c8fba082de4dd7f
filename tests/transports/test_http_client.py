"""The HTTP client transports, over real sockets on 127.0.0.1.

- Against the official Python SDK's servers (``mcp`` 2.3.0 in its own
  virtualenv, ``tests/servers/sdk_http_server.py``): Streamable HTTP in SSE
  and JSON-response modes, a resumable one that hangs up mid-call, the
  legacy HTTP+SSE transport, a server restarted under a connected client
  (its session is gone) and one killed mid-call.
- Against :class:`Mini`, a small ``http.server`` of our own, for what the SDK
  cannot be made to do: streams that break and must be resumed after the
  ``retry`` delay, requests on the GET stream, 404 for a session, bodies that
  are not JSON, HTTP errors with and without a JSON-RPC error, and every
  misbehaviour of a legacy server.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import peers
import pytest
import requests
import requests.auth
from helpers import current_frames, free_port

import mcp_sync.transports.http.streamable as http_module
import mcp_sync.transports.http.turns as turns
from mcp_sync import MCP_CODES, MCPClient, MCPError, MCPServer, MCPTransportError
from mcp_sync.client import http_client
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.http import new_session
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.context import Context
from mcp_sync.transports.http._common import EventSource, default_sse_client
from mcp_sync.transports.http.cursor import StreamCursor
from mcp_sync.transports.http.sse import SSEClientTransport
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    JSONRPCNotification,
    JSONRPCRequest,
    ProgressNotificationParams,
    Root,
    TextContent,
)

pytestmark = pytest.mark.timeout(120)  # the first run installs the SDK

HERE = Path(__file__).parent.parent
SDK_SERVER = HERE / "servers" / "sdk_http_server.py"
SLOW_SERVER = HERE / "servers" / "slow_calls.py"
CALL_TIMEOUT = 10.0
START_TIMEOUT = 30.0
INIT_RESULT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "serverInfo": {"name": "mini", "version": "1.0"},
}


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def a_thread_waits_in(innermost: str, *path: str) -> bool:
    """Whether some thread waits in ``innermost`` (the file of its innermost Python frame, e.g.
    ``threading.py`` for an Event, or file and function, ``socket.py:readinto`` for a read) with
    ``path`` as the transport's frames nearest to it, innermost first.

    A thread's stack is where a test can see that it reached the wait it aims at, not merely
    that some time passed.
    """
    transport_file = http_module.__file__
    filename, _, function = innermost.partition(":")
    for frame in current_frames().values():
        if not frame.f_code.co_filename.endswith(filename) or function not in ("", frame.f_code.co_name):
            continue
        ours: list[str] = []
        walk: Any = frame
        while walk is not None:
            if walk.f_code.co_filename == transport_file:
                ours.append(walk.f_code.co_name)
            walk = walk.f_back
        if tuple(ours[: len(path)]) == path:
            return True
    return False


class RecordingSession(requests.Session):
    """A ``requests`` session that notes every request it makes: method, headers, thread, time."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[tuple[str, dict[str, str], str, float]] = []

    def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        headers = {str(k).lower(): str(v) for k, v in (kwargs.get("headers") or {}).items()}
        self.made.append((str(method), headers, threading.current_thread().name, time.monotonic()))
        return super().request(method, url, *args, **kwargs)


def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="blue"), model="test-model")


def elicitor(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"colour": "green"})


# ---------------------------------------------------------------- the SDK's servers


class SdkServer:
    """``sdk_http_server.py`` in a subprocess, on the peer virtualenv's python."""

    def __init__(self, python: str, tmp: Path, mode: str, *, resumable: bool = False, port: int = 0) -> None:
        self.python, self.tmp, self.mode, self.resumable, self.port = python, tmp, mode, resumable, port
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/" + ("sse" if self.mode == "legacy" else "mcp")

    def start(self) -> None:
        out = self.tmp / f"sdk-{self.mode}-{time.monotonic_ns()}.out"
        argv = [self.python, str(SDK_SERVER), "--port", str(self.port), "--mode", self.mode]
        with open(out, "wb") as sink:
            self.process = subprocess.Popen(
                [*argv, *(["--resumable"] if self.resumable else [])],
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=peers.peer_environment(),
            )
        assert wait_for(lambda: b"PORT " in out.read_bytes() or self.process.poll() is not None, START_TIMEOUT)
        text = out.read_text()
        assert "PORT " in text, f"the SDK server did not start:\n{text}"
        self.port = int(text.split("PORT ")[1].split()[0])

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None


@pytest.fixture(scope="module")
def peer_python() -> str:
    return peers.peer_python()


@contextlib.contextmanager
def sdk_server(python: str, tmp: Path, mode: str, **options: Any) -> Iterator[SdkServer]:
    server = SdkServer(python, tmp, mode, **options)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module", params=["sse", "json"])
def streamable(
    request: pytest.FixtureRequest, peer_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SdkServer]:
    with sdk_server(peer_python, tmp_path_factory.mktemp("sdk"), request.param) as server:
        yield server


@pytest.fixture(scope="module")
def resumable(peer_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    with sdk_server(peer_python, tmp_path_factory.mktemp("sdk"), "sse", resumable=True) as server:
        yield server


@pytest.fixture(scope="module")
def legacy(peer_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    with sdk_server(peer_python, tmp_path_factory.mktemp("sdk"), "legacy") as server:
        yield server


def connect_to(url: str, **options: Any) -> MCPClient:
    options.setdefault("timeout", CALL_TIMEOUT)
    options.setdefault("era", "handshake")
    options.setdefault("sampling_provider", sampler)
    options.setdefault("elicitation_provider", elicitor)
    return http_client(url, **options)


@pytest.mark.interop
def test_the_sdk_server_in_both_modes(streamable: SdkServer) -> None:
    with connect_to(streamable.url, transport="streamable") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "sdk-http"
        names = [tool.name for tool in client.list_tools().tools]
        assert {"echo", "add", "count", "sample", "ask", "ask_aside"} <= set(names)
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"  # type: ignore[union-attr]
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5.0}
        text = client.read_resource("sdk://greeting").contents[0]
        assert text.text == "Hello from the SDK"  # type: ignore[union-attr]
        prompt = client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Please greet Ada."  # type: ignore[union-attr]
        # An elicitation unrelated to any call travels on the standalone GET stream.
        aside = client.call_tool("ask_aside", {"question": "Favourite colour?"})
        assert aside.content[0].text == "accept: {'colour': 'green'}"  # type: ignore[union-attr]


@pytest.mark.interop
def test_many_threads_share_one_connection(streamable: SdkServer) -> None:
    with connect_to(streamable.url) as client:
        results: dict[int, str] = {}

        def call(n: int) -> None:
            results[n] = client.call_tool("echo", {"text": str(n)}).content[0].text  # type: ignore[union-attr]

        threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(CALL_TIMEOUT)
        assert results == {n: str(n) for n in range(8)}


@pytest.mark.interop
def test_progress_sampling_and_elicitation_over_the_sdks_sse_streams(resumable: SdkServer) -> None:
    seen: list[ProgressNotificationParams] = []
    with connect_to(resumable.url) as client:
        assert client.call_tool("count", {"steps": 3}, progress=seen.append).content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert [(p.progress, p.total, p.message) for p in seen] == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]
        assert client.call_tool("sample", {"prompt": "colour?"}).content[0].text == "the model said: blue"  # type: ignore[union-attr]
        assert client.call_tool("ask", {"question": "colour?"}).content[0].text == "the user likes green"  # type: ignore[union-attr]


@pytest.mark.interop
def test_a_stream_the_sdk_closes_mid_call_is_resumed_with_last_event_id(resumable: SdkServer) -> None:
    seen: list[ProgressNotificationParams] = []
    session = RecordingSession()
    # Our own delay would be a minute: the call can only succeed by following the server's retry advice (200 ms).
    transport = StreamableHTTPClientTransport(resumable.url, session=session, reconnect_delay=60.0)
    with MCPClient(era="handshake", timeout=CALL_TIMEOUT) as client:
        client.connect(transport)
        result = client.call_tool("hang_up", {}, progress=seen.append)
        assert result.content[0].text == "answered after the hang-up"  # type: ignore[union-attr]
        assert [p.message for p in seen] == ["after the hang-up"]
    session.close()
    posted = [at for method, headers, _, at in session.made if method == "POST"]
    resumed = [
        (headers, at)
        for method, headers, thread, at in session.made
        if method == "GET" and "last-event-id" in headers and thread == "mcp-sync-http-post"
    ]
    assert len(resumed) == 1  # the call's own worker resumed its stream, once
    headers, at = resumed[0]
    assert headers["last-event-id"] and headers["mcp-session-id"] == transport.session_id
    # The server hangs up 100 ms into the call, and advises a 200 ms wait: the GET cannot come sooner.
    assert at - max(t for t in posted if t < at) >= 0.3


@pytest.mark.interop
def test_the_sdks_legacy_sse_server(legacy: SdkServer) -> None:
    seen: list[ProgressNotificationParams] = []
    transport = SSEClientTransport(legacy.url)
    assert transport.endpoint is not None and transport.endpoint.startswith(legacy.url.replace("/sse", "/messages/"))
    with MCPClient(
        era="handshake", timeout=CALL_TIMEOUT, sampling_provider=sampler, elicitation_provider=elicitor
    ) as client:
        client.connect(transport)
        assert client.call_tool("echo", {"text": "old"}).content[0].text == "old"  # type: ignore[union-attr]
        assert client.call_tool("count", {"steps": 2}, progress=seen.append).content[0].text == "counted to 2"  # type: ignore[union-attr]
        assert client.call_tool("sample", {"prompt": "?"}).content[0].text == "the model said: blue"  # type: ignore[union-attr]
        assert client.call_tool("ask", {"question": "?"}).content[0].text == "the user likes green"  # type: ignore[union-attr]
    assert len(seen) == 2


@pytest.mark.interop
@pytest.mark.parametrize("kind", ["auto", "sse"])
def test_http_client_reaches_the_legacy_server(legacy: SdkServer, kind: str) -> None:
    with connect_to(legacy.url, transport=kind) as client:
        assert client.call_tool("echo", {"text": kind}).content[0].text == kind  # type: ignore[union-attr]


@pytest.mark.interop
def test_a_restarted_server_forgot_the_session_and_the_next_call_starts_a_new_one(
    peer_python: str, tmp_path: Path
) -> None:
    with sdk_server(peer_python, tmp_path, "sse") as server:
        transport = StreamableHTTPClientTransport(server.url, reconnect_delay=0.05)
        with MCPClient(era="handshake", timeout=CALL_TIMEOUT) as client:
            client.connect(transport)
            first = transport.session_id
            assert client.call_tool("echo", {"text": "before"}).content[0].text == "before"  # type: ignore[union-attr]
            server.stop()
            server.start()  # the same port, a new process that never heard of our session
            assert client.call_tool("echo", {"text": "after"}).content[0].text == "after"  # type: ignore[union-attr]
            assert transport.sessions_started == 1
            assert transport.session_id not in (None, first)


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["sse", "json"])
def test_a_server_that_dies_mid_call_fails_the_call_quickly_naming_the_url(
    peer_python: str, tmp_path: Path, mode: str
) -> None:
    with sdk_server(peer_python, tmp_path, mode) as server, connect_to(server.url) as client:
        failure: list[BaseException] = []

        def call() -> None:
            try:
                client.call_tool("sleep", {"seconds": 30})
            except MCPError as exc:
                failure.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        # Mid-call: the call was sent and its answer is being read (its head in JSON mode, the SSE stream otherwise).
        # A read, not any wait in socket.py: a thread still connecting waits there too, and a server killed then
        # cannot be reached, which closes the transport rather than failing the call.
        assert wait_for(
            lambda: (
                a_thread_waits_in("socket.py:readinto", "_post", "_post_noted", "_answer")
                or a_thread_waits_in("socket.py:readinto", "_pump", "_read_once", "_stream_answer")
            )
        )
        killed = time.monotonic()
        server.stop()
        caller.join(CALL_TIMEOUT)
        assert not caller.is_alive()
        assert time.monotonic() - killed < 5.0  # not the 30 s the tool sleeps, nor the call's timeout
        # The call's connection broke: that fails the call alone (another process may serve the next). The next
        # request finds no server: that closes the transport.
        assert failure[0].code == MCP_CODES.INTERNAL_ERROR
        assert server.url in str(failure[0]) and "broke" in str(failure[0])
        with pytest.raises(MCPTransportError) as gone:
            client.call_tool("echo", {"text": "anyone?"})
        assert gone.value.code == MCP_CODES.TRANSPORT_CLOSED
        assert f"the MCP server at {server.url} could not be reached" in str(gone.value)


@contextlib.contextmanager
def slow_server() -> Iterator[str]:
    """``tests/servers/slow_calls.py`` served over Streamable HTTP in a subprocess (``mcp_sync run``); its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_sync", "run", str(SLOW_SERVER), "--transport", "http", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    try:
        assert process.stderr is not None
        said = process.stderr.readline()  # bounded: the server says where it serves, or exits (the line is empty)
        assert " on http://" in said, said
        yield said.split(" on ")[1].split()[0]
    finally:
        process.kill()
        process.wait(CALL_TIMEOUT)
        if process.stderr is not None:
            process.stderr.close()


def open_sockets() -> set[str]:
    """The sockets this process holds open (what their descriptors link to in ``/proc/self/fd``)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # (the descriptor of the listing itself is gone already)
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:"):
                found.add(target)
    return found


def test_a_cancelled_call_leaves_no_socket_open_once_the_client_is_closed() -> None:
    """The error that ended the cancelled call's read was kept in a cycle with the frames of its traceback, and
    with them the response, its pool and the pool's connections: their sockets stayed open after close() until
    the garbage collector ran (urllib3 2 closes a pool's connections once the pool is freed)."""
    with slow_server() as url:
        gc.collect()
        gc.disable()  # what a cycle holds stays held: only reference counts free anything
        try:
            before = open_sockets()
            client = http_client(url, era="handshake", timeout=CALL_TIMEOUT)
            started = threading.Event()
            with pytest.raises(MCPError) as cancelled:
                client.call_tool("slow", {"seconds": 60}, cancel=started, progress=lambda p: started.set())
            assert cancelled.value.code == MCP_CODES.REQUEST_CANCELLED
            client.close()
            assert open_sockets() - before == set()
        finally:
            gc.enable()


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    started = time.monotonic()
    with pytest.raises(MCPTransportError) as caught:
        http_client(url, connect_timeout=30, era="handshake")
    assert time.monotonic() - started < 5.0  # refused at once, not after the connect timeout
    assert url in str(caught.value)
    assert caught.value.context["url"] == url


# ---------------------------------------------------------------- a server of our own


class Request:
    """One HTTP request that reached :class:`Mini`, with ways to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler
        self.method = handler.command
        self.headers = {name.lower(): value for name, value in handler.headers.items()}
        length = int(self.headers.get("content-length", 0))
        self.body = handler.rfile.read(length) if length else b""
        self.message: Any = json.loads(self.body) if self.body.startswith(b"{") else None
        self.at = time.monotonic()

    @property
    def rpc(self) -> str | None:
        return self.message.get("method") if isinstance(self.message, dict) else None

    def reply(self, status: int, body: bytes = b"", content_type: str | None = None, **headers: str) -> None:
        self.handler.send_response(status)
        if content_type is not None:
            self.handler.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.handler.send_header(name.replace("_", "-"), value)
        self.handler.send_header("Content-Length", str(len(body)))
        self.handler.end_headers()
        self.handler.wfile.write(body)

    def json(self, value: Any, status: int = 200, **headers: str) -> None:
        self.reply(status, json.dumps(value).encode(), "application/json", **headers)

    def result(self, result: dict[str, Any], **headers: str) -> None:
        self.json({"jsonrpc": "2.0", "id": self.message["id"], "result": result}, **headers)

    def open_stream(self, length: int | None = None, **headers: str) -> None:
        """Start an SSE response; without ``length`` it ends when the connection closes."""
        self.handler.send_response(200)
        self.handler.send_header("Content-Type", "text/event-stream")
        for name, value in headers.items():
            self.handler.send_header(name.replace("_", "-"), value)
        if length is not None:
            self.handler.send_header("Content-Length", str(length))
        self.handler.send_header("Connection", "close")
        self.handler.end_headers()
        self.handler.close_connection = True

    def event(
        self, data: Any = "", *, id: str | None = None, retry: int | None = None, event: str | None = None
    ) -> None:
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if id is not None:
            lines.append(f"id: {id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        text = data if isinstance(data, str) else json.dumps(data)
        lines.append(f"data: {text}")
        self.handler.wfile.write(("\n".join(lines) + "\n\n").encode())
        self.handler.wfile.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Mini

    def do_GET(self) -> None:
        self.server.handle(Request(self))

    do_POST = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Mini(ThreadingHTTPServer):
    """A scriptable MCP server: answers initialize with session ``s1``, notifications with 202,
    GET with 405, ``tools/call`` with the text of its ``text`` argument; ``on`` overrides any of
    these by JSON-RPC method (or ``"GET"``/``"DELETE"``)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[Request] = []
        self.on: dict[str, Callable[[Request], None]] = {}
        self.session = "s1"
        self.release = threading.Event()  # held streams end when it is set
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"

    def handle(self, request: Request) -> None:
        self.seen.append(request)
        key = self.key(request)
        if key in self.on:
            self.on[key](request)
        elif request.method == "GET":
            request.reply(405)
        elif request.method == "DELETE":
            request.reply(200)
        elif key == "initialize":
            request.result(INIT_RESULT, Mcp_Session_Id=self.session)
        elif key == "response" or "id" not in request.message:
            request.reply(202)
        elif key == "tools/call":
            text = request.message["params"]["arguments"].get("text", "")
            request.result({"content": [{"type": "text", "text": text}]})
        else:
            request.result({})

    @staticmethod
    def key(request: Request) -> str:
        """What a request is: its JSON-RPC method, "response", "notification" or its HTTP method."""
        message = request.message
        return str(message.get("method", "response")) if isinstance(message, dict) else request.method

    def requests_for(self, key: str) -> list[Request]:
        return [r for r in self.seen if self.key(r) == key]

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        self.thread.join(5)


@pytest.fixture
def mini() -> Iterator[Mini]:
    server = Mini()
    try:
        yield server
    finally:
        server.stop()


def open_client(url: str, **options: Any) -> tuple[MCPClient, StreamableHTTPClientTransport]:
    client_options = {
        key: options.pop(key)
        for key in ("sampling_provider", "elicitation_provider", "roots_provider")
        if key in options
    }
    options.setdefault("reconnect_delay", 0.05)
    transport = StreamableHTTPClientTransport(url, **options)
    client = MCPClient(era="handshake", timeout=CALL_TIMEOUT, **client_options)
    client.connect(transport)
    return client, transport


def echo(client: MCPClient, text: str = "hi", **options: Any) -> str:
    block = client.call_tool("echo", {"text": text}, **options).content[0]
    assert isinstance(block, TextContent)
    return block.text


# ----------------------------------------------------------- headers, sessions, closing


def test_headers_session_and_protocol_version_are_sent_as_the_spec_says(mini: Mini) -> None:
    session = requests.Session()
    session.headers["X-From-Session"] = "yes"
    client, transport = open_client(
        mini.url, session=session, headers={"X-Custom": "1"}, auth=requests.auth.HTTPBasicAuth("ada", "pw")
    )
    with client:
        assert echo(client) == "hi"
        assert transport.session_id == "s1" and transport.protocol_version == "2025-06-18"
    initialize, initialized, call = (
        mini.requests_for("initialize")[0],
        mini.requests_for("notifications/initialized")[0],
        mini.requests_for("tools/call")[0],
    )
    for request in (initialize, initialized, call):
        assert request.headers["accept"] == "application/json, text/event-stream"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["x-custom"] == "1" and request.headers["x-from-session"] == "yes"
        assert request.headers["authorization"].startswith("Basic ")
    assert "mcp-session-id" not in initialize.headers and "mcp-protocol-version" not in initialize.headers
    for request in (initialized, call):
        assert request.headers["mcp-session-id"] == "s1"
        assert request.headers["mcp-protocol-version"] == "2025-06-18"
    get = mini.requests_for("GET")[0]  # the standalone stream, refused with 405
    assert get.headers["accept"] == "text/event-stream" and get.headers["mcp-session-id"] == "s1"
    delete = mini.requests_for("DELETE")[0]
    assert delete.headers["mcp-session-id"] == "s1"
    session.close()


def test_without_a_session_id_nothing_is_deleted_and_no_get_stream_when_told(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.result(INIT_RESULT)
    client, transport = open_client(mini.url, open_get_stream=False)
    with client:
        assert echo(client) == "hi"
    assert transport.session_id is None
    assert mini.requests_for("GET") == [] and mini.requests_for("DELETE") == []
    assert "mcp-session-id" not in mini.requests_for("tools/call")[0].headers


@pytest.mark.parametrize("status", [405, 500])
def test_a_refused_delete_is_fine(mini: Mini, status: int) -> None:
    mini.on["DELETE"] = lambda r: r.reply(status)
    client, _ = open_client(mini.url)
    client.close()
    assert len(mini.requests_for("DELETE")) == 1


def test_closing_when_the_server_is_gone_does_not_wait(mini: Mini, caplog: pytest.LogCaptureFixture) -> None:
    client, transport = open_client(mini.url)
    # Once the refused GET stream is over, no connection to the server is left open (a kept-alive
    # one would still be served by its handler thread after the stop).
    assert wait_for(lambda: mini.requests_for("GET") != [] and not transport._listening)
    mini.stop()
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG, "mcp_sync.transports.http.streamable"):
        client.close()
    assert time.monotonic() - started < 5.0  # does not hang
    assert transport.closed
    # The DELETE was tried, and its failure (nothing listens) ended it quietly.
    assert f"could not end the session with the MCP server at {mini.url}" in caplog.text


def test_notifications_answered_with_a_body_or_refused_are_fine(mini: Mini, caplog: pytest.LogCaptureFixture) -> None:
    # The conformance suite's initialize mock answers every POST with 200 and a JSON body.
    mini.on["notifications/initialized"] = lambda r: r.json({"jsonrpc": "2.0", "result": {}})
    mini.on["notifications/roots/list_changed"] = lambda r: r.json({"error": "no"}, status=400)
    client, _ = open_client(mini.url, roots_provider=lambda: [Root(uri="file:///tmp")])
    with client, caplog.at_level(logging.WARNING, "mcp_sync.transports.http.streamable"):
        client.refresh_roots()
        assert echo(client) == "hi"
    assert "refused a message with HTTP 400" in caplog.text


def test_a_notification_the_server_does_not_acknowledge_in_time_is_logged(
    mini: Mini, caplog: pytest.LogCaptureFixture
) -> None:
    mini.on["notifications/roots/list_changed"] = lambda r: mini.release.wait(1)
    client, _ = open_client(mini.url, timeout=(2, 0.2), roots_provider=lambda: [])
    with client, caplog.at_level(logging.WARNING, "mcp_sync.transports.http.streamable"):
        client.refresh_roots()
    assert "did not acknowledge a message in time" in caplog.text


def test_a_notification_to_a_server_that_is_gone_closes_the_transport(mini: Mini) -> None:
    client, transport = open_client(mini.url, roots_provider=lambda: [])
    mini.stop()
    with pytest.raises(MCPTransportError) as caught:
        client.refresh_roots()
    assert mini.url in str(caught.value)
    assert transport.closed
    client.close()


# ----------------------------------------------------------- answers as JSON bodies


def test_a_json_batch_delivers_every_message(mini: Mini) -> None:
    def batch(request: Request) -> None:
        progress = {"progressToken": request.message["params"]["_meta"]["progressToken"], "progress": 1}
        request.json(
            [
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress},
                {"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}},
                {"jsonrpc": "2.0", "id": 999, "result": {}},
            ]
        )

    mini.on["tools/call"] = batch
    seen: list[ProgressNotificationParams] = []
    client, _ = open_client(mini.url)
    with client:
        assert client.call_tool("echo", {}, progress=seen.append).content == []
    assert [p.progress for p in seen] == [1]


@pytest.mark.parametrize(
    ("answer", "code", "fragment"),
    [
        (lambda r: r.reply(200, b"<html>hi</html>", "application/json"), MCP_CODES.PARSE_ERROR, "invalid JSON"),
        (lambda r: r.json({"jsonrpc": "2.0", "method": "notifications/x"}), MCP_CODES.INTERNAL_ERROR, "no answer"),
        (lambda r: r.reply(200, b"<html>hi</html>", "text/html"), MCP_CODES.INTERNAL_ERROR, "content type text/html"),
        (lambda r: r.reply(202), MCP_CODES.INTERNAL_ERROR, "HTTP 202 Accepted and content type none"),
        (lambda r: r.reply(500), MCP_CODES.INTERNAL_ERROR, "with HTTP 500 Internal Server Error"),
        (
            lambda r: r.reply(502, b"upstream down", "text/plain"),
            MCP_CODES.INTERNAL_ERROR,
            "HTTP 502 Bad Gateway: upstream down",
        ),
        (lambda r: r.reply(401), MCP_CODES.UNAUTHORIZED, "HTTP 401 Unauthorized"),
        (
            lambda r: r.json(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad args"}}, status=400
            ),
            MCP_CODES.INVALID_PARAMS,
            "bad args",
        ),
        (
            lambda r: r.json({"jsonrpc": "2.0", "id": r.message["id"], "result": "not an object"}),
            MCP_CODES.PROTOCOL_INVALID,
            "invalid answer to tools/call",
        ),
        (
            lambda r: r.json({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "nope"}}),
            MCP_CODES.HANDLER_FAILED,
            "nope",
        ),
    ],
    ids=["not-json", "no-answer", "html", "202", "500", "502-text", "401", "400-jsonrpc", "invalid", "id-null"],
)
def test_bad_answers_fail_the_call_with_a_typed_error(
    mini: Mini, answer: Callable[[Request], None], code: str, fragment: str
) -> None:
    mini.on["tools/call"] = answer
    client, _ = open_client(mini.url)
    with client:
        with pytest.raises(MCPError) as caught:
            echo(client)
        assert caught.value.code == code
        assert fragment in caught.value.message
        assert echo_after_fix(mini, client) == "fine"


def echo_after_fix(mini: Mini, client: MCPClient) -> str:
    """The connection still works after a bad answer."""
    del mini.on["tools/call"]
    return echo(client, "fine")


def test_http_errors_name_the_url_and_status(mini: Mini) -> None:
    mini.on["tools/call"] = lambda r: r.reply(503)
    client, _ = open_client(mini.url)
    with client, pytest.raises(MCPError) as caught:
        echo(client)
    assert mini.url in caught.value.message
    assert caught.value.data == {"status": 503, "url": mini.url}


def test_a_server_that_does_not_answer_in_time_fails_the_call_not_the_connection(mini: Mini) -> None:
    mini.on["tools/call"] = lambda r: mini.release.wait(2)
    client, transport = open_client(mini.url, timeout=(2, 0.3))
    with client:
        with pytest.raises(MCPError, match="did not answer tools/call in time"):
            echo(client)
        assert not transport.closed
        del mini.on["tools/call"]
        assert echo(client) == "hi"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_call_given_up_before_its_response_came_closes_its_connection(mini: Mini, era: str) -> None:
    # A server that sends its headers only with its answer: the client has no response to close, so it shuts down
    # the connection the request went on. That is how the server hears of it (in 2026-07-28, the cancellation).
    hung_up = threading.Event()

    def silent(request: Request) -> None:
        connection = request.handler.connection
        connection.settimeout(CALL_TIMEOUT)
        with contextlib.suppress(OSError):
            if connection.recv(1) == b"":
                hung_up.set()
        request.handler.close_connection = True

    mini.on["tools/call"] = silent
    discovered = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}
    mini.on["server/discover"] = lambda r: r.result(discovered)
    tools = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "resultType": "complete"}
    mini.on["tools/list"] = lambda r: r.result(tools)
    transport = StreamableHTTPClientTransport(mini.url, reconnect_delay=0.05)
    with MCPClient(era=era, timeout=CALL_TIMEOUT) as client:
        client.connect(transport)
        with pytest.raises(MCPError) as caught:
            client.call_tool("echo", {"text": "hi"}, timeout=0.3)
        assert caught.value.code == MCP_CODES.TIMEOUT
        assert hung_up.wait(CALL_TIMEOUT)  # while the client is still open


def test_a_call_given_up_before_it_was_sent_is_not_sent(mini: Mini) -> None:
    # The worker is held before it takes a connection; the caller gives up meanwhile. The connection the worker then
    # takes (the idle keep-alive one) is shut down at once: the server never gets the call.
    session = new_session()
    gate, held = threading.Event(), threading.Event()
    send = session.request

    def gated(method: str, url: str, **options: Any) -> requests.Response:
        if b'"tools/call"' in (options.get("data") or b""):
            held.set()
            gate.wait(CALL_TIMEOUT)
        return send(method, url, **options)

    session.request = gated  # type: ignore[method-assign]
    transport = StreamableHTTPClientTransport(mini.url, session=session, reconnect_delay=0.05)
    try:
        with MCPClient(era="handshake", timeout=CALL_TIMEOUT) as client:
            client.connect(transport)
            with pytest.raises(MCPError) as caught:
                client.call_tool("echo", {"text": "hi"}, timeout=0.3)
            assert caught.value.code == MCP_CODES.TIMEOUT and held.is_set()
            gate.set()
            assert wait_for(lambda: not transport._inflight)
            assert mini.requests_for("tools/call") == []
    finally:
        gate.set()
        session.close()


def test_a_call_given_up_while_the_session_is_renewed_leaves_the_renewal_alone(mini: Mini) -> None:
    # The call's session expired (404): the transport starts a new one, and the caller gives up meanwhile. What the
    # call gave up is its own POST; the renewal's connection is not its own to shut down.
    given_up, renewed = threading.Event(), threading.Event()

    def expired(request: Request) -> None:
        if request.headers.get("mcp-session-id") == "s1":
            mini.session = "s2"
            request.reply(404)
        else:
            request.result({"content": []})

    def initialize(request: Request) -> None:
        if mini.session == "s2":
            given_up.wait(CALL_TIMEOUT)  # the renewal answers once the caller has given up
        request.result(INIT_RESULT, Mcp_Session_Id=mini.session)
        renewed.set()

    mini.on["tools/call"] = expired
    mini.on["initialize"] = initialize
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError) as caught:
            client.call_tool("echo", {"text": "x"}, timeout=0.3)
        assert caught.value.code == MCP_CODES.TIMEOUT
        given_up.set()
        assert renewed.wait(CALL_TIMEOUT)
        assert wait_for(lambda: transport.session_id == "s2")  # the renewal got its answer
        assert client.call_tool("echo", {"text": "x"}).content == []


def test_a_call_the_caller_gives_up_on_stops_being_read(mini: Mini) -> None:
    def hold(request: Request) -> None:
        request.open_stream()
        request.event(id="e1")
        mini.release.wait(10)

    mini.on["tools/call"] = hold
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError) as caught:
            echo(client, timeout=0.3)
        assert caught.value.code == MCP_CODES.TIMEOUT
        assert wait_for(lambda: not transport._inflight)  # the worker let go of the stream
        call = mini.requests_for("tools/call")[0]
        cancelled = mini.requests_for("notifications/cancelled")
        assert [c.message["params"]["requestId"] for c in cancelled] == [call.message["id"]]


def test_a_call_given_up_before_its_answer_began_is_dropped_when_it_comes(mini: Mini) -> None:
    answered = threading.Event()

    def late(request: Request) -> None:
        # The answer begins only once the client said it gave up (and shut the connection down: the write may fail).
        if wait_for(lambda: mini.requests_for("notifications/cancelled") != []):
            with contextlib.suppress(OSError):
                request.result({"content": [{"type": "text", "text": "late"}]})
            answered.set()

    mini.on["tools/call"] = late
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError, match="timed out"):
            echo(client, timeout=0.1)
        assert answered.wait(CALL_TIMEOUT)
        assert wait_for(lambda: not transport._inflight)  # the worker got the late answer, and let it go
        del mini.on["tools/call"]
        assert echo(client) == "hi"
        assert not transport.closed


def test_a_protocol_version_that_is_not_a_string_is_not_sent(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.result({**INIT_RESULT, "protocolVersion": 5}, Mcp_Session_Id="s1")
    transport = StreamableHTTPClientTransport(mini.url)
    with pytest.raises(MCPError, match="protocolVersion"):
        MCPClient(era="handshake", timeout=CALL_TIMEOUT).connect(transport)
    assert transport.protocol_version is None and transport.closed


def test_a_cancellation_for_an_unknown_or_finished_request_is_just_sent(mini: Mini) -> None:
    client, transport = open_client(mini.url)
    with client:
        for request_id in (12345, None, [1]):
            transport.send(JSONRPCNotification(method="notifications/cancelled", params={"requestId": request_id}))
    assert len(mini.requests_for("notifications/cancelled")) == 3


# ----------------------------------------------------------- answers as SSE streams


def test_an_sse_answer_delivers_what_comes_before_it_and_stops_at_it(mini: Mini) -> None:
    def stream(request: Request) -> None:
        token = request.message["params"]["_meta"]["progressToken"]
        request.open_stream()
        request.event(id="p1")  # a priming event
        request.event("ignored", event="other")
        request.event(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
        )
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}}, event="message")
        mini.release.wait(10)  # never ends: the client must stop reading at the answer

    mini.on["tools/call"] = stream
    seen: list[ProgressNotificationParams] = []
    client, _ = open_client(mini.url)
    with client:
        assert client.call_tool("echo", {}, progress=seen.append).content == []
    assert [p.progress for p in seen] == [1]


def test_a_server_request_on_the_post_stream_is_answered_with_a_post(mini: Mini) -> None:
    answered = threading.Event()
    question = {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 5}

    def stream(request: Request) -> None:
        request.open_stream()
        request.event({"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage", "params": question})
        answered.wait(5)
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}})

    def response(request: Request) -> None:
        request.reply(202)
        answered.set()

    mini.on["tools/call"] = stream
    mini.on["response"] = response
    client, _ = open_client(mini.url, sampling_provider=sampler)
    with client:
        assert client.call_tool("echo", {}).content == []
    answer = mini.requests_for("response")[0]
    assert answer.message["id"] == "srv-1"
    assert answer.message["result"]["content"]["text"] == "blue"
    assert answer.headers["mcp-session-id"] == "s1"


def test_a_stream_that_ends_without_an_answer_and_cannot_be_resumed_fails_the_call(mini: Mini) -> None:
    def stream(request: Request) -> None:
        request.open_stream()
        request.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})

    mini.on["tools/call"] = stream
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError, match="ended the stream without answering tools/call"):
            echo(client)
        assert not transport.closed


def test_a_stream_that_breaks_and_cannot_be_resumed_fails_its_call_only(mini: Mini) -> None:
    """No event id to resume from: the call is lost, not the server (it closed the transport)."""

    def stream(request: Request) -> None:
        request.open_stream(length=10_000)  # promises more than it sends: the stream breaks
        request.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})

    mini.on["tools/call"] = stream
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError) as caught:
            echo(client)
        assert caught.value.code == MCP_CODES.INTERNAL_ERROR
        assert f"the stream answering tools/call from the MCP server at {mini.url} broke" in str(caught.value)
        assert not transport.closed
        assert echo_after_fix(mini, client) == "fine"


def resume_with(mini: Mini, retry: int | None, answers: list[Callable[[Request], None]]) -> None:
    """``tools/call`` answers a priming event and hangs up; each GET with Last-Event-ID gets the next of ``answers``."""

    def stream(request: Request) -> None:
        request.open_stream()
        request.event(id="e1", retry=retry)

    def get(request: Request) -> None:
        if "last-event-id" not in request.headers:
            request.reply(405)
        else:
            answers.pop(0)(request)

    mini.on["tools/call"] = stream
    mini.on["GET"] = get


def answer_call(mini: Mini, *, id: str = "e3") -> Callable[[Request], None]:
    def answer(request: Request) -> None:
        call = mini.requests_for("tools/call")[-1]
        request.open_stream()
        request.event(id="e2")
        request.event(
            {"jsonrpc": "2.0", "id": call.message["id"], "result": {"content": [{"type": "text", "text": "resumed"}]}},
            id=id,
        )
        mini.release.wait(10)

    return answer


def test_a_broken_stream_is_resumed_with_last_event_id_after_the_retry_delay(mini: Mini) -> None:
    resume_with(mini, 300, [answer_call(mini)])
    # Our own delay would be a minute: the call can only succeed by following the server's retry advice.
    client, _ = open_client(mini.url, reconnect_delay=60.0)
    with client:
        assert echo(client) == "resumed"
    call = mini.requests_for("tools/call")[0]
    resumed = [r for r in mini.requests_for("GET") if "last-event-id" in r.headers]
    assert [r.headers["last-event-id"] for r in resumed] == ["e1"]
    assert resumed[0].headers["mcp-session-id"] == "s1"
    assert resumed[0].at - call.at >= 0.3  # not sooner than advised


def test_resuming_goes_on_while_the_server_keeps_sending(mini: Mini) -> None:
    def nothing_new(request: Request) -> None:
        request.open_stream()

    def more(request: Request) -> None:
        request.open_stream()
        request.event(id=f"m{len(mini.seen)}")

    resume_with(mini, None, [nothing_new, more, nothing_new, nothing_new, answer_call(mini)])
    client, _ = open_client(mini.url, reconnect_attempts=2, reconnect_delay=0.01)
    with client:
        assert echo(client) == "resumed"
    ids = [r.headers["last-event-id"] for r in mini.requests_for("GET") if "last-event-id" in r.headers]
    assert ids[0] == "e1" and ids[2].startswith("m") and len(ids) == 5


def test_resuming_gives_up_after_the_attempts_without_news(mini: Mini) -> None:
    def nothing_new(request: Request) -> None:
        request.open_stream()

    resume_with(mini, 10, [nothing_new] * 3)
    client, _ = open_client(mini.url, reconnect_attempts=2)
    with client, pytest.raises(MCPError, match="gave up resuming the answer to tools/call"):
        echo(client)


def test_a_resumption_the_server_refuses_fails_the_call(mini: Mini) -> None:
    resume_with(mini, 10, [lambda r: r.reply(400)])
    client, _ = open_client(mini.url)
    with client, pytest.raises(MCPError, match="could not resume the answer to tools/call"):
        echo(client)


def test_a_resumption_that_gets_no_answer_in_time_fails_the_call(mini: Mini) -> None:
    resume_with(mini, 10, [lambda r: mini.release.wait(2)])
    client, transport = open_client(mini.url, sse_read_timeout=0.3)
    with client, pytest.raises(MCPError, match="did not answer tools/call in time"):
        echo(client)
    assert transport.sse_read_timeout == 0.3


def test_closing_while_waiting_to_resume_stops_at_once(mini: Mini) -> None:
    resume_with(mini, 60_000, [])  # resuming would pop from an empty list: the server fails if it is tried
    client, transport = open_client(mini.url)
    failures: list[BaseException] = []

    def call() -> None:
        try:
            echo(client)
        except MCPError as exc:
            failures.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert wait_for(lambda: a_thread_waits_in("threading.py", "_stream_answer"))  # the advised minute began
    client.close()
    caller.join(5)
    assert not caller.is_alive()
    assert isinstance(failures[0], MCPTransportError)
    # The worker woke from its minute-long wait: no thread is left, and it never tried to resume.
    assert wait_for(lambda: transport._workers.threads == [])
    assert [r for r in mini.requests_for("GET") if "last-event-id" in r.headers] == []


def test_an_invalid_event_is_handed_to_the_dispatcher(mini: Mini) -> None:
    def stream(request: Request) -> None:
        request.open_stream()
        request.event("{not json")
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}})

    mini.on["tools/call"] = stream
    client, _ = open_client(mini.url)
    with client:
        assert client.call_tool("echo", {}).content == []
    # The dispatcher answers unreadable input with a parse error, as on any transport.
    assert wait_for(lambda: any(r.message and r.message.get("error", {}).get("code") == -32700 for r in mini.seen))


def test_an_injected_sse_parser_is_used(mini: Mini) -> None:
    made: list[requests.Response] = []

    def factory(response: requests.Response) -> EventSource:
        made.append(response)
        return default_sse_client(response)

    def stream(request: Request) -> None:
        request.open_stream()
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}})

    mini.on["tools/call"] = stream
    client, _ = open_client(mini.url, sse_client_factory=factory)
    with client:
        assert client.call_tool("echo", {}).content == []
    assert len(made) == 1


# ----------------------------------------------------------- the standalone GET stream


def test_server_requests_on_the_get_stream_are_answered(mini: Mini) -> None:
    def stream(request: Request) -> None:
        request.open_stream()
        request.event(id="g1", retry=50)
        request.event({"jsonrpc": "2.0", "id": "r1", "method": "ping"})
        request.event({"jsonrpc": "2.0", "id": "r2", "method": "roots/list"})
        request.event({"jsonrpc": "2.0", "id": "r3", "method": "no/such/method"})
        mini.release.wait(10)

    mini.on["GET"] = stream
    client, _ = open_client(mini.url, roots_provider=lambda: [Root(uri="file:///work")])
    with client:
        assert wait_for(lambda: len(mini.requests_for("response")) == 3)
    by_id = {r.message["id"]: r.message for r in mini.requests_for("response")}
    assert by_id["r1"]["result"] == {}
    assert by_id["r2"]["result"]["roots"] == [{"uri": "file:///work"}]
    assert by_id["r3"]["error"]["code"] == -32601


def test_the_get_stream_is_answered_before_the_sessions_first_request(mini: Mini) -> None:
    """A server without an event store drops what it sends on the GET stream while none is open (the TypeScript
    SDK's does): the GET must be answered before the session's first request, or an elicitation the server sends
    on it while serving that request is lost, and the call waits for ever. Here the server takes 0.3 s to answer
    the GET; the first call reaches it after that (before: at once, while the GET was still unanswered)."""
    answered: list[float] = []

    def slow_stream(request: Request) -> None:
        time.sleep(0.3)
        request.open_stream()
        answered.append(time.monotonic())
        mini.release.wait(10)

    mini.on["GET"] = slow_stream
    client, _ = open_client(mini.url)
    with client:
        assert echo(client) == "hi"
        (call,) = mini.requests_for("tools/call")
        assert answered and answered[0] <= call.at


def test_a_get_stream_never_answered_holds_the_first_request_back_only_so_long(
    mini: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_module, "GET_STREAM_WAIT", 0.2)
    mini.on["GET"] = lambda request: mini.release.wait(10)  # no answer until the server stops
    started = time.monotonic()
    client, _ = open_client(mini.url)
    with client:
        assert echo(client) == "hi"
        assert 0.2 <= time.monotonic() - started < 5.0


def test_closing_while_a_connect_waits_for_the_get_stream_ends_that_wait(
    mini: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connect held back by an unanswered GET stream (see GET_STREAM_WAIT) ends as soon as the transport is
    closed from another thread, not when the wait runs out (a minute here, longer than the test may take)."""
    monkeypatch.setattr(http_module, "GET_STREAM_WAIT", 60.0)
    mini.on["GET"] = lambda request: mini.release.wait(10)  # no answer until the server stops
    transport = StreamableHTTPClientTransport(mini.url, reconnect_delay=0.05)
    client = MCPClient(era="handshake", timeout=CALL_TIMEOUT)
    failures: list[BaseException] = []

    def connect() -> None:
        try:
            client.connect(transport)
        except BaseException as exc:  # (none expected: looked at below)
            failures.append(exc)

    connecting = threading.Thread(target=connect)
    connecting.start()
    assert wait_for(lambda: a_thread_waits_in("threading.py", "_start_listener"))
    transport.close()
    connecting.join(5)
    assert not connecting.is_alive()
    # The handshake was done before the wait: the connect returns, and the client knows the connection closed.
    assert failures == []
    with pytest.raises(MCPTransportError) as closed:
        echo(client)
    assert closed.value.code == MCP_CODES.TRANSPORT_CLOSED
    client.close()


def test_the_get_stream_reconnects_with_last_event_id_and_gives_up_after_failures(mini: Mini) -> None:
    def stream(request: Request) -> None:
        count = len(mini.requests_for("GET"))
        if count == 1:
            request.open_stream()
            request.event(id="g1", retry=20)
        elif count == 2:
            request.open_stream()  # nothing new
        else:
            request.open_stream(length=100)  # breaks

    mini.on["GET"] = stream
    client, transport = open_client(mini.url, reconnect_attempts=2)
    with client:
        assert wait_for(lambda: not transport._listening)
        gets = mini.requests_for("GET")
        assert len(gets) == 4
        assert "last-event-id" not in gets[0].headers
        assert [g.headers["last-event-id"] for g in gets[1:]] == ["g1"] * 3


def test_the_get_stream_stops_when_closing_during_its_wait(mini: Mini) -> None:
    def stream(request: Request) -> None:
        request.open_stream()
        request.event(id="g1", retry=60_000)

    mini.on["GET"] = stream
    client, transport = open_client(mini.url)
    assert wait_for(lambda: a_thread_waits_in("threading.py", "_listen"))  # the advised minute began
    client.close()
    listener = transport._listener
    assert listener is not None
    listener.join(5)
    assert not listener.is_alive()
    assert len(mini.requests_for("GET")) == 1  # it never reconnected


# ----------------------------------------------------------- session expiry


def expire_once(mini: Mini) -> None:
    """Session s1 is gone by the first ``tools/call``; a new initialize starts s2, answered on an SSE stream."""

    def call(request: Request) -> None:
        if request.headers.get("mcp-session-id") == "s1":
            request.reply(
                404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"gone"}}', "application/json"
            )
            return
        text = request.message["params"]["arguments"]["text"]
        request.result({"content": [{"type": "text", "text": text}]})

    def initialize(request: Request) -> None:
        if len(mini.requests_for("initialize")) == 1:
            request.result(INIT_RESULT, Mcp_Session_Id="s1")
            return
        request.open_stream(Mcp_Session_Id="s2")
        request.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}})
        request.event(
            {"jsonrpc": "2.0", "id": request.message["id"], "result": {**INIT_RESULT, "protocolVersion": "2025-11-25"}}
        )

    mini.on["tools/call"] = call
    mini.on["initialize"] = initialize


def test_a_404_for_our_session_starts_a_new_one_and_sends_the_request_again(mini: Mini) -> None:
    expire_once(mini)
    client, transport = open_client(mini.url)
    with client:
        assert echo(client, "again") == "again"
        assert transport.sessions_started == 1
        assert transport.session_id == "s2" and transport.protocol_version == "2025-11-25"
        assert wait_for(lambda: len(mini.requests_for("GET")) == 2)
    inits = mini.requests_for("initialize")
    assert len(inits) == 2
    assert inits[1].message["params"] == inits[0].message["params"]
    assert inits[1].message["id"] != inits[0].message["id"]
    assert "mcp-session-id" not in inits[1].headers and "mcp-protocol-version" not in inits[1].headers
    initialized = mini.requests_for("notifications/initialized")
    assert [r.headers["mcp-session-id"] for r in initialized] == ["s1", "s2"]
    calls = mini.requests_for("tools/call")
    assert [r.headers["mcp-session-id"] for r in calls] == ["s1", "s2"]
    assert calls[1].headers["mcp-protocol-version"] == "2025-11-25"
    assert [r.headers["mcp-session-id"] for r in mini.requests_for("GET")] == ["s1", "s2"]


def test_concurrent_calls_that_find_the_session_gone_start_one_new_session(mini: Mini) -> None:
    gate = threading.Barrier(4, timeout=5)

    def call(request: Request) -> None:
        if request.headers.get("mcp-session-id") == "s1":
            with contextlib.suppress(threading.BrokenBarrierError):
                gate.wait()
            request.reply(404)
        else:
            text = request.message["params"]["arguments"]["text"]
            request.result({"content": [{"type": "text", "text": text}]})

    mini.on["tools/call"] = call
    client, transport = open_client(mini.url)
    mini.session = "s2"
    with client:
        results: list[str] = []
        threads = [threading.Thread(target=lambda n=n: results.append(echo(client, str(n)))) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(CALL_TIMEOUT)
        assert sorted(results) == ["0", "1", "2", "3"]
        assert transport.sessions_started == 1
    assert len(mini.requests_for("initialize")) == 2


def test_a_second_404_is_not_retried_again(mini: Mini) -> None:
    mini.on["tools/call"] = lambda r: r.reply(404)
    client, transport = open_client(mini.url)
    with client, pytest.raises(MCPError, match="HTTP 404 Not Found"):
        echo(client)
    assert transport.sessions_started == 1
    assert len(mini.requests_for("tools/call")) == 2


@pytest.mark.parametrize(
    "renewal",
    [
        lambda r: r.reply(500),
        lambda r: r.json({"jsonrpc": "2.0", "id": r.message["id"], "error": {"code": -32600, "message": "no"}}),
    ],
    ids=["http-error", "jsonrpc-error"],
)
def test_a_session_that_cannot_be_renewed_fails_the_call(mini: Mini, renewal: Callable[[Request], None]) -> None:
    mini.on["tools/call"] = lambda r: r.reply(404)
    client, transport = open_client(mini.url)
    mini.on["initialize"] = renewal
    with client:
        with pytest.raises(MCPError, match="expired and a new one could not be started"):
            echo(client)
        assert not transport.closed


def test_a_session_renewal_to_a_server_that_went_away_fails_the_call(mini: Mini) -> None:
    def gone(request: Request) -> None:
        mini.shutdown()
        mini.server_close()  # no new connection is accepted from now on
        request.handler.close_connection = True
        request.reply(404, Connection="close")

    mini.on["tools/call"] = gone
    client, transport = open_client(mini.url)
    with client, pytest.raises(MCPError, match="expired and a new one could not be started"):
        echo(client)
    assert transport.sessions_started == 1


def test_a_server_that_goes_away_as_it_starts_the_new_session_closes_the_transport(mini: Mini) -> None:
    """It answered the new initialize, then nothing listens: the notifications/initialized that completes the
    session cannot be sent, which closes the transport, on the thread of the call that found its session gone."""

    def initialize(request: Request) -> None:
        mini.shutdown()
        mini.server_close()  # no new connection is accepted from now on
        request.handler.close_connection = True
        request.result(INIT_RESULT, Mcp_Session_Id="s2", Connection="close")

    mini.on["tools/call"] = lambda r: r.reply(404)
    client, transport = open_client(mini.url)
    mini.on["initialize"] = initialize
    with client:
        with pytest.raises(MCPTransportError) as gone:
            echo(client)
        assert gone.value.code == MCP_CODES.TRANSPORT_CLOSED
        assert transport.closed
        assert f"the MCP server at {mini.url} could not be reached while sending a message" in str(
            transport.close_reason
        )


def test_a_404_without_a_session_is_an_http_error(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.result(INIT_RESULT)
    mini.on["tools/call"] = lambda r: r.reply(404)
    client, transport = open_client(mini.url)
    with client, pytest.raises(MCPError, match="HTTP 404"):
        echo(client)
    assert transport.sessions_started == 0


def test_without_the_initialize_request_a_session_cannot_be_renewed(mini: Mini) -> None:
    mini.on["tools/call"] = lambda r: r.reply(404)
    transport = StreamableHTTPClientTransport(mini.url)
    transport.session_id = "stale"
    done: list[Any] = []
    transport.on_message(done.append)
    transport.send(JSONRPCRequest(id=1, method="tools/call", params={"name": "x"}))
    assert wait_for(lambda: done != [])
    assert "could not be started" in done[0].error.message
    transport.close()


def test_the_get_stream_follows_a_new_session(mini: Mini) -> None:
    waited: list[bool] = []

    def stream(request: Request) -> None:
        if request.headers.get("mcp-session-id") == "s1":
            # Refused only once the new session is there: the listener must go on with it.
            waited.append(wait_for(lambda: len(mini.requests_for("notifications/initialized")) == 2))
            request.reply(404)
            return
        request.open_stream()
        request.event(id="g1")
        mini.release.wait(10)

    expire_once(mini)
    mini.on["GET"] = stream
    client, transport = open_client(mini.url)
    with client:
        listener = transport._listener
        assert echo(client, "x") == "x"
        assert wait_for(lambda: len(mini.requests_for("GET")) == 2)
        assert transport._listener is listener and transport._listening
    assert waited == [True]
    assert [g.headers["mcp-session-id"] for g in mini.requests_for("GET")] == ["s1", "s2"]
    assert "last-event-id" not in mini.requests_for("GET")[1].headers


# ----------------------------------------------------------- the caller's own thread


def test_a_json_answer_is_read_on_the_callers_thread(mini: Mini) -> None:
    # Connecting and calling with a limit or without one: every answer is JSON, and no worker thread ever starts.
    client, _ = open_client(mini.url)
    with client:
        assert echo(client, "a") == "a"
        assert echo(client, "b", timeout=None) == "b"
        assert [thread for thread in threading.enumerate() if thread.name == "mcp-sync-http-post"] == []
    assert [thread for thread in threading.enumerate() if thread.name.startswith("mcp-sync-http")] == []


def test_a_caller_yields_the_interpreter_lock_only_while_another_thread_reads_its_answer(
    mini: Mini, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Alone, a caller returns its answer at once; while another thread of the process waits for its own answer, it
    # first lets a thread that waits for the interpreter lock have it.
    yielded: list[str] = []
    let_another_run = turns.let_another_run

    def noted() -> None:
        yielded.append(threading.current_thread().name)
        let_another_run()

    monkeypatch.setattr(turns, "let_another_run", noted)
    arrived, release = threading.Event(), threading.Event()

    def held(request: Request) -> None:
        arrived.set()
        release.wait(10)
        request.result({"content": [{"type": "text", "text": "held"}]})

    client, _ = open_client(mini.url)
    with client:
        client.ping()
        assert echo(client) == "hi"
        assert "MainThread" not in yielded
        mini.on["tools/call"] = held
        other = threading.Thread(target=echo, args=(client,), name="other-caller")
        other.start()
        try:
            assert arrived.wait(10)
            client.ping()
            assert "MainThread" in yielded
        finally:
            release.set()
            other.join(10)


def test_an_answer_trickled_past_the_calls_time_fails_the_call_when_its_time_is_up(mini: Mini) -> None:
    # The headers come at once, then the body a byte at a time: each read is quick, the whole is not. The caller
    # reads this answer itself, and is stopped when its time is up, not when the answer is whole.
    whole = threading.Event()

    def trickle(request: Request) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}}).encode()
        handler = request.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.close_connection = True
        with contextlib.suppress(OSError):
            for byte in body:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                if mini.release.wait(0.05):
                    return
            whole.set()

    mini.on["tools/call"] = trickle
    client, transport = open_client(mini.url)
    with client:
        with pytest.raises(MCPError) as caught:
            echo(client, timeout=0.3)
        assert caught.value.code == MCP_CODES.TIMEOUT
        assert not whole.is_set()
        del mini.on["tools/call"]
        assert echo(client) == "hi"
        assert not transport.closed


def test_a_stream_answer_left_to_the_workers_after_they_stopped_is_dropped(mini: Mini) -> None:
    # The caller's thread got an SSE answer to hand over, and the workers had stopped (the transport was closing):
    # nobody waits for it any more. A closed transport refuses the next exchange.
    def stream(request: Request) -> None:
        request.open_stream()
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {}}, id="e1")

    mini.on["ping"] = stream
    transport = StreamableHTTPClientTransport(mini.url)
    got: list[Any] = []
    transport.on_message(got.append)
    transport._workers.close(0.0)  # as if close() ran while the caller read the headers
    transport.exchange(JSONRPCRequest(id=1, method="ping"), CALL_TIMEOUT)
    assert got == [] and transport._inflight == {}
    assert len(mini.requests_for("ping")) == 1
    transport.close()
    with pytest.raises(MCPTransportError, match="closed"):
        transport.exchange(JSONRPCRequest(id=2, method="ping"), CALL_TIMEOUT)
    assert len(mini.requests_for("ping")) == 1


def test_closing_while_a_caller_reads_its_own_answer_ends_the_call_at_once(mini: Mini) -> None:
    # The call has 10 s; the client is closed from another thread once the server holds the request. The caller,
    # blocked in its own read, gets the close's error, not a timeout, and nothing stays in flight.
    arrived = threading.Event()

    def hold(request: Request) -> None:
        arrived.set()
        mini.release.wait(CALL_TIMEOUT)

    mini.on["tools/call"] = hold
    client, transport = open_client(mini.url)
    closer = threading.Thread(target=lambda: arrived.wait(CALL_TIMEOUT) and client.close())
    closer.start()
    try:
        with pytest.raises(MCPTransportError):
            echo(client)
    finally:
        closer.join(CALL_TIMEOUT)
        client.close()
    assert arrived.is_set() and transport.closed and transport._inflight == {}


def test_a_call_interrupted_while_it_reads_its_own_answer_waits_no_more(mini: Mini) -> None:
    # A KeyboardInterrupt (a notebook's stop button) reaches the caller in its read: the call is given up at once,
    # and not left waiting for an answer nobody reads any more. The signal goes once the server has the request.
    def arrived(request: Request) -> None:
        os.kill(os.getpid(), signal.SIGUSR1)
        mini.release.wait(CALL_TIMEOUT)

    mini.on["ping"] = arrived

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    transport = StreamableHTTPClientTransport(mini.url)
    dispatcher = JsonRpcDispatcher(transport)
    dispatcher.start()
    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            dispatcher.request("ping", timeout=CALL_TIMEOUT)
        (ping,) = mini.requests_for("ping")
        assert not dispatcher.awaits(ping.message["id"])
        assert transport._inflight == {}
    finally:
        signal.signal(signal.SIGUSR1, previous)
        dispatcher.close()


# ----------------------------------------------------------- the worker threads


def test_idle_post_workers_end_and_new_ones_start(mini: Mini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_module, "_IDLE_WORKER", 0.05)
    client, transport = open_client(mini.url)
    with client:
        assert echo(client, "a") == "a"
        assert wait_for(lambda: not transport._workers.threads)
        assert echo(client, "b") == "b"


def test_sending_after_close_is_refused(mini: Mini) -> None:
    transport = StreamableHTTPClientTransport(mini.url)
    transport._workers.close(0.0)  # as if close() ran between send()'s check and the hand-off
    with pytest.raises(MCPTransportError, match="closed"):
        transport.send(JSONRPCRequest(id=1, method="ping"))
    assert transport._inflight == {}
    transport.close()
    assert repr(transport) == f"<StreamableHTTPClientTransport {mini.url}>"


def test_a_request_accepted_just_before_close_is_not_posted(mini: Mini) -> None:
    """A worker that gets its request only after the close drops it: nobody waits for its answer."""
    transport = StreamableHTTPClientTransport(mini.url)
    transport.close()
    inflight = http_module._InflightRequest(JSONRPCRequest(id=1, method="ping"))
    transport._inflight[1] = inflight
    transport._run(inflight)  # what the worker would do
    assert transport._inflight == {}
    assert mini.requests_for("POST") == []


# ----------------------------------------------------------- http_client


def test_http_client_refuses_an_unknown_transport() -> None:
    with pytest.raises(ValueError, match="'auto', 'streamable' or 'sse'"):
        http_client("http://127.0.0.1:1/mcp", transport="websocket")  # type: ignore[arg-type]


def test_auto_falls_back_and_names_both_failures(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.reply(405)
    with pytest.raises(MCPError) as caught:
        http_client(mini.url, connect_timeout=5, era="handshake")
    message = str(caught.value)
    assert f"could not connect to the MCP server at {mini.url}" in message
    assert "Streamable HTTP failed" in message and "HTTP 405" in message
    assert "not an SSE stream" in message


def test_streamable_does_not_fall_back(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.reply(405)
    with pytest.raises(MCPError, match="HTTP 405") as caught:
        http_client(mini.url, transport="streamable", connect_timeout=5, era="handshake")
    assert "Streamable HTTP failed" not in str(caught.value)
    assert mini.requests_for("GET") == []


def test_auto_does_not_fall_back_after_a_server_error(mini: Mini) -> None:
    mini.on["initialize"] = lambda r: r.reply(500)
    with pytest.raises(MCPError, match="HTTP 500"):
        http_client(mini.url, connect_timeout=5, era="handshake")
    assert mini.requests_for("GET") == []


# ----------------------------------------------------------- the legacy transport, edge cases


def legacy_stream(mini: Mini, *events: tuple[str, str], hold: bool = True) -> None:
    """GET answers an SSE stream with ``events``; POSTs to /messages get 202 and their answers on the stream."""
    outbox: list[dict[str, Any]] = []
    more = threading.Condition()

    def stream(request: Request) -> None:
        request.open_stream()
        for event, data in events:
            request.event(data, event=event)
        while hold and not mini.release.is_set():
            with more:
                more.wait(0.05)
                pending, outbox[:] = list(outbox), []
            for message in pending:
                request.event(message, event="message")

    def post(request: Request) -> None:
        request.reply(202)
        message = request.message
        if message.get("method") == "initialize":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {**INIT_RESULT, "protocolVersion": "2024-11-05"}}
        elif "id" in message and "method" in message:
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "old"}]}}
        else:
            return
        with more:
            outbox.append(answer)
            more.notify()

    mini.on["GET"] = stream
    for key in ("initialize", "notifications/initialized", "tools/call", "tools/list"):
        mini.on[key] = post


def test_legacy_endpoint_is_resolved_against_the_url(mini: Mini) -> None:
    legacy_stream(mini, ("endpoint", "/messages?session=1"), ("ping", "ignored"), ("message", ""))
    transport = SSEClientTransport(mini.url)
    assert transport.endpoint == mini.url.replace("/mcp", "/messages?session=1")
    with MCPClient(era="handshake", timeout=CALL_TIMEOUT) as client:
        client.connect(transport)
        assert echo(client) == "old"
    assert repr(transport) == f"<SSEClientTransport {mini.url}>"
    assert mini.requests_for("tools/call")[0].handler.path == "/messages?session=1"


@pytest.mark.parametrize(
    ("events", "fragment"),
    [
        ((("endpoint", "http://evil.example:80/messages"),), "another origin"),
        ((("message", "{}"),), "'message' event before the endpoint event"),
        ((), "ended the SSE stream"),
    ],
    ids=["other-origin", "no-endpoint-first", "ended"],
)
def test_legacy_endpoint_problems_are_refused(mini: Mini, events: tuple[tuple[str, str], ...], fragment: str) -> None:
    legacy_stream(mini, *events, hold=False)
    with pytest.raises(MCPTransportError, match=fragment) as caught:
        SSEClientTransport(mini.url)
    assert mini.url in str(caught.value)


def test_legacy_without_an_endpoint_in_time(mini: Mini) -> None:
    legacy_stream(mini)
    with pytest.raises(MCPTransportError, match=r"sent no endpoint event within 0\.3 s"):
        SSEClientTransport(mini.url, connect_timeout=0.3)


def test_legacy_get_refused_or_unreachable(mini: Mini) -> None:
    mini.on["GET"] = lambda r: r.reply(404, b"nothing here", "text/plain")
    with pytest.raises(
        MCPTransportError, match=r"answered GET with HTTP 404 Not Found \(text/plain\), not an SSE stream: nothing here"
    ):
        SSEClientTransport(mini.url)
    mini.on["GET"] = lambda r: r.json({})
    with pytest.raises(MCPTransportError, match=r"HTTP 200 OK \(application/json\), not an SSE stream$"):
        SSEClientTransport(mini.url)
    url = f"http://127.0.0.1:{free_port()}/sse"
    with pytest.raises(MCPTransportError, match=f"could not open the SSE stream at {url}"):
        SSEClientTransport(url, session=requests.Session())


def test_legacy_post_failures(mini: Mini, caplog: pytest.LogCaptureFixture) -> None:
    legacy_stream(mini, ("endpoint", "/messages"))
    transport = SSEClientTransport(mini.url, timeout=(2, 0.3))
    client = MCPClient(era="handshake", timeout=CALL_TIMEOUT, roots_provider=lambda: [])
    client.connect(transport)
    with client:
        mini.on["tools/call"] = lambda r: r.json(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad"}}, status=400
        )
        with pytest.raises(MCPError, match="bad"):
            echo(client)
        mini.on["tools/call"] = lambda r: mini.release.wait(2)
        with pytest.raises(MCPError, match="did not accept tools/call in time"):
            echo(client)
        with caplog.at_level(logging.WARNING, "mcp_sync.transports.http.sse"):
            mini.on["notifications/roots/list_changed"] = lambda r: r.reply(500)
            client.refresh_roots()
            mini.on["notifications/roots/list_changed"] = lambda r: mini.release.wait(2)
            client.refresh_roots()
        assert "refused a message with HTTP 500" in caplog.text
        assert "did not accept a message in time" in caplog.text


def test_legacy_server_that_goes_away(mini: Mini) -> None:
    legacy_stream(mini, ("endpoint", "/messages"))
    transport = SSEClientTransport(mini.url)
    client = MCPClient(era="handshake", timeout=CALL_TIMEOUT)
    client.connect(transport)
    with client:
        mini.stop()
        assert transport.wait_closed(5)
        assert isinstance(transport.close_reason, MCPTransportError)
        assert mini.url in str(transport.close_reason)
        with pytest.raises(MCPTransportError):
            echo(client)


def test_legacy_post_to_a_server_that_went_away(mini: Mini) -> None:
    legacy_stream(mini, ("endpoint", "/messages"))
    transport = SSEClientTransport(mini.url)
    transport.endpoint = f"http://127.0.0.1:{free_port()}/messages"  # where nothing listens
    with pytest.raises(MCPTransportError, match="could not be reached"):
        transport.send(JSONRPCNotification(method="notifications/initialized"))
    assert transport.closed


# ----------------------------------------------------------- plumbing details


def test_retry_advice_and_backoff() -> None:
    cursor = StreamCursor()
    assert cursor.delay(0, 0.5) == 0.5 and cursor.delay(3, 0.5) == 4.0 and cursor.delay(10, 1.0) == 30.0

    class Event:
        def __init__(self, id: str | None, retry: Any) -> None:
            self.id, self.retry, self.event, self.data = id, retry, "message", ""

    cursor.saw(Event("a", "250"))
    assert (cursor.last_event_id, cursor.retry) == ("a", 0.25)
    cursor.saw(Event(None, "-5"))
    assert (cursor.last_event_id, cursor.retry) == ("a", 0.25)
    cursor.saw(Event("", None))
    assert cursor.last_event_id is None and cursor.events == 3


# ---------------------------------------------------------------- our own server


def our_server() -> MCPServer:
    server = MCPServer("ours", "1.0")

    def count(args: dict[str, Any], ctx: Context) -> str:
        for step in range(1, int(args["steps"]) + 1):
            ctx.progress(step, int(args["steps"]))
        return "counted"

    def ask_model(args: dict[str, Any], ctx: Context) -> str:
        reply = ctx.sample(args["prompt"], max_tokens=10).content
        assert isinstance(reply, TextContent)
        return f"the model said {reply.text}"

    server.register_tool("echo", lambda args, ctx: args["text"])
    server.register_tool("count", count)
    server.register_tool("ask_model", ask_model)
    return server


@pytest.fixture(params=[False, True], ids=["sse", "json"])
def ours(request: pytest.FixtureRequest) -> Iterator[RunningHTTPServer]:
    with start_http(our_server(), json_response=request.param) as running:
        yield running


def test_our_client_and_our_server(ours: RunningHTTPServer) -> None:
    seen: list[ProgressNotificationParams] = []
    client, transport = open_client(ours.url, sampling_provider=sampler)
    with client:
        assert echo(client, "ours") == "ours"
        assert transport.session_id is not None and transport.protocol_version == "2025-11-25"
        assert client.call_tool("count", {"steps": 3}, progress=seen.append).content[0].text == "counted"  # type: ignore[union-attr]
        assert client.call_tool("ask_model", {"prompt": "?"}).content[0].text == "the model said blue"  # type: ignore[union-attr]
    if not ours.app.json_response:
        assert [p.progress for p in seen] == [1, 2, 3]


def test_our_server_forgetting_the_session_is_transparent(ours: RunningHTTPServer) -> None:
    client, transport = open_client(ours.url)
    told: list[str] = []

    def failing_handler() -> None:
        told.append(transport.session_id or "")
        raise RuntimeError("a new-session handler that fails is logged, and the call goes on")

    transport.on_new_session(failing_handler)
    with client:
        assert echo(client, "before") == "before"
        first = transport.session_id
        assert first is not None and ours.app.sessions.remove(first) is not None
        assert echo(client, "after") == "after"
        assert transport.sessions_started == 1 and transport.session_id != first
        assert told == [transport.session_id]  # told once, the new session in place
    assert len(ours.app.sessions) == 0  # closing deleted the new session


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_the_new_session_gets_the_subscriptions_and_log_level_the_forgotten_one_had(json_response: bool) -> None:
    # A server that forgets a session forgets what it held: without asking again, a subscribed resource went
    # quiet for good (seen in the soak: gunicorn on Redis ending a session idle while its client waited elsewhere).
    server = MCPServer("notes", "1.0")

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    server.register_tool("touch", lambda args, ctx: server.mark_resource_updated(args["uri"]) or "touched")
    with start_http(server, json_response=json_response) as running:
        client, transport = open_client(running.url)
        with client:
            client.set_log_level("warning")
            client.subscribe_resource("notes://a")
            client.subscribe_resource("notes://b")
            client.unsubscribe_resource("notes://b")
            first = transport.session_id
            assert first is not None and running.app.sessions.remove(first) is not None
            assert echo_touch(client, "notes://a") == "touched"  # the 404, a new session, the call again
            assert transport.sessions_started == 1 and transport.session_id not in (None, first)
            renewed = running.app.sessions.peek(transport.session_id)  # (a look that does not hold it in use)
            assert renewed is not None
            assert wait_for(lambda: renewed.session.subscriptions == {"notes://a"})
            assert wait_for(lambda: renewed.session.log_level == "warning")
            # and the updates of the resource reach the client again
            assert wait_for(lambda: echo_touch(client, "notes://a") and client.subscribed_contents("notes://a"))


def echo_touch(client: MCPClient, uri: str) -> str:
    block = client.call_tool("touch", {"uri": uri}).content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_a_question_the_server_withdraws_is_forgotten_by_the_client_transport() -> None:
    # The transport relates each server question to the call whose stream carried it, until it is answered; a
    # question the server withdraws (its own timeout here) is never answered, so notifications/cancelled ends it.
    server = MCPServer("asks", "1.0")
    release = threading.Event()

    def impatient(args: dict[str, Any], ctx: Context) -> str:
        try:
            ctx.sample("?", timeout=0.2)
        except MCPError as error:
            return error.code
        return "answered"

    def slow_sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
        release.wait(CALL_TIMEOUT)
        return sampler(params)

    server.register_tool("impatient", impatient)
    with start_http(server) as running:
        client, transport = open_client(running.url, sampling_provider=slow_sampler)
        with client:
            try:
                for _ in range(3):
                    assert client.call_tool("impatient").content[0].text == MCP_CODES.TIMEOUT  # type: ignore[union-attr]
                assert transport._related == {}
            finally:
                release.set()


def test_a_withdrawal_with_a_malformed_id_changes_nothing(mini: Mini) -> None:
    def withdraw_nonsense(request: Request) -> None:
        request.open_stream()
        request.event({"jsonrpc": "2.0", "id": "q-1", "method": "roots/list"})  # a question related to the call
        request.event({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
        request.event({"jsonrpc": "2.0", "id": request.message["id"], "result": {"content": []}})

    mini.on["tools/call"] = withdraw_nonsense
    release = threading.Event()

    def held_roots() -> list[Root]:
        release.wait(CALL_TIMEOUT)  # the question stays related to the call while the withdrawal comes
        return []

    client, transport = open_client(mini.url, roots_provider=held_roots)
    with client:
        try:
            assert client.call_tool("echo", {"text": "x"}).content == []
            assert transport.related_request("q-1") is not None  # (the malformed withdrawal forgot nothing)
        finally:
            release.set()


def test_http_client_falls_back_to_our_legacy_endpoint() -> None:
    with start_http(our_server()) as running:
        legacy_url = running.url.replace("/mcp", "/sse")
        with connect_to(legacy_url) as client:
            assert echo(client, "legacy") == "legacy"
            assert client.call_tool("ask_model", {"prompt": "?"}).content[0].text == "the model said blue"  # type: ignore[union-attr]
