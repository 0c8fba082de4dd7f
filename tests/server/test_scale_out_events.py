"""The resumability event store shared through a real Redis (issue 14, the streams).

:class:`RedisEventStore` alone: a stream bounded to ``max_events`` and
expiring, replayed after an event id (priming events and malformed entries
skipped), a server-wide notification kept once, the doorbell that wakes the
process holding a stream. Then two apps in this process, standing for two
processes that share only Redis: a handshake-era GET stream read in one is
resumed in the other with ``Last-Event-ID`` and gets what it missed, in
order, then the live events; a POST's stream is replayed by the other
process, then ends; a GET whose event cannot be kept gets 503; DELETE drops
the session's stream from Redis.
"""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from redisserver import RedisServer, running_redis
from test_scale_out import wait_until
from test_scale_out_sessions import SUBSCRIBED, TIMEOUT, Pair, _copy, initialize, post

from mcp_sync import MCPServer
from mcp_sync.server.backend import BackendUnavailable, Notice
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.scale.redis_events import ONCE_TTL, RedisEventStore
from mcp_sync.types import JSONRPCNotification

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def keys(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT)
    yield client
    client.close()


@pytest.fixture
def backend(redis_server: RedisServer) -> Iterator[RedisBackend]:
    made = RedisBackend(redis_server.url, prefix="t", timeout=0.5)
    yield made
    made.close()


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url)
    yield made
    made.close()


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(method="notifications/message", params={"level": "info", "data": n})


def replayed(store: RedisEventStore, event_id: str) -> tuple[str | None, list[tuple[str, Any]]]:
    got: list[tuple[str, Any]] = []
    stream = store.replay_after(event_id, lambda eid, message: got.append((eid, message.params["data"])))  # type: ignore[union-attr]
    return stream, got


# ------------------------------------------------------------------ the store alone


def test_a_stream_is_bounded_expires_and_replays_after_an_event_id(
    backend: RedisBackend, keys: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ValueError, match="positive"):
        RedisEventStore(backend, max_events=0)
    store = RedisEventStore(backend, max_events=5, ttl=60)
    assert backend.event_store() is store  # the one made last follows the doorbell; the app gets it
    start = store.store("s1", None)  # a priming event: an id, no message
    ids = [store.store("s1", note(n)) for n in range(2)]
    store.store("s1", None)  # priming events are never replayed
    ids.append(store.store("s1", note(2)))
    assert [event_id.rpartition(":")[0] for event_id in (start, *ids)] == ["s1"] * 4
    assert replayed(store, start) == ("s1", [(ids[0], 0), (ids[1], 1), (ids[2], 2)])
    assert replayed(store, ids[1]) == ("s1", [(ids[2], 2)])
    assert replayed(store, ids[2]) == ("s1", [])
    assert 0 < keys.ttl(store.key("s1")) <= 60
    # Bounded: the oldest go first, and a client resuming from before them gets what is left.
    later = [store.store("s1", note(n)) for n in range(3, 10)]
    assert keys.xlen(store.key("s1")) == 5
    assert replayed(store, ids[0]) == ("s1", [(event_id, n) for n, event_id in enumerate(later, 3)][-5:])
    # Not an id of a stream kept: nothing.
    for unknown in ("s1", "s1:abc", ":1-0", "gone:1-0", "s1:1-0-0"):
        assert replayed(store, unknown) == (None, []), unknown
    keys.xadd(store.key("s1"), {"m": b"not json"})
    tail = store.store("s1", note(10))
    with caplog.at_level(logging.WARNING, logger="mcp_sync.server"):
        assert replayed(store, later[-1]) == ("s1", [(tail, 10)])
    assert "ignored a malformed event in t:events:s1" in caplog.text
    store.forget("s1")
    assert not keys.exists(store.key("s1"))


def test_a_notification_written_by_every_copy_is_kept_once(backend: RedisBackend, keys: redis.Redis) -> None:
    store = RedisEventStore(backend)
    first = store.store_once("s2", note(1), "key-1")
    assert first is not None
    assert store.store_once("s2", note(1), "key-1") is None  # another process's copy: already kept
    assert store.store_once("s2", note(2), None) is not None  # no key: each is kept
    assert keys.xlen(store.key("s2")) == 2
    assert 0 < keys.ttl(f"{store.key('s2')}:once:key-1") <= ONCE_TTL


