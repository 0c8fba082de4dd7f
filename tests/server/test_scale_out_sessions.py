"""Handshake-era sessions shared by several processes through a real Redis (issue 14, part two).

In this process, two apps each with a server of their own stand for two
processes (they share only Redis), behind a round-robin router standing for
a load balancer: our client in the handshake era is served by both, gets its
progress, answers a sampling request raised on one through the other, hears
a resource update raised on the other, changes its log level on one and the
other's copy follows, and its DELETE ends the session everywhere (nothing left
in Redis). Then the edges: a record gone from Redis (expiry) ends the copies,
a malformed record, Redis away (503), legacy sessions left alone.

Under gunicorn, ``examples/scaled_app.py`` with four workers and
``--keep-alive 0``: 200 calls of our handshake-era client served by at least
three workers with every progress notification, ``ask`` answered through
another worker, a touch by another client heard, and no key left in Redis
after the sessions end.
"""

from __future__ import annotations

import collections
import http.client
import itertools
import json
import logging
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import peers
import pytest
import redis
from redisserver import RedisServer, running_redis
from test_hosting import Hosted, gunicorn, hosting, stopped
from test_scale_out import TIMEOUT, Sampler, calls_spread_over_workers, wait_until, workers_of

from mcp_sync import Context, MCPServer
from mcp_sync.client import http_client
from mcp_sync.server import StreamableHTTPApp
from mcp_sync.server.backend import BackendUnavailable, Notice
from mcp_sync.server.http.event_store import InMemoryEventStore
from mcp_sync.server.http.sessions import HTTPSession, SessionRegistry, StreamableSessionTransport
from mcp_sync.server.http.wsgi import WSGIServer
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.session_records import SessionUpdate
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import JSONRPCNotification, ProgressNotificationParams

SUBSCRIBED = "notes://1"
NAME = "shared-sessions"
KEYS = f"mcp-sync:{NAME}:session:*"

pytestmark = pytest.mark.timeout(60)

HELD: dict[str, threading.Event] = collections.defaultdict(threading.Event)
"""The ``hold`` calls running, by tag (set when the handler starts)."""
CANCELLED: dict[str, threading.Event] = collections.defaultdict(threading.Event)
"""The ``hold`` calls whose handler heard of its cancellation, by tag."""


def build_server(label: str) -> MCPServer:
    server = MCPServer(NAME, "1.0")

    @server.tool(structured_output=False)
    def hold(tag: str, ctx: Context) -> str:
        """Wait until cancelled (at most TIMEOUT seconds)."""
        HELD[tag].set()
        if ctx.cancelled.wait(TIMEOUT):
            CANCELLED[tag].set()
        return f"{label} held {tag}"

    @server.tool(structured_output=False)
    def where() -> str:
        """Which process (app) served the call."""
        return label

    @server.tool(structured_output=False)
    def progress(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            ctx.progress(step, steps)
        return f"{steps} steps"

    @server.tool(structured_output=False)
    def ask(question: str, ctx: Context) -> str:
        answer = ctx.sample(question, max_tokens=10)
        return f"{label}: {getattr(answer.content, 'text', '')}"

    @server.tool(structured_output=False)
    def touch() -> str:
        server.mark_resource_updated(SUBSCRIBED)
        return label

    @server.resource(SUBSCRIBED, mime_type="text/plain")
    def note() -> str:
        return "a note"

    return server


class Router:
    """A load balancer in one process: each request goes to the next app in turn."""

    def __init__(self, apps: list[StreamableHTTPApp]) -> None:
        self.apps = apps
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self._lock:
            app = self.apps[next(self._turn) % len(self.apps)]
        return app(environ, start_response)


class Pair:
    """Two apps on one Redis, each on a port of its own, and a router in front of both."""

    def __init__(self, redis_url: str, *, events_in_memory: bool = False) -> None:
        self.apps = [
            StreamableHTTPApp(
                build_server(label),
                ping_interval=0.2,
                backend=RedisBackend(redis_url, timeout=0.5),
                # Each process's own store: what is for a GET stream open elsewhere is passed on, not shared.
                event_store=InMemoryEventStore() if events_in_memory else None,
            )
            for label in ("a", "b")
        ]
        for app in self.apps:
            app.backend.start()
        self.hosts = [WSGIServer(app, "127.0.0.1", 0) for app in self.apps]
        self.router = WSGIServer(Router(self.apps), "127.0.0.1", 0)
        for host in (*self.hosts, self.router):
            host.start()
        self.urls = [host.url + "/mcp" for host in self.hosts]
        self.url = self.router.url + "/mcp"
        self.delivered: list[str] = []  # which app delivered a response POSTed to the other
        for app, label in zip(self.apps, ("a", "b"), strict=True):
            app.shared.session_message = self._spy(app.shared.session_message, label)  # type: ignore[method-assign]

    def _spy(self, deliver: Callable[[str, dict[str, Any]], None], label: str) -> Callable[[str, dict[str, Any]], None]:
        def spy(session_id: str, message: dict[str, Any]) -> None:
            self.delivered.append(label)
            deliver(session_id, message)

        return spy

    def close(self) -> None:
        for host in (self.router, *self.hosts):
            host.close()
        for app in self.apps:
            app.close()
            app.server.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url)
    yield made
    made.close()
    assert not [thread for thread in threading.enumerate() if thread.name == "mcp-sync-redis-receiver"]


