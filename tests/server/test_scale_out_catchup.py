"""A GET stream of a shared handshake-era session hears every event stored for it (issue 14, the flaky SDK test).

Two apps in this process stand for two processes sharing only Redis. Two
ways a GET stream could miss an event that was stored on the session's
shared stream, each driven here by a hook of the test (never by load or
sleeps):

- the GET finds a copy of the session that another request of the process
  has just made and not yet shared (the SDK's client opens its GET stream at
  the same moment as it POSTs ``notifications/initialized``, and both may
  reach a process holding no copy yet): held here in the app's ``_share``,
  the GET attaches first; once shared, its connection goes on from the
  shared stream, which every process writes;
- the process's receiver loses its connection (``CLIENT KILL``) and the
  doorbell of an event is rung before it subscribes again (held back): once
  subscribed, every stream it watches reads what it missed (a stream that
  fails to is logged, and the others read all the same).

And a copy that ends stops watching its stream.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from redisserver import RedisServer, running_redis
from test_scale_out import TIMEOUT, wait_until
from test_scale_out_copies import HeldBackend
from test_scale_out_sessions import SUBSCRIBED, Pair, _copy, build_server, initialize, post

from mcp_sync.server.backend import BackendUnavailable
from mcp_sync.server.http.app import StreamableHTTPApp
from mcp_sync.server.http.redis_backend import RedisBackend
from mcp_sync.server.http.redis_events import RedisEventStore
from mcp_sync.server.http.sessions import HTTPSession
from mcp_sync.server.http.wsgi import WSGIServer

pytestmark = pytest.mark.timeout(60)

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SUBSCRIBE = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": SUBSCRIBED}}
UPDATED = "notifications/resources/updated"


class Listening:
    """A GET stream read on a thread: its events as ``(id, method or None)``, waited for with a deadline."""

    def __init__(self, url: str, session: str, *, version: str = "2025-11-25", last_event_id: str | None = None):
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
        headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": version, "Mcp-Session-Id": session}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.connection.request("GET", parts.path, headers=headers)
        self.response = self.connection.getresponse()  # the app attached the stream before answering
        self.status = self.response.status
        self.events: list[tuple[str, str | None]] = []
        self.ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="test-listening")
        self._reader.start()

    def _read(self) -> None:
        event_id, method = "", None
        try:
            while line := self.response.readline():
                text = line.decode().rstrip("\r\n")
                if text.startswith("id: "):
                    event_id = text[4:]
                elif text.startswith("data:") and text[5:].strip():
                    method = json.loads(text[5:])["method"]
                elif not text and event_id:
                    with self._changed:
                        self.events.append((event_id, method))
                        self._changed.notify_all()
                    event_id, method = "", None
        except (OSError, ValueError):
            pass  # closed under the reader: the test is over
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait_for(self, method: str | None, count: int = 1) -> list[tuple[str, str | None]]:
        """The events once ``count`` of them carry ``method`` (``None``: priming events); fails after ``TIMEOUT``."""
        with self._changed:
            found = self._changed.wait_for(lambda: sum(m == method for _, m in self.events) >= count, TIMEOUT)
            assert found, self.events
            return list(self.events)

    def wait_end(self) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.ended, TIMEOUT), self.events

    def close(self) -> None:
        if self.connection.sock is not None:
            self.connection.sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(TIMEOUT)
        self.connection.close()


class HeldShare:
    """Holds app ``app``'s sharing of the next copy it makes, until released: the window the race needs."""

    def __init__(self, app: StreamableHTTPApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.held = threading.Event()
        self.release = threading.Event()
        share = app._share

        def held_share(entry: HTTPSession) -> None:
            self.held.set()
            assert self.release.wait(TIMEOUT)
            share(entry)

        monkeypatch.setattr(app, "_share", held_share)

    def post_meanwhile(self, url: str, session: str) -> threading.Thread:
        """POST ``notifications/initialized`` on a thread; return once its copy is made and not yet shared."""
        thread = threading.Thread(target=lambda: post(url, INITIALIZED, session), name="test-held-post")
        thread.start()
        assert self.held.wait(TIMEOUT)
        return thread


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url)
    yield made
    made.close()


