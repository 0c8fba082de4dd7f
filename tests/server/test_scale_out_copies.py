"""A process's copy of a handshake-era session misses no change made through another process (issue 14, the race).

A copy is made from the session's record in Redis, and learns of later
changes only from the notices on the channel. Two races could make it miss
one, each driven here by a hook of the test (never by load or sleeps):

- the process's receiver is not yet subscribed when the copy is made (held
  back here in :meth:`RedisBackend._subscribe`): the request gets 503 until
  it is, and the copy then made has every change;
- a change is published between the read of the record and the copy being
  kept (made here inside :meth:`RedisBackend.load_session`): the receiver
  applies it to the copy once the copy is kept, rather than dropping it;
- the receiver loses its connection (killed by ``CLIENT KILL``) and a change
  is published before it subscribes again (held back): once subscribed, the
  copies read their records again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redisserver import running_redis
from test_scale_out import TIMEOUT, wait_until
from test_scale_out_sessions import NAME, SUBSCRIBED, _legacy, build_server, initialize, ping, post

from mcp_sync.server import StreamableHTTPApp
from mcp_sync.server.http.wsgi import WSGIServer
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.session_records import SessionRecord, SessionUpdate

pytestmark = pytest.mark.timeout(60)

SUBSCRIBE = {"jsonrpc": "2.0", "id": 9, "method": "resources/subscribe", "params": {"uri": SUBSCRIBED}}


class HeldBackend(RedisBackend):
    """A backend whose receiver subscribes only once the test lets it, and whose reads the test may interrupt."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout=0.5)
        self.release = threading.Event()
        self.after_load: Callable[[], None] | None = None

    def _subscribe(self, pubsub: Any) -> None:
        self.release.wait(TIMEOUT)
        super()._subscribe(pubsub)

    def load_session(self, session_id: str, ttl: float) -> SessionRecord | None:
        record = super().load_session(session_id, ttl)
        hook, self.after_load = self.after_load, None
        if hook is not None:
            hook()
        return record


class Two:
    """App ``a`` (a plain Redis backend) and app ``b`` (a :class:`HeldBackend`), each served on its own port."""

    def __init__(self, redis_url: str) -> None:
        self.url = redis_url
        self.held = HeldBackend(redis_url)
        self.apps = [
            StreamableHTTPApp(build_server("a"), backend=RedisBackend(redis_url, timeout=0.5)),
            StreamableHTTPApp(build_server("b"), backend=self.held),
        ]
        self.hosts = [WSGIServer(app, "127.0.0.1", 0) for app in self.apps]
        for host in self.hosts:
            host.start()
        self.a, self.b = (host.url + "/mcp" for host in self.hosts)

    def subscriptions(self, session_id: str) -> frozenset[str]:
        entry = self.apps[1].sessions.peek(session_id)
        assert entry is not None
        return entry.session.subscriptions

    def close(self) -> None:
        self.held.release.set()
        for host in self.hosts:
            host.close()
        for app in self.apps:
            app.close()
            app.server.stop()


@pytest.fixture
def two(tmp_path: Path) -> Iterator[Two]:
    with running_redis(tmp_path / "redis.log") as redis_server:
        made = Two(redis_server.url)
        yield made
        made.close()
    assert not [thread for thread in threading.enumerate() if thread.name == "mcp-sync-redis-receiver"]


def _start(two: Two) -> str:
    session = initialize(two.a)
    assert post(two.a, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def test_no_copy_is_made_before_its_process_hears_changes(two: Two) -> None:
    session = _start(two)
    # b's receiver is held back: b cannot make a copy that would miss what is published meanwhile.
    status, body = post(two.b, ping(2), session)
    assert status == 503 and "backend is unavailable" in body["error"]["message"]
    assert two.apps[1].sessions.peek(session) is None
    assert post(two.a, SUBSCRIBE, session)[0] == 200  # published while b hears nothing
    two.held.release.set()
    wait_until(lambda: two.held.receiving, "b's receiver subscribed")
    assert post(two.b, ping(3), session) == (200, {"jsonrpc": "2.0", "id": 3, "result": {}})
    assert two.subscriptions(session) == {SUBSCRIBED}
    # And what changes from now on reaches b's copy.
    unsubscribe = {**SUBSCRIBE, "id": 10, "method": "resources/unsubscribe"}
    assert post(two.a, unsubscribe, session)[0] == 200
    wait_until(lambda: two.subscriptions(session) == frozenset(), "b's copy unsubscribed")


def test_a_change_published_while_the_copy_is_made_reaches_it(two: Two) -> None:
    two.held.release.set()
    two.held.start()
    wait_until(lambda: two.held.receiving, "b's receiver subscribed")
    session = _start(two)
    heard = threading.Event()
    apply = two.apps[1].shared.session_updated

    def spy(session_id: str, update: SessionUpdate) -> None:
        heard.set()  # the receiver has the notice: applying it may wait until the copy is kept
        apply(session_id, update)

    two.apps[1].shared.session_updated = spy  # type: ignore[method-assign]

    def change_meanwhile() -> None:
        # b has read the record (no subscription yet) and not kept its copy: a subscribes the client now.
        assert post(two.a, SUBSCRIBE, session)[0] == 200
        assert heard.wait(TIMEOUT)

    two.held.after_load = change_meanwhile
    assert post(two.b, ping(2), session)[0] == 200
    wait_until(lambda: two.subscriptions(session) == {SUBSCRIBED}, "b's copy took the change")


def test_copies_take_their_records_again_when_the_receiver_comes_back(
    two: Two, caplog: pytest.LogCaptureFixture
) -> None:
    two.held.release.set()
    two.held.start()
    session = _start(two)
    assert post(two.b, ping(2), session)[0] == 200
    legacy = _legacy(two.apps[1])
    key = f"mcp-sync:{NAME}:session:{session}"
    with redis.Redis.from_url(two.url, socket_timeout=TIMEOUT) as keys:
        # b loses its receiver's connection, and subscribes again only once the test lets it.
        two.held.release.clear()
        keys.client_kill_filter(_type="pubsub")
        wait_until(lambda: not two.held.receiving, "b's receiver lost Redis")
        assert post(two.a, SUBSCRIBE, session)[0] == 200  # b hears nothing of it
        two.held.release.set()
        wait_until(lambda: two.subscriptions(session) == {SUBSCRIBED}, "b's copy took its record again")
        assert legacy.session.subscriptions == frozenset() and two.apps[1].sessions.peek(legacy.session_id)
        # A record this process cannot take is logged; the receiver goes on.
        two.held.release.clear()
        keys.client_kill_filter(_type="pubsub")
        wait_until(lambda: not two.held.receiving, "b's receiver lost Redis again")
        keys.hset(key, "capabilities", json.dumps({"sampling": "junk"}))
        with caplog.at_level(logging.ERROR, "mcp_sync.server"):
            two.held.release.set()
            wait_until(lambda: "refreshing the copies of sessions from Redis failed" in caplog.text, "it was logged")
        wait_until(lambda: two.held.receiving, "b's receiver subscribed")