@pytest.fixture(params=[False, True], ids=["events-in-redis", "events-in-memory"])
def either_pair(request: pytest.FixtureRequest, redis_server: RedisServer) -> Iterator[Pair]:
    """A pair whose event store is shared (Redis, the default) or each app's own."""
    made = Pair(redis_server.url, events_in_memory=request.param)
    yield made
    made.close()


@pytest.fixture
def keys(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT)
    yield client
    client.close()


def post(url: str, message: dict[str, Any], session: str | None = None, method: str = "POST") -> tuple[int, Any]:
    """One request by hand: its status and JSON body (``None`` when empty or a stream)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
            **({"Mcp-Session-Id": session} if session else {}),
        }
        connection.request(method, parts.path, json.dumps(message).encode() if method == "POST" else None, headers)
        response = connection.getresponse()
        body = response.read()
        kind = response.getheader("Content-Type") or ""
        return response.status, json.loads(body) if body and kind.startswith("application/json") else None
    finally:
        connection.close()


def initialize(url: str) -> str:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        connection.request("POST", parts.path, json.dumps(body).encode(), headers)
        response = connection.getresponse()
        response.read()
        session = response.getheader("Mcp-Session-Id")
        assert response.status == 200 and session
        return session
    finally:
        connection.close()


def ping(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "ping"}


# ------------------------------------------------------------- two apps in one process


def test_a_handshake_session_is_served_by_both_processes_and_ends_everywhere(pair: Pair, keys: redis.Redis) -> None:
    sampler = Sampler("blue")
    updated = threading.Event()
    heard: list[str] = []
    with http_client(pair.url, era="handshake", sampling_provider=sampler, timeout=TIMEOUT) as client:
        assert client.negotiated_era == "handshake"
        assert {client.call_tool("where").text for _ in range(6)} == {"a", "b"}
        for _ in range(2):
            seen: list[ProgressNotificationParams] = []
            assert client.call_tool("progress", {"steps": 4}, progress=seen.append).text == "4 steps"
            assert [p.progress for p in seen] == [1, 2, 3, 4]
        # The sampling request goes out on the POST of the call; the client's answer, POSTed next, reaches the
        # other app, which passes it on through Redis to the app whose handler waits.
        answers = {client.call_tool("ask", {"question": "Sky?"}).text for _ in range(4)}
        assert answers <= {"a: blue", "b: blue"} and sampler.asked == 4
        assert pair.delivered and set(pair.delivered) <= {"a", "b"}
        [session_id] = [entry.session_id for entry in pair.apps[0].sessions._sessions.values()]
        # Both processes hold a copy; a change made through one reaches the other's.
        client.set_log_level("error")
        for app in pair.apps:
            wait_until(lambda app=app: _copy(app, session_id).session.log_level == "error", "both copies changed")
        client.events.on("resource:updated", lambda payload: (heard.append(payload.uri), updated.set()))
        client.subscribe_resource(SUBSCRIBED)
        for app in pair.apps:
            wait_until(lambda app=app: SUBSCRIBED in _copy(app, session_id).session.subscriptions, "both subscribed")
        pair.apps[1].server.mark_resource_updated(SUBSCRIBED)  # whichever app holds the GET stream, it writes it
        assert updated.wait(TIMEOUT)
        # Touched by the client itself, on either app: once each, on the GET stream (never also on the call's POST).
        touched_by: list[str] = []
        while set(touched_by) != {"a", "b"}:  # the client's rereads take turns too
            assert len(touched_by) < 6, touched_by
            touched_by.append(client.call_tool("touch").text)
            wait_until(lambda: len(heard) == len(touched_by) + 1, "the update heard")
            client.call_tool("where")  # one request more: the next touch goes to the other app, or the one after
        assert client.call_tool("where").text in {"a", "b"}  # anything more would have come before this answer
        assert len(heard) == len(touched_by) + 1
        record = pair.apps[0].backend.load_session(session_id, 3600)
        assert record is not None
        assert record.log_level == "error" and record.subscriptions == {SUBSCRIBED}
        assert record.client_info is not None and record.capabilities.get("sampling") == {}
        assert 0 < keys.ttl(f"mcp-sync:{NAME}:session:{session_id}") <= 3600
    # The client's DELETE reached one app: the record is gone and both copies ended.
    for app in pair.apps:
        wait_until(lambda app=app: len(app.sessions) == 0, "both copies ended")
    assert keys.keys(KEYS) == []


def _copy(app: StreamableHTTPApp, session_id: str) -> HTTPSession:
    entry = app.sessions.peek(session_id)
    assert entry is not None
    return entry


def test_a_record_gone_or_broken_ends_the_session_and_redis_away_gives_503(
    pair: Pair, keys: redis.Redis, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pair.urls
    session = initialize(a)
    assert post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    assert post(a, ping(2), session) == (200, {"jsonrpc": "2.0", "id": 2, "result": {}})
    assert _copy(pair.apps[0], session).session.initialized.is_set()
    # An answer to no request at all (id null): passed on, and no process delivers it.
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "nothing"}}
    assert post(b, error, session)[0] == 202
    wait_until(lambda: len(pair.delivered) == 1, "the other app was told")
    # The record expired (deleted here): the copies end at their next request.
    keys.delete(f"mcp-sync:{NAME}:session:{session}")
    assert post(a, ping(3), session)[0] == 404
    assert pair.apps[0].sessions.peek(session) is None
    # A malformed record is no session.
    keys.hset(f"mcp-sync:{NAME}:session:broken", "no", "revision")
    with caplog.at_level(logging.WARNING, "mcp_sync.server"):
        assert post(b, ping(4), "broken")[0] == 404
    assert "ignored a malformed session record" in caplog.text
    assert post(b, ping(4), "never-made")[0] == 404
    # A process whose registry is full cannot take a session in: 404 there, served by the others.
    session = initialize(a)
    pair.apps[1].sessions.max_sessions = 0
    assert post(b, ping(4), session)[0] == 404
    pair.apps[1].sessions.max_sessions = 1000
    assert post(b, ping(4), session)[0] == 200
    # Redis away: requests of shared sessions get 503 (nothing hangs), and work again once it is back.
    session = initialize(a)
    redis_server.stop()
    status, body = post(b, ping(5), session)
    assert status == 503 and "backend is unavailable" in body["error"]["message"]
    assert post(a, ping(6), session)[0] == 503
    redis_server.start()
    wait_until(lambda: all(app.backend.receiving for app in pair.apps), "both subscribed again")  # type: ignore[attr-defined]
    # Redis lost the record with its restart: the session is gone.
    assert post(a, ping(7), session)[0] == 404


def test_an_open_get_stream_keeps_the_shared_session_alive(pair: Pair, keys: redis.Redis) -> None:
    # In one process an open stream counts as activity; shared, each ping of the GET stream pushes the record's
    # expiry away, so a client that only listens keeps its session, and its subscriptions, in every process (the
    # soak: a client waiting 30 s elsewhere had its session end, and never heard of its resource again).
    with http_client(pair.url, era="handshake", timeout=TIMEOUT) as client:
        client.subscribe_resource(SUBSCRIBED)
        (key,) = keys.keys(KEYS)
        keys.pexpire(key, 2000)  # as if the session had been idle for all but 2 s of its timeout
        wait_until(lambda: keys.pttl(key) > 60_000, "a ping of the GET stream pushed the expiry away")
        assert client.call_tool("where", {}).text in ("a", "b")
        assert keys.keys(KEYS) == [key]  # the same session, not a new one


def test_a_get_stream_pings_on_while_redis_is_away(redis_server: RedisServer) -> None:
    # Each ping pushes the session's record's expiry away; with Redis gone it cannot, and the stream goes on
    # (the next ping tries again). Events kept in memory here, so that reading the stream needs no Redis.
    pair = Pair(redis_server.url, events_in_memory=True)
    session = initialize(pair.urls[0])
    connection, response = open_get(pair.urls[0], session)
    try:
        assert response.status == 200
        redis_server.stop()
        pings = 0
        while pings < 3:  # each one after a failed touch (0.2 s apart)
            line = response.readline()
            assert line, "the stream ended while Redis was away"
            pings += line == b": ping\n"
    finally:
        connection.close()
        redis_server.start()
        wait_until(lambda: all(app.backend.receiving for app in pair.apps), "both subscribed again")  # type: ignore[attr-defined]
        pair.close()


def test_a_cancellation_posted_to_another_process_reaches_the_handler_where_it_runs(pair: Pair) -> None:
    # The client's POSTs go to any process: the call to one, its cancellation to the other. The handler hears of it
    # at once (it waited out its whole run before), and the GET stream, wherever open, is sent nothing of it.
    a, b = pair.urls
    session = initialize(a)
    assert post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    for number, (to_call, to_cancel) in enumerate([(a, a), (a, b), (b, a)]):
        tag = f"hold-{number}"
        call = {"jsonrpc": "2.0", "id": number + 10, "method": "tools/call"}
        call["params"] = {"name": "hold", "arguments": {"tag": tag}}
        answered: list[tuple[int, Any]] = []

        def make_call(call: dict[str, Any] = call, url: str = to_call, answered: list[Any] = answered) -> None:
            answered.append(post(url, call, session))

        caller = threading.Thread(target=make_call)
        caller.start()
        assert HELD[tag].wait(TIMEOUT)
        cancelled = {"requestId": number + 10, "reason": "changed my mind"}
        assert (
            post(to_cancel, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled}, session)[0]
            == 202
        )
        assert CANCELLED[tag].wait(TIMEOUT), f"the handler of {tag} never heard of its cancellation"
        caller.join(TIMEOUT)
        assert answered and answered[0][0] == 200  # its POST ends (a cancelled request gets no answer)


def test_failing_to_pass_on_an_answer_or_an_end_gives_503(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair.urls
    session = initialize(a)

    def down(*args: Any) -> None:
        raise BackendUnavailable("down")

    for app in pair.apps:
        monkeypatch.setattr(app.backend, "send_to_session", down)
        monkeypatch.setattr(app.backend, "end_session", down)
    answer = {"jsonrpc": "2.0", "id": "nobody-1", "result": {}}
    assert post(b, answer, session)[0] == 503
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    assert post(b, cancelled, session)[0] == 503
    assert post(a, {}, session, method="DELETE")[0] == 503
    assert pair.apps[0].sessions.peek(session) is None  # ended here all the same


def test_messages_for_the_get_stream_reach_it_in_whichever_process_it_is_open(either_pair: Pair) -> None:
    """A log message raised outside a call, and a request to the client outside a call, in either process."""
    logs: list[Any] = []
    heard = threading.Condition()

    def on_log(params: Any) -> None:
        with heard:
            logs.append(params.data)
            heard.notify_all()

    pair = either_pair
    with http_client(pair.url, era="handshake", timeout=TIMEOUT, log_handler=on_log) as client:
        while True:  # until both apps hold a copy (the GET stream is open in one of them)
            ids = [set(app.sessions._sessions) for app in pair.apps]
            if ids[0] and ids[0] == ids[1]:
                break
            client.call_tool("where")
        [session_id] = ids[0]
        copies = [_copy(app, session_id) for app in pair.apps]
        wait_until(
            lambda: any(c.transport.standalone.consumer is not None for c in copies),  # type: ignore[union-attr]
            "the GET stream is open",
        )
        holder = next(c for c in copies if c.transport.standalone.consumer is not None)  # type: ignore[union-attr]
        other = next(c for c in copies if c is not holder)
        for number, copy in enumerate((other, holder, other)):
            copy.session.log("warning", f"note {number}")
            with heard:
                assert heard.wait_for(lambda number=number: len(logs) == number + 1, TIMEOUT), logs
        other.session.ping(timeout=TIMEOUT)  # asked by the process without the stream; answered by a POST anywhere
        holder.session.ping(timeout=TIMEOUT)
        assert logs == ["note 0", "note 1", "note 2"]


def open_get(url: str, session: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}
    connection.request("GET", parts.path, headers=headers)
    return connection, connection.getresponse()


def test_a_get_stream_opened_in_one_process_ends_the_one_open_in_another(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair.urls
    session = initialize(a)
    first, first_response = open_get(a, session)
    assert first_response.status == 200
    wait_until(lambda: _copy(pair.apps[0], session).transport.standalone.consumer is not None, "the stream is read")  # type: ignore[union-attr]
    second, second_response = open_get(b, session)
    try:
        assert second_response.status == 200
        first_response.read()  # returns at the end of the stream (within the socket's timeout otherwise)
        assert _copy(pair.apps[0], session).transport.standalone.consumer is None  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()

    def down(session_id: str) -> None:
        raise BackendUnavailable("down")

    monkeypatch.setattr(pair.apps[0].backend, "stream_opened", down)
    third, third_response = open_get(a, session)
    try:
        assert third_response.status == 503
        assert _copy(pair.apps[0], session).transport.standalone.consumer is None  # type: ignore[union-attr]
    finally:
        third.close()


def test_what_other_processes_say_of_sessions_not_held_here_is_ignored(pair: Pair, redis_server: RedisServer) -> None:
    app = pair.apps[0]
    app.shared.session_updated("unknown", SessionUpdate(log_level="debug"))
    app.shared.session_message("unknown", {"jsonrpc": "2.0", "id": 1, "result": {}})
    app.shared.session_ended("unknown")
    app.shared.session_stream_opened("unknown")
    # A legacy (2024-11-05) session is not shared: its copy takes nothing, and /mcp does not serve it.
    transport = StreamableSessionTransport(event_store=None)
    legacy_entry = _legacy(app)
    app.shared.session_updated(legacy_entry.session_id, SessionUpdate(log_level="debug"))
    assert legacy_entry.session.log_level is None
    app.shared.session_message(legacy_entry.session_id, {"jsonrpc": "2.0", "id": 1, "result": {}})
    app.shared.session_stream_opened(legacy_entry.session_id)
    assert post(pair.urls[0], ping(1), legacy_entry.session_id)[0] == 404
    transport.close()
    # A response nobody here waits for is not delivered.
    session = initialize(pair.urls[0])
    app.shared.session_message(session, {"jsonrpc": "2.0", "id": "elsewhere-1", "result": {}})
    app.shared.session_stream_opened(session)  # no GET stream open here: nothing to end
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    app.shared.session_message(session, log)  # nor anything to write on
    assert not _copy(app, session).transport.write_standalone(JSONRPCNotification(method="notifications/x"))  # type: ignore[union-attr]
    assert _copy(app, session).session.dispatcher.awaits("elsewhere-1") is False


def _legacy(app: StreamableHTTPApp) -> HTTPSession:
    from mcp_sync.server.http.sessions import LegacySSETransport

    transport = LegacySSETransport()
    session = app.server.start(transport)
    entry = HTTPSession(SessionRegistry.new_id(), transport, session, None, 0.0)
    assert app.sessions.add(entry)
    app.sessions.release(entry)
    return entry


def test_the_receiver_ignores_session_messages_it_cannot_use(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RedisBackend(redis_server.url, timeout=0.5)
    server = build_server("alone")
    backend.attach(server)
    backend.start()
    publisher = redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT)
    heard: list[str] = []

    class Listener:
        def session_ended(self, session_id: str) -> None:
            heard.append(f"ended {session_id}")

        def session_updated(self, session_id: str, update: SessionUpdate) -> None:
            heard.append(f"updated {session_id} {update.log_level}")

        def session_message(self, session_id: str, message: dict[str, Any]) -> None:
            heard.append(f"message {session_id}")

    delivered: list[Notice] = []
    server.deliver = delivered.append  # type: ignore[method-assign]
    try:
        publisher.publish(backend.channel, json.dumps({"o": "x", "k": "session_ended", "s": "s0"}))  # no listener yet
        publisher.publish(backend.channel, json.dumps({"o": "x", "k": "list_changed", "s": "tools"}))
        wait_until(lambda: delivered == [Notice("list_changed", "tools")], "what came before was handled")
        with caplog.at_level(logging.ERROR, "mcp_sync.server"):
            backend.listen_sessions(Listener())
            for fields in (
                {"k": "session_ended", "s": 5},  # no session's id: skipped
                {"k": "session_update", "s": "s1", "u": "junk"},  # logged
                {"k": "session_message", "s": "s2", "m": "not an object"},  # skipped
                {"k": "session_message", "s": "s3", "m": {"jsonrpc": "2.0", "id": 1, "result": {}}},
                {"k": "session_update", "s": "s4", "u": SessionUpdate(log_level="info").to_wire()},
                {"k": "session_ended", "s": "s5"},
            ):
                publisher.publish(backend.channel, json.dumps({"o": "x", **fields}))
            wait_until(lambda: len(heard) == 3, "the last three were heard")
        assert heard == ["message s3", "updated s4 info", "ended s5"]
        assert "handling a session message from another process failed" in caplog.text
    finally:
        publisher.close()
        backend.close()
        server.stop()


def test_the_registry_adopts_a_session_once() -> None:
    now = [0.0]
    registry = SessionRegistry(max_sessions=2, idle_timeout=10.0, clock=lambda: now[0])
    server = MCPServer("registry")

    def entry(session_id: str) -> HTTPSession:
        transport = InMemoryTransport.pair()[0]
        return HTTPSession(session_id, StreamableSessionTransport(event_store=None), server.start(transport), None, 0)

    first = entry("s")
    assert registry.adopt(first) is first
    assert registry.adopt(entry("s")) is first  # made at once elsewhere: the kept one wins
    registry.release(first)
    registry.release(first)
    now[0] = 20.0  # expired: replaced by the new copy, the old one ended
    second = entry("s")
    assert registry.adopt(second) is second and first.session.closed
    assert registry.adopt(entry("t")) is not None
    assert registry.adopt(entry("u")) is None  # full
    assert registry.peek("s") is second and registry.peek("nope") is None
    server.stop()


# ------------------------------------------------- gunicorn, four workers, one Redis

SCALED_APP = "examples.scaled_app:application"


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hosted, RedisServer]]:
    tmp = tmp_path_factory.mktemp("scaled-sessions")
    with running_redis(tmp / "redis.log") as redis_server:
        argv = gunicorn("--threads", "8", "-w", "4", "--keep-alive", "0", SCALED_APP)
        with hosting("gunicorn-4", argv, tmp, sigterm_status=0, MCP_SYNC_REDIS_URL=redis_server.url) as hosted:
            yield hosted, redis_server


@pytest.mark.timeout(120)
def test_handshake_clients_are_served_by_any_worker(scaled: tuple[Hosted, RedisServer]) -> None:
    hosted, redis_server = scaled
    url = hosted.base + "/mcp"
    calls_spread_over_workers(hosted, "handshake")
    sampler = Sampler("blue")
    updated = threading.Event()
    with (
        http_client(url, era="handshake", timeout=TIMEOUT, sampling_provider=sampler) as client,
        http_client(url, era="handshake", timeout=TIMEOUT) as toucher,
    ):
        for _ in range(3):
            seen: list[ProgressNotificationParams] = []
            assert client.call_tool("progress", {"steps": 5}, progress=seen.append).text == "5 steps"
            assert [(p.progress, p.total) for p in seen] == [(step, 5) for step in range(1, 6)]
        for _ in range(6):  # the answer to each sampling request is POSTed anew: any worker may take it
            assert client.call_tool("ask", {"question": "What colour is the sky?"}).text == "blue"
        assert sampler.asked == 6
        client.events.on("resource:updated", lambda payload: updated.set())
        client.subscribe_resource("notes://1")

        def touch() -> int:
            """The worker that made the touch."""
            updated.clear()
            return int(toucher.call_tool("touch", {"uri": "notes://1"}).text.rpartition(" ")[2])

        first = touch()
        assert updated.wait(TIMEOUT)
        with stopped({first}):  # the next touch is made on another worker (one of the two holds no stream of ours)
            second = touch()
        assert second != first
        assert updated.wait(TIMEOUT)  # heard, once the first worker runs again if it holds the client's stream
    store = redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT)
    try:
        assert store.keys("mcp-sync:scaled-example:session:*") == []  # every client's DELETE ended its session
    finally:
        store.close()
    assert "Traceback" not in hosted.output()


SDK_DRIVER = """
import contextlib, json, sys, warnings
import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