def _subscribe_everywhere(pair: Pair, session: str) -> None:
    assert post(pair.urls[0], SUBSCRIBE, session)[0] == 200
    wait_until(lambda: SUBSCRIBED in _copy(pair.apps[1], session).session.subscriptions, "b's copy subscribed")


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_a_get_that_finds_a_copy_not_yet_shared_hears_what_every_process_writes(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    a, b = pair.urls
    session = initialize(a)
    gate = HeldShare(pair.apps[1], monkeypatch)
    poster = gate.post_meanwhile(b, session)  # b made its copy and kept it; not shared yet
    stream = Listening(b, session, version=version)
    try:
        assert stream.status == 200
        gate.release.set()
        poster.join(TIMEOUT)
        _subscribe_everywhere(pair, session)
        pair.apps[0].server.mark_resource_updated(SUBSCRIBED)  # written by a's copy (and b's), sent by b
        events = stream.wait_for(UPDATED)
        pair.apps[1].server.mark_resource_updated(SUBSCRIBED)
        events = stream.wait_for(UPDATED, 2)
        # Every id the client holds after the start names the shared stream: it resumes in any process.
        shared = f"{session}.get:"
        primings = [event_id for event_id, method in events if method is None]
        if version == "2025-11-25":  # primed: first the copy's own stream, then the shared one's start
            assert len(primings) == 2 and not primings[0].startswith(shared) and primings[1].startswith(shared)
        else:
            assert primings == []
        updates = [event_id for event_id, method in events if method == UPDATED]
        assert len(updates) == 2 and all(event_id.startswith(shared) for event_id in updates)
    finally:
        stream.close()
    resumed = Listening(a, session, last_event_id=updates[0])
    try:
        assert [method for _, method in resumed.wait_for(UPDATED)] == [UPDATED]
    finally:
        resumed.close()


def test_a_get_whose_copy_cannot_start_the_shared_stream_ends_and_opens_again(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pair.urls
    session = initialize(a)
    gate = HeldShare(pair.apps[1], monkeypatch)
    poster = gate.post_meanwhile(b, session)
    stream = Listening(b, session)
    store = pair.apps[1].event_store
    assert isinstance(store, RedisEventStore)
    keep = store.store_once

    def down(*args: Any) -> None:
        raise BackendUnavailable("down")

    monkeypatch.setattr(store, "store_once", down)
    try:
        [(private, _)] = stream.wait_for(None)
        with caplog.at_level(logging.WARNING, "mcp_sync.http"):
            gate.release.set()
            poster.join(TIMEOUT)
            stream.wait_end()  # the client opens it again
        assert "opened before its session's copy was shared ends" in caplog.text
    finally:
        stream.close()
    monkeypatch.setattr(store, "store_once", keep)
    _subscribe_everywhere(pair, session)
    # Opened again (here with the id of its first start, which names no stream any more): a fresh start.
    again = Listening(b, session, last_event_id=private)
    try:
        again.wait_for(None)
        pair.apps[0].server.mark_resource_updated(SUBSCRIBED)
        assert again.wait_for(UPDATED)[-1][0].startswith(f"{session}.get:")
    finally:
        again.close()


class Held:
    """App ``a`` (a plain Redis backend) and app ``b`` (a :class:`HeldBackend`): b's receiver can be held back."""

    def __init__(self, redis_url: str) -> None:
        self.held = HeldBackend(redis_url)
        self.held.release.set()
        self.apps = [
            StreamableHTTPApp(build_server("a"), backend=RedisBackend(redis_url, timeout=0.5)),
            StreamableHTTPApp(build_server("b"), backend=self.held),
        ]
        self.hosts = [WSGIServer(app, "127.0.0.1", 0) for app in self.apps]
        for host in self.hosts:
            host.start()
        self.a, self.b = (host.url + "/mcp" for host in self.hosts)

    def close(self) -> None:
        self.held.release.set()
        for host in self.hosts:
            host.close()
        for app in self.apps:
            app.close()
            app.server.stop()


@pytest.fixture
def held(redis_server: RedisServer) -> Iterator[Held]:
    made = Held(redis_server.url)
    yield made
    made.close()


def test_a_doorbell_rung_while_the_receiver_was_away_is_answered_once_it_is_back(
    held: Held, redis_server: RedisServer
) -> None:
    session = initialize(held.a)
    assert post(held.a, INITIALIZED, session)[0] == 202
    assert post(held.a, SUBSCRIBE, session)[0] == 200
    stream = Listening(held.b, session)  # b makes its copy (subscribed) and holds the GET stream
    try:
        stream.wait_for(None)
        with redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys:
            held.held.release.clear()
            keys.client_kill_filter(_type="pubsub")
            wait_until(lambda: not held.held.receiving, "b's receiver lost Redis")
        # a's copy writes the update to the shared stream and rings: b hears neither the notice nor the bell.
        held.apps[0].server.mark_resource_updated(SUBSCRIBED)
        assert stream.events[-1][1] is None
        held.held.release.set()
        stream.wait_for(UPDATED)  # b, subscribed again, reads what its streams missed
        assert [method for _, method in stream.events].count(UPDATED) == 1
    finally:
        stream.close()


def test_a_copy_that_ends_stops_watching_its_stream(pair: Pair) -> None:
    a, b = pair.urls
    session = initialize(a)
    assert post(b, INITIALIZED, session)[0] == 202  # b makes its copy, which watches the shared stream
    stores = [app.event_store for app in pair.apps]
    assert all(isinstance(store, RedisEventStore) and f"{session}.get" in store._watchers for store in stores)
    assert post(a, {}, session, method="DELETE")[0] == 204
    for store in stores:
        wait_until(lambda store=store: f"{session}.get" not in store._watchers, "the copy stopped watching")  # type: ignore[attr-defined]


def test_streams_watched_here_read_again_once_subscribed_even_if_one_fails(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    backend = RedisBackend(redis_server.url, prefix="t", timeout=0.5)
    store = backend.event_store()
    woken = threading.Event()

    def broken() -> None:
        raise RuntimeError("the consumer broke")

    store.watch("first", broken)
    store.watch("second", woken.set)
    try:
        backend.start()
        assert woken.wait(TIMEOUT)  # the first subscription wakes them too (nothing to read then)
        woken.clear()
        caplog.clear()
        with (
            caplog.at_level(logging.ERROR, "mcp_sync.http"),
            redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys,
        ):
            keys.client_kill_filter(_type="pubsub")
            assert woken.wait(TIMEOUT)  # subscribed again: each stream reads what it missed, the broken one aside
        assert "reading the events a stream missed failed" in caplog.text
    finally:
        backend.close()
