"""One server run by several processes sharing a real Redis (issue 14, the 2026-07-28 era and the notifications).

In this process, several apps each with a server of their own stand for
processes: they share only Redis. Two of them show that the ``requestState``
secret is shared, that a resource update or list change raised in either
reaches the listen streams (2026-07-28) and GET streams (handshake era) of
both, each exactly once and in order, that an app is not made against a
Redis that does not answer, that a request that must publish while Redis is
away fails at once with a typed error, and that everything works again once
Redis is back (the receiving thread resubscribes).

Under gunicorn, ``examples/scaled_app.py`` with four workers and
``--keep-alive 0`` (every request on a new connection, so requests spread over
the workers): 200 calls of our 2026-07-28 client served by at least three
workers, every progress notification, sampling rounds finished by whichever
worker the retry reaches, and a listen stream that hears the ``touch`` of
another client on other workers; the same with ``--preload``; Redis killed
under it and started again. Two gunicorn masters of one worker each on two
ports, as two machines: a round started on one ends on the other, and a
handshake-era GET stream hears the touches of both.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest
from redisserver import RedisServer, free_port, running_redis
from test_hosting import Hosted, group_members, gunicorn, hosting, in_threads, stopped

from mcp_sync import Context, MCPServer
from mcp_sync.client import http_client
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp, start_http
from mcp_sync.server.backend import BackendUnavailable, InProcessBackend, Notice
from mcp_sync.server.scale.redis_backend import REDIS_URL_VARIABLE, RedisBackend
from mcp_sync.types import CreateMessageRequestParams, CreateMessageResult, ProgressNotificationParams, TextContent

TIMEOUT = 10.0
SUBSCRIBED = "notes://1"
RECEIVER = "mcp-sync-redis-receiver"

pytestmark = pytest.mark.timeout(60)


def build_server(name: str = "scale-test", **options: Any) -> MCPServer:
    server = MCPServer(name, "1.0", **options)

    @server.tool(structured_output=False)
    def touch(uri: str) -> str:
        """Marks ``uri`` updated."""
        server.mark_resource_updated(uri)
        return f"touched {uri}"

    @server.tool(structured_output=False)
    def greet(ctx: Context) -> str:
        """Asks a name (one input round in 2026-07-28)."""
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = ctx.elicit("Your name?", schema, key="name")
        return f"Hello, {answer.data['name'] if answer.data else 'stranger'}!"

    @server.resource(SUBSCRIBED, mime_type="text/plain")
    def note() -> str:
        return "a note"

    return server


def wait_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Wait for an observable state, checking it every 20 ms, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        time.sleep(0.02)


class Heard:
    """The notifications a stream delivered, in order, with a way to wait for the next ones."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self._changed = threading.Condition()

    def add(self, method: str, params: dict[str, Any]) -> None:
        with self._changed:
            self.items.append((method, str(params.get("uri", ""))))
            self._changed.notify_all()

    def wait_for(self, count: int) -> list[tuple[str, str]]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.items) >= count, TIMEOUT), self.items
            return list(self.items)