warnings.simplefilter("ignore")
url = sys.argv[1]


async def main():
    out = {"pids": [], "progress": [], "asked": 0, "updated": 0, "touched_by": []}
    updated = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            out["updated"] += 1
            updated.set()

    async def sample(context, params):
        out["asked"] += 1
        text = types.TextContent(type="text", text="blue")
        return types.CreateMessageResult(role="assistant", content=text, model="sdk")

    async def open_session(stack):
        streams = await stack.enter_async_context(streamable_http_client(url))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        out["version"] = (await session.initialize()).protocol_version
        return session

    async def calls(session, index, count, pids):
        for n in range(count):
            if n % 2:
                result = await session.call_tool("echo", {"text": f"{index}.{n}"})
                assert result.content[0].text == f"{index}.{n}", result
            else:
                pids.append((await session.call_tool("pid", {})).structured_content["result"])

    async def round_of(sessions, count):
        # The sessions make count calls each, at once; the pids that answered go to the test.
        pids = []
        async with anyio.create_task_group() as group:
            for index, session in enumerate(sessions):
                group.start_soon(calls, session, index, count, pids)
        out["pids"] += pids
        print(json.dumps({"round": sorted(set(pids))}), flush=True)

    with anyio.fail_after(100):
        async with contextlib.AsyncExitStack() as stack:
            sessions = [await open_session(stack) for _ in range(4)]
            # The test says when to make a round, and of how many calls: it steers them to the workers it wants.
            while (line := (await anyio.to_thread.run_sync(sys.stdin.readline)).strip()) != "rest":
                await round_of(sessions, int(line))
        async with streamable_http_client(url) as streams:
            client = ClientSession(streams[0], streams[1], sampling_callback=sample, message_handler=on_message)
            async with client as session:
                await session.initialize()

                async def on_progress(value, total, message):
                    out["progress"].append([value, total])

                for _ in range(2):
                    await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
                asked = [await session.call_tool("ask", {"question": "Sky?"}) for _ in range(4)]
                out["answers"] = [result.content[0].text for result in asked]
                await session.subscribe_resource("notes://1")
                for _ in range(4):
                    updated = anyio.Event()
                    text = (await session.call_tool("touch", {"uri": "notes://1"})).content[0].text
                    out["touched_by"].append(int(text.rpartition(" ")[2]))
                    with anyio.fail_after(10):
                        await updated.wait()
    print(json.dumps(out))