def test_the_doorbell_wakes_the_process_watching_the_stream(
    backend: RedisBackend, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = MCPServer("doorbell")
    backend.attach(server)

    def ring(stream_id: str, origin: str = "elsewhere") -> None:
        backend._dispatch(json.dumps({"o": origin, "k": "stream_event", "s": stream_id}).encode())

    ring("s3")  # no event store follows this backend yet: nothing to wake
    store = backend.event_store()
    assert isinstance(store, RedisEventStore)
    woken: list[str] = []

    def wake() -> None:
        woken.append("s3")

    store.watch("s3", wake)
    ring("s3")
    ring("s3", backend.origin())  # its own: it read it already
    ring("other")
    store.unwatch("s3", lambda: None)  # not the one watching: it stays
    ring("s3")
    assert woken == ["s3", "s3"]
    store.unwatch("s3", wake)
    ring("s3")
    assert woken == ["s3", "s3"]

    def broken() -> None:
        raise RuntimeError("the consumer broke")

    store.watch("s3", broken)
    store.watch("s3", wake)  # two watchers of one stream (two copies of a session, for a moment): both woken
    with caplog.at_level(logging.ERROR, logger="mcp_sync.server"):
        ring("s3")
    assert "reading an event another process stored failed" in caplog.text
    assert woken == ["s3", "s3", "s3"]  # the broken one failed, the other was woken all the same
    store.unwatch("s3", broken)
    ring("s3")
    assert woken == ["s3"] * 4
    # A notice from a process that names none is delivered all the same (each copy keeps it).
    heard: list[Notice] = []
    server.deliver = heard.append  # type: ignore[method-assign]
    backend._dispatch(json.dumps({"o": "elsewhere", "k": "list_changed", "s": "tools"}).encode())
    backend._dispatch(json.dumps({"o": "elsewhere", "k": "list_changed", "s": "tools", "n": "k1"}).encode())
    assert heard == [Notice("list_changed", "tools")] * 2
    assert heard[1].key == "k1"


# ------------------------------------------------------------- two apps, one Redis


class Stream:
    """A GET (or POST) SSE response read by hand: its events as ``(id, message or None)``."""

    def __init__(self, url: str, session: str, *, last_event_id: str | None = None, version: str = "2025-11-25"):
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
        headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": version, "Mcp-Session-Id": session}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.connection.request("GET", parts.path, headers=headers)
        self.response = self.connection.getresponse()

    def events(self, count: int) -> list[tuple[str, dict[str, Any] | None]]:
        """The next ``count`` events (pings skipped); fewer when the stream ends first."""
        found: list[tuple[str, dict[str, Any] | None]] = []
        event_id, data = "", None
        while len(found) < count and (line := self.response.readline()):
            text = line.decode().rstrip("\r\n")
            if text.startswith("id: "):
                event_id = text[4:]
            elif text.startswith("data:"):
                data = json.loads(text[5:]) if text[5:].strip() else None
            elif not text and event_id:
                found.append((event_id, data))
                event_id, data = "", None
        return found

    def close(self) -> None:
        self.connection.close()


def call(url: str, session: str, tool: str, n: int, **arguments: Any) -> dict[str, Any]:
    status, body = post(
        url,
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        session,
    )
    assert status == 200, body
    return body  # type: ignore[no-any-return]


def subscribed_session(pair: Pair) -> str:
    a = pair.urls[0]
    session = initialize(a)
    assert post(a, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": SUBSCRIBED}}
    assert post(a, subscribe, session)[0] == 200
    assert "result" in call(pair.urls[1], session, "where", 3)  # the other app holds a copy too
    return session


def order(event_id: str) -> tuple[int, int]:
    """Where an event is in its Redis stream: its entry id, ``<milliseconds>-<sequence>``."""
    milliseconds, _, sequence = event_id.rpartition(":")[2].partition("-")
    return int(milliseconds), int(sequence)


UPDATED = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": SUBSCRIBED}}


def test_a_get_stream_resumes_in_the_other_process_with_what_it_missed(pair: Pair, keys: redis.Redis) -> None:
    a, b = pair.urls
    session = subscribed_session(pair)
    first = Stream(a, session)
    [(primed, nothing)] = first.events(1)
    assert nothing is None and primed.startswith(f"{session}.get:")
    call(b, session, "touch", 4)  # raised by the other process: kept once, sent here
    [(seen, message)] = first.events(1)
    assert message == UPDATED
    first.close()
    wait_until(lambda: _copy(pair.apps[0], session).transport.standalone.consumer is None, "the stream is let go")  # type: ignore[union-attr]
    call(a, session, "touch", 5)  # while the client is away: kept for it
    call(b, session, "touch", 6)
    resumed = Stream(b, session, last_event_id=seen)
    assert resumed.response.status == 200
    missed = resumed.events(2)
    assert [message for _, message in missed] == [UPDATED, UPDATED]
    assert order(seen) < order(missed[0][0]) < order(missed[1][0])
    call(a, session, "touch", 7)  # live again, from either process
    [(live, message)] = resumed.events(1)
    assert message == UPDATED and order(live) > order(missed[1][0])
    resumed.close()
    # Without priming (2025-06-18): nothing is sent at the start, the next event is.
    wait_until(lambda: _copy(pair.apps[1], session).transport.standalone.consumer is None, "the stream is let go")  # type: ignore[union-attr]
    older = Stream(a, session, version="2025-06-18")
    call(b, session, "touch", 8)
    [(after, message)] = older.events(1)
    assert message == UPDATED and order(after) > order(live)
    older.close()
    key = pair.apps[0].event_store.key(f"{session}.get")  # type: ignore[attr-defined]
    assert keys.exists(key)
    assert post(b, {}, session, method="DELETE")[0] == 204
    assert not keys.exists(key)


def test_a_post_stream_is_replayed_by_the_other_process_then_ends(pair: Pair) -> None:
    a, b = pair.urls
    session = subscribed_session(pair)
    parts = urlsplit(a)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    params = {"name": "progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}
    headers = {
        "Accept": "text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Session-Id": session,
    }
    connection.request(
        "POST", parts.path, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}), headers
    )
    streamed = Stream.__new__(Stream)
    streamed.connection, streamed.response = connection, connection.getresponse()
    events = streamed.events(10)
    streamed.close()
    assert [message is None for _, message in events] == [True, False, False, False]  # primed, 2 progress, answer
    resumed = Stream(b, session, last_event_id=events[0][0])
    assert resumed.events(10) == events[1:]  # what the first process kept, then the end
    resumed.close()


def test_a_get_whose_start_cannot_be_kept_gets_503(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    session = subscribed_session(pair)

    def down(*args: Any) -> str:
        raise BackendUnavailable("down")

    monkeypatch.setattr(pair.apps[0].event_store, "store_once", down)
    refused = Stream(pair.urls[0], session)
    assert refused.response.status == 503
    refused.close()
    assert _copy(pair.apps[0], session).transport.standalone.consumer is None  # type: ignore[union-attr]


def test_the_progress_of_a_json_only_call_reaches_the_get_stream_open_in_the_other_process(pair: Pair) -> None:
    a, b = pair.urls
    session = subscribed_session(pair)
    stream = Stream(b, session)
    assert stream.events(1)[0][1] is None  # primed: the stream is open in b
    parts = urlsplit(a)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    params = {"name": "progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}
    headers = {
        "Accept": "application/json",  # no stream for this call: what relates to it goes on the GET stream
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Session-Id": session,
    }
    body = {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": params}
    connection.request("POST", parts.path, json.dumps(body), headers)
    answer = json.loads(connection.getresponse().read())
    connection.close()
    assert answer["result"]["content"][0]["text"] == "2 steps"
    progress = [message for _, message in stream.events(2)]
    assert [(m or {})["params"]["progress"] for m in progress] == [1, 2]
    stream.close()


def test_posts_kept_in_memory_cost_no_round_trip_and_replay_here_only(backend: RedisBackend, keys: redis.Redis) -> None:
    store = RedisEventStore(backend, keep_posts=False)
    first, second = store.store("post-1", None), store.store("post-1", note(1))
    assert first == "post-1:1" and second == "post-1:2"  # this process's numbering: nothing in Redis
    assert not keys.exists(store.key("post-1"))
    assert replayed(store, first) == ("post-1", [(second, 1)])
    shared = store.store_once("get-1", note(2), None)  # a shared stream is in Redis all the same
    assert shared is not None and keys.exists(store.key("get-1"))
    assert replayed(store, "get-1:0-0") == ("get-1", [(shared, 2)])
    store.forget("post-1")
    assert replayed(store, first) == (None, [])


def test_a_stream_that_cannot_be_deleted_is_left_to_expire(
    backend: RedisBackend, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisEventStore(backend)
    redis_server.stop()
    with caplog.at_level(logging.WARNING, logger="mcp_sync.server"):
        store.forget("s4")  # a session ending while Redis is away still ends
    assert "a stream is left to expire: Redis at redis://127.0.0.1:" in caplog.text
    with pytest.raises(BackendUnavailable):
        store.store("s4", note(1))