class GetStream:
    """A handshake-era session (2025-11-25) subscribed to ``SUBSCRIBED``, its GET stream read on a thread."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port, parts.path
        self.heard = Heard()
        initialize = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "get-stream", "version": "1"},
        }
        _, headers = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        self.session = headers["Mcp-Session-Id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": SUBSCRIBED}}
        assert "result" in self.post(subscribe)[0]
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        self.connection.request("GET", self.path, headers={"Accept": "text/event-stream", **self.session_headers()})
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        self._reader = threading.Thread(target=self._read, name="test-get-stream")
        self._reader.start()

    def session_headers(self) -> dict[str, str]:
        session = getattr(self, "session", None)
        return {"MCP-Protocol-Version": "2025-11-25", **({"Mcp-Session-Id": session} if session else {})}

    def post(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            headers = {
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                **self.session_headers(),
            }
            connection.request("POST", self.path, json.dumps(message).encode(), headers)
            response = connection.getresponse()
            body = response.read()
            return (json.loads(body) if body else {}), dict(response.getheaders())
        finally:
            connection.close()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                text = line.decode().rstrip("\r\n")
                if text.startswith("data: ") and len(text) > 6:
                    message = json.loads(text[6:])
                    self.heard.add(message["method"], message.get("params") or {})
        except (OSError, ValueError):
            pass  # the connection was closed under the reader: the test is over

    def close(self) -> None:
        """End the stream: shut the socket (its reader sees the end), then close the connection."""
        self.connection.sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(TIMEOUT)
        self.connection.close()


class Sampler:
    """Answers sampling requests with a fixed text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked = 0

    def __call__(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.asked += 1
        return CreateMessageResult(role="assistant", content=TextContent(text=self.answer), model="test-model")


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def hosts(redis_server: RedisServer) -> Iterator[Callable[..., RunningHTTPServer]]:
    """Start apps on one Redis, each with a server of its own (closed at the end)."""
    started: list[tuple[RunningHTTPServer, MCPServer]] = []

    def start(server: MCPServer | None = None, **backend_options: Any) -> RunningHTTPServer:
        server = server or build_server()
        backend = RedisBackend(redis_server.url, timeout=0.5, **backend_options)
        running = start_http(server, ping_interval=0.2, backend=backend)
        started.append((running, server))
        return running

    yield start
    for running, server in started:
        running.close()
        server.stop()
    assert not [thread for thread in threading.enumerate() if thread.name == RECEIVER]


def backend_of(running: RunningHTTPServer) -> RedisBackend:
    backend = running.app.backend
    assert isinstance(backend, RedisBackend)
    return backend


# ------------------------------------------------------- start and closing


def test_an_app_is_not_made_without_its_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    with pytest.raises(BackendUnavailable) as raised:
        StreamableHTTPApp(build_server(), backend=dead)
    assert raised.value.code == MCP_CODES.INTERNAL_ERROR
    assert raised.value.message.startswith(f"Redis at {dead.replace('hunter2', '***')} is unavailable: ")
    assert "hunter2" not in str(raised.value)
    monkeypatch.setenv(REDIS_URL_VARIABLE, dead)
    with pytest.raises(BackendUnavailable):
        StreamableHTTPApp(build_server())
    monkeypatch.setitem(sys.modules, "redis", None)  # redis-py not installed
    with pytest.raises(BackendUnavailable, match=r"needs redis-py: pip install 'mcp-sync-py\[redis\]'"):
        RedisBackend(dead)


def test_the_environment_names_the_redis_and_a_backend_object_is_taken_as_is(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REDIS_URL_VARIABLE, redis_server.url)
    server = build_server()
    app = StreamableHTTPApp(server)
    assert isinstance(app.backend, RedisBackend) and server.backend is app.backend
    assert app.backend.url == redis_server.url and app.backend.channel == "mcp-sync:scale-test:notices"
    app.close()  # never served a request: no thread was started
    assert isinstance(server.backend, InProcessBackend)
    app.backend.close()  # again: nothing left to do
    app.backend.start()  # closed: starts nothing
    assert not [thread for thread in threading.enumerate() if thread.name == RECEIVER]
    mine = InProcessBackend()
    assert StreamableHTTPApp(build_server(), backend=mine).backend is mine


# ----------------------------------------------------------- the secret


def test_processes_share_the_request_state_secret_unless_given_one(
    hosts: Callable[..., RunningHTTPServer], redis_server: RedisServer
) -> None:
    first, second = hosts(), hosts()
    sealer_a, sealer_b = first.app.server.request_state_sealer, second.app.server.request_state_sealer
    assert sealer_a.secret_given and sealer_b.secret_given
    digest = sealer_a.digest("tools/call", {"name": "greet"})
    assert sealer_b.open(sealer_a.seal(digest, {"name": {"action": "cancel"}}), digest) == {
        "name": {"action": "cancel"}
    }
    # Over HTTP: the input round starts on one process and ends on the other.
    started = raw_call(first.url, "greet", {})
    assert started["resultType"] == "input_required"
    answers = {"name": {"action": "accept", "content": {"name": "Ada"}}}
    finished = raw_call(second.url, "greet", {}, inputResponses=answers, requestState=started["requestState"])
    assert finished["content"][0]["text"] == "Hello, Ada!"
    # A server given a secret keeps it.
    mine = build_server(request_state_secret=b"mine")
    hosts(mine)
    assert mine.request_state_sealer.open(mine.request_state_sealer.seal(digest, {}), digest) == {}
    with pytest.raises(MCPError):
        sealer_a.open(mine.request_state_sealer.seal(digest, {}), digest)


def raw_call(url: str, tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` POSTed by hand (the rounds of our client happen inside it)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta, **extra}
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        connection.request("POST", parts.path, json.dumps(body).encode(), headers)
        answer = json.loads(connection.getresponse().read())
        result: dict[str, Any] = answer["result"]
        return result
    finally:
        connection.close()


# --------------------------------------------------------- notifications


def test_notifications_of_either_process_reach_the_streams_of_both_once_in_order(
    hosts: Callable[..., RunningHTTPServer],
) -> None:
    first, second = hosts(), hosts()
    listened = Heard()
    with http_client(first.url, era="stateless") as listener, http_client(second.url, era="stateless") as toucher:
        subscription = listener.listen(tools=True, resource_uris=[SUBSCRIBED], on_notification=listened.add)
        get = GetStream(first.url)
        try:
            # Raised in the other process, by a client's call: delivered here through Redis.
            assert toucher.call_tool("touch", {"uri": SUBSCRIBED}).text == f"touched {SUBSCRIBED}"
            updated = ("notifications/resources/updated", SUBSCRIBED)
            assert listened.wait_for(1) == [updated]
            assert get.heard.wait_for(1) == [updated]
            # Raised in this process: delivered here at once, and not again when Redis echoes it back.
            first.app.server.mark_resource_updated(SUBSCRIBED)
            assert listened.wait_for(2) == [updated, updated]
            # A list change in the other process, last: had anything come twice, it would have come before it.
            second.app.server.register_tool("extra", lambda args, ctx: "x")
            changed = ("notifications/tools/list_changed", "")
            assert listened.wait_for(3) == [updated, updated, changed]
            assert get.heard.wait_for(3) == [updated, updated, changed]
            assert len(listened.items) == 3 and len(get.heard.items) == 3
        finally:
            subscription.close()
            get.close()


def test_what_cannot_be_read_or_delivered_is_logged_and_the_rest_goes_on(
    hosts: Callable[..., RunningHTTPServer], redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    first = hosts()
    backend = backend_of(first)
    delivered: list[Notice] = []
    failing = [True]

    def deliver(notice: Notice) -> None:
        if failing:
            failing.pop()
            raise RuntimeError("a session broke")
        delivered.append(notice)

    first.app.server.deliver = deliver  # type: ignore[method-assign]
    backend.start()
    import redis

    publisher = redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT)
    try:
        for junk in (b"not json", b'{"o": "x"}'):
            publisher.publish(backend.channel, junk)
        foreign = {"o": "elsewhere", "k": "list_changed", "s": "tools"}
        publisher.publish(backend.channel, json.dumps({**foreign, "k": "unknown"}))  # not a kind we know: skipped
        publisher.publish(backend.channel, json.dumps(foreign))  # delivery fails: logged
        publisher.publish(backend.channel, json.dumps({**foreign, "s": "prompts"}))  # the next one is delivered
    finally:
        publisher.close()
    with caplog.at_level(logging.WARNING, "mcp_sync.server"):
        wait_until(lambda: delivered == [Notice("list_changed", "prompts")], "the last notice was delivered")
    messages = [record.getMessage() for record in caplog.records]
    assert messages.count(f"ignored a malformed message on {backend.channel}") == 2
    assert "delivering a notification from another process failed" in messages


def test_redis_going_away_fails_publishing_requests_and_its_return_heals(
    hosts: Callable[..., RunningHTTPServer], redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mcp_sync.server")
    first, second = hosts(), hosts(build_server(request_state_secret=b"its own"))
    listened = Heard()
    with http_client(first.url, era="stateless") as listener, http_client(second.url, era="stateless") as toucher:
        subscription = listener.listen(resource_uris=[SUBSCRIBED], on_notification=listened.add)
        try:
            secret_before = first.app.server.request_state_sealer
            redis_server.stop()
            # A call that must publish fails with a typed error (nothing hangs; the client's own timeout is 10 s).
            with pytest.raises(MCPError) as failed:
                toucher.call_tool("touch", {"uri": SUBSCRIBED})
            assert failed.value.code == MCP_CODES.INTERNAL_ERROR
            assert "backend is unavailable" in failed.value.message and "127.0.0.1" not in failed.value.message
            with pytest.raises(BackendUnavailable):
                first.app.server.mark_resource_updated(SUBSCRIBED)
            # The first process's stream heard its own process's change anyway: it was delivered before publishing.
            assert listened.wait_for(1) == [("notifications/resources/updated", SUBSCRIBED)]
            # Calls that publish nothing go on.
            assert toucher.read_resource(SUBSCRIBED).contents[0].text == "a note"  # type: ignore[union-attr]
            for running in (first, second):
                wait_until(lambda running=running: backend_of(running).failures >= 2, "the receivers retried")
                assert not backend_of(running).receiving
            # A new process cannot start meanwhile, and says why.
            with pytest.raises(BackendUnavailable):
                RedisBackend(redis_server.url, timeout=0.5)
            redis_server.start()
            for running in (first, second):
                wait_until(lambda running=running: backend_of(running).receiving, "the receivers subscribed again")
            assert toucher.call_tool("touch", {"uri": SUBSCRIBED}).text == f"touched {SUBSCRIBED}"
            assert listened.wait_for(2) == [("notifications/resources/updated", SUBSCRIBED)] * 2
            # The secret was put back in the Redis that lost it: a process starting now shares it.
            later = build_server()
            hosts(later)
            digest = later.request_state_sealer.digest("tools/call", {})
            assert secret_before.open(later.request_state_sealer.seal(digest, {}), digest) == {}
        finally:
            subscription.close()
    messages = [record.getMessage() for record in caplog.records]
    assert any(message.startswith(f"lost Redis at {redis_server.url}") for message in messages)
    assert f"subscribed to Redis at {redis_server.url} again" in messages


def test_a_process_starting_while_redis_is_away_says_so_and_subscribes_when_it_returns(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_server()
    backend = RedisBackend(redis_server.url, timeout=0.3)
    backend.attach(server)
    try:
        redis_server.stop()
        backend.start()  # waits its timeout for the subscription, then goes on: the thread keeps trying
        assert "not yet subscribed to Redis" in caplog.text
        assert not backend.receiving
        redis_server.start()
        wait_until(lambda: backend.receiving, "the receiver subscribed")
    finally:
        backend.close()
    assert not [thread for thread in threading.enumerate() if thread.name == RECEIVER]


# ------------------------------------------------- gunicorn, four workers, one Redis

SCALED_APP = "examples.scaled_app:application"


@pytest.fixture(scope="module", params=[False, True], ids=["app-per-worker", "preload"])
def scaled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Hosted, RedisServer]]:
    """``examples/scaled_app.py`` under gunicorn, four workers, a new connection for every request.

    With ``--preload`` the app (and its backend) is made in the master before the workers are forked:
    each worker must start its own receiving thread and publish under its own mark.
    """
    tmp = tmp_path_factory.mktemp("scaled")
    with running_redis(tmp / "redis.log") as redis_server:
        preload = ["--preload"] if request.param else []
        argv = gunicorn("--threads", "8", "-w", "4", "--keep-alive", "0", *preload, SCALED_APP)
        with hosting("gunicorn-4", argv, tmp, sigterm_status=0, MCP_SYNC_REDIS_URL=redis_server.url) as hosted:
            yield hosted, redis_server


def workers_of(hosted: Hosted) -> set[int]:
    return set(group_members(hosted.pgid)) - {hosted.pgid}


def calls_spread_over_workers(hosted: Hosted, era: Literal["handshake", "stateless"]) -> None:
    """4 clients of ``era`` call at once (echo and pid), first wherever the kernel puts each connection, then on each
    worker in turn (the others stopped): every worker serves every client's session, without error."""
    url = hosted.base + "/mcp"
    wait_until(lambda: len(workers_of(hosted)) == 4, "gunicorn's four workers run")  # (forked one by one)
    workers = workers_of(hosted)
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(http_client(url, era=era, timeout=TIMEOUT)) for _ in range(4)]
        assert {client.negotiated_era for client in clients} == {era}

        def calls(count: int) -> set[int]:
            def work(index: int) -> set[int]:
                pids = set()
                for n in range(count):
                    if n % 2:
                        assert clients[index].call_tool("echo", {"text": f"{index}.{n}"}).text == f"{index}.{n}"
                    else:
                        pids.add(clients[index].call_tool("pid").structured_content["result"])  # type: ignore[index]
                return pids

            return set().union(*in_threads(4, work))

        assert calls(50) <= workers
        for worker in sorted(workers):
            with stopped(workers - {worker}):
                assert calls(6) == {worker}


def test_200_calls_spread_over_the_workers_with_progress_and_sampling_rounds(
    scaled: tuple[Hosted, RedisServer],
) -> None:
    hosted, _ = scaled
    url = hosted.base + "/mcp"
    calls_spread_over_workers(hosted, "stateless")
    sampler = Sampler("blue")
    with http_client(url, era="stateless", timeout=TIMEOUT, sampling_provider=sampler) as client:
        for _ in range(3):
            seen: list[ProgressNotificationParams] = []
            assert client.call_tool("progress", {"steps": 5}, progress=seen.append).text == "5 steps"
            assert [(p.progress, p.total) for p in seen] == [(step, 5) for step in range(1, 6)]
        # Each answer is a retry that any worker may take: it opens the requestState another one sealed.
        for _ in range(6):
            assert client.call_tool("ask", {"question": "What colour is the sky?"}).text == "blue"
    assert sampler.asked == 6


def test_a_listen_stream_hears_touches_served_by_other_workers(scaled: tuple[Hosted, RedisServer]) -> None:
    hosted, _ = scaled
    url = hosted.base + "/mcp"
    listened = Heard()
    touched_by: list[int] = []
    with http_client(url, era="stateless", timeout=TIMEOUT) as listener:
        subscription = listener.listen(resource_uris=[SUBSCRIBED], on_notification=listened.add)
        try:
            with http_client(url, era="stateless", timeout=TIMEOUT) as toucher:

                def touch() -> int:
                    """The worker that made the touch."""
                    text = toucher.call_tool("touch", {"uri": SUBSCRIBED}).text
                    assert text.startswith(f"{SUBSCRIBED} touched by process ")
                    return int(text.rpartition(" ")[2])

                # A touch, then three with its worker stopped: two workers or more touch, so one of them is not
                # the one holding the listen stream. Each touch is heard once (once every worker runs again).
                touched_by.append(touch())
                for _ in range(3):
                    with stopped({touched_by[0]}):
                        touched_by.append(touch())
                    heard = listened.wait_for(len(touched_by))
                    assert heard == [("notifications/resources/updated", SUBSCRIBED)] * len(touched_by)
                assert touched_by[0] not in touched_by[1:]
        finally:
            subscription.close()
    assert set(touched_by) <= workers_of(hosted)


def test_redis_going_away_fails_touches_not_other_calls_and_its_return_heals(
    scaled: tuple[Hosted, RedisServer],
) -> None:
    hosted, redis_server = scaled
    with http_client(hosted.base + "/mcp", era="stateless", timeout=TIMEOUT) as client:
        redis_server.stop()
        for _ in range(4):  # whichever workers the calls reach
            with pytest.raises(MCPError) as failed:
                client.call_tool("touch", {"uri": SUBSCRIBED})
            assert failed.value.code == MCP_CODES.INTERNAL_ERROR
            assert client.call_tool("echo", {"text": "still here"}).text == "still here"
        redis_server.start()
        for _ in range(4):
            assert client.call_tool("touch", {"uri": SUBSCRIBED}).text.startswith(f"{SUBSCRIBED} touched by")
    assert "Traceback" not in hosted.output()


# ------------------------------------------- two single-worker processes on two ports


@pytest.mark.timeout(90)
def test_two_processes_on_two_ports_share_rounds_and_notifications(tmp_path: Path) -> None:
    """Two gunicorn masters, one worker each, one Redis: as two machines behind a per-request round robin.

    An input round started on one is finished on the other (the secret came from Redis, not from
    the environment), and a handshake-era session's GET stream on the first hears the touch
    served by the second, then its own process's, each once.
    """
    with running_redis(tmp_path / "redis.log") as redis_server:
        argv = gunicorn("--threads", "8", "-w", "1", SCALED_APP)
        env = {"MCP_SYNC_REDIS_URL": redis_server.url}
        with (
            hosting("machine-a", argv, tmp_path, sigterm_status=0, **env) as first,
            hosting("machine-b", argv, tmp_path, sigterm_status=0, **env) as second,
        ):
            a, b = first.base + "/mcp", second.base + "/mcp"
            started = raw_call(a, "ask", {"question": "Sky?"})
            assert started["resultType"] == "input_required"
            [key] = started["inputRequests"]
            answer = {"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m"}
            done = raw_call(
                b,
                "ask",
                {"question": "Sky?"},
                inputResponses={key: answer},
                **{"requestState": started["requestState"]},
            )
            assert done["content"][0]["text"] == "blue"
            get = GetStream(a)
            try:
                touched = ("notifications/resources/updated", SUBSCRIBED)
                assert raw_call(b, "touch", {"uri": SUBSCRIBED})["content"][0]["text"].startswith(SUBSCRIBED)
                assert get.heard.wait_for(1) == [touched]
                assert raw_call(a, "touch", {"uri": SUBSCRIBED})["content"][0]["text"].startswith(SUBSCRIBED)
                assert get.heard.wait_for(2) == [touched, touched]
                assert raw_call(b, "touch", {"uri": SUBSCRIBED})["content"][0]["text"].startswith(SUBSCRIBED)
                assert get.heard.wait_for(3) == [touched] * 3  # nothing came twice before it
                assert len(get.heard.items) == 3
            finally:
                get.close()