anyio.run(main)
"""


@pytest.mark.interop
@pytest.mark.timeout(180)
def test_the_official_sdk_client_in_the_handshake_era(scaled: tuple[Hosted, RedisServer], tmp_path: Path) -> None:
    """The SDK's client in sessions that gunicorn's four workers serve, sharing them through Redis."""
    hosted, _ = scaled
    driver = tmp_path / "driver.py"
    driver.write_text(SDK_DRIVER)
    process = subprocess.Popen(
        [peers.peer_python(), str(driver), hosted.base + "/mcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        env=peers.peer_environment(),
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        stdout, stdin = process.stdout, process.stdin

        def round_of(calls: int) -> set[int]:
            """The workers that served a round of the driver's four sessions making ``calls`` calls each at once."""
            stdin.write(f"{calls}\n")
            stdin.flush()
            line = stdout.readline()  # (bounded: the driver fails after 100 s)
            assert line, process.stderr.read() if process.stderr else ""
            return set(json.loads(line)["round"])

        wait_until(lambda: len(workers_of(hosted)) == 4, "gunicorn's four workers run")  # (forked one by one)
        workers = workers_of(hosted)
        assert round_of(50) <= workers  # wherever the kernel puts each connection
        for worker in sorted(workers):  # then on each worker in turn, the others stopped
            with stopped(workers - {worker}):
                assert round_of(6) == {worker}
        out, err = process.communicate("rest\n", timeout=150)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err[-4000:]
    report = json.loads(out.splitlines()[-1])
    assert report["version"] == "2025-11-25"
    assert set(report["pids"]) == workers  # every worker served the four sessions
    assert report["progress"] == [[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]] * 2
    assert report["answers"] == ["blue"] * 4 and report["asked"] == 4
    assert report["updated"] == 4
    assert "Traceback" not in hosted.output()
