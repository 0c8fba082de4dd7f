"""A GET stream of a shared handshake-era session hears every event stored for it (issue 14, the flaky SDK test).

Two apps in this process stand for two processes sharing only Redis. The
process's receiver loses its connection (``CLIENT KILL``) and the doorbell of
an event is rung before it subscribes again (held back here, never by load
or sleeps): once subscribed, every stream it watches reads what it missed (a
stream that fails to is logged, and the others read all the same).

A GET finding a copy of the session not yet shared is no longer possible: a
copy is shared before it is kept (see ``test_scale_out_gap.py``).

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
from urllib.parse import urlsplit

import pytest
import redis
from redisserver import RedisServer, running_redis
from test_scale_out import TIMEOUT, wait_until
from test_scale_out_copies import HeldBackend
from test_scale_out_sessions import SUBSCRIBED, Pair, build_server, initialize, post

from mcp_sync.server import StreamableHTTPApp
from mcp_sync.server.http.wsgi import WSGIServer
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.scale.redis_events import RedisEventStore

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


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url)
    yield made
    made.close()


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
            caplog.at_level(logging.ERROR, "mcp_sync.server"),
            redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys,
        ):
            keys.client_kill_filter(_type="pubsub")
            assert woken.wait(TIMEOUT)  # subscribed again: each stream reads what it missed, the broken one aside
        assert "reading the events a stream missed failed" in caplog.text
    finally:
        backend.close()
