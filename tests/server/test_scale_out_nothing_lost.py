"""Nothing addressed to a shared handshake-era session is lost (issue 26), through a real Redis.

- Two processes (single-worker gunicorn masters on two ports) change one
  session at once, thousands of times (subscribe, unsubscribe, set the log
  level): each change is made in Redis as that change alone, so the record
  ends with every one of them (a whole record written back would undo the
  other process's latest).
- The worker holding the session's only copy is killed; another process,
  holding no copy, raises a resource update and logs a message: both are on
  the session's stream, and the client resuming it on that process gets them.
- ``server.log`` in a process without a copy of the session reaches it,
  honouring the level the client chose on another process: checked in
  Redis against the record for a shared stream; by each process's copy when
  the streams are each process's own (events kept in memory).
- A notice raised while the receiver of the process holding the GET stream
  is away (its pub/sub connection killed, its resubscription held back by
  the test at :meth:`RedisBackend._subscribe`, never by sleeps): it is on
  the stream already, and the receiver, subscribed again, reads what every
  stream it watches missed.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from redisserver import RedisServer, running_redis
from test_hosting import Hosted, gunicorn, hosting
from test_scale_out import TIMEOUT, raw_call, wait_until, workers_of
from test_scale_out_catchup import INITIALIZED, SUBSCRIBE, UPDATED, Held, Listening
from test_scale_out_sessions import SUBSCRIBED, Pair, initialize, post

from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.session_records import SessionRecord

pytestmark = pytest.mark.timeout(120)

SCALED_APP = "examples.scaled_app:application"
SCALED_NAME = "scaled-example"
LOGGED = "notifications/message"
TOOLS_CHANGED = "notifications/tools/list_changed"
ROUNDS = 600
"""Rounds of each process's changes: 1,200 by the first, 1,200 by the second."""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def machines(tmp_path: Path, redis_server: RedisServer) -> Iterator[tuple[Hosted, Hosted]]:
    """Two single-worker gunicorn masters on two ports, as two machines sharing one Redis."""
    argv = gunicorn("-k", "gthread", "--threads", "4", "-w", "1", SCALED_APP)
    env = {"MCP_SYNC_REDIS_URL": redis_server.url}
    with (
        hosting("machine-a", argv, tmp_path, sigterm_status=0, **env) as first,
        hosting("machine-b", argv, tmp_path, sigterm_status=0, **env) as second,
    ):
        yield first, second


class Client:
    """POSTs of one handshake-era session to one process, on one kept-alive connection."""

    def __init__(self, url: str, session: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path, self.session = parts.hostname or "", parts.port, parts.path, session
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        self.ids = iter(range(1, 1_000_000))

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": self.session,
        }
        self.connection.request("POST", self.path, json.dumps(body).encode(), headers)
        response = self.connection.getresponse()
        answer: dict[str, Any] = json.loads(response.read())
        assert response.status == 200 and "result" in answer, answer
        return answer

    def close(self) -> None:
        self.connection.close()


def stored(redis_server: RedisServer, name: str, session: str) -> SessionRecord:
    """The session's record in Redis, as a process reads it."""
    backend = RedisBackend(redis_server.url, prefix=f"mcp-sync:{name}", timeout=TIMEOUT)
    try:
        backend.start()  # (a record is read once subscribed)
        record = backend.load_session(session, 60)
        assert record is not None
        return record
    finally:
        backend.close()


def test_two_processes_changing_one_session_at_once_lose_none_of_their_changes(
    machines: tuple[Hosted, Hosted], redis_server: RedisServer
) -> None:
    first, second = (machine.base + "/mcp" for machine in machines)
    session = initialize(first)
    assert post(first, INITIALIZED, session)[0] == 202
    levels = ["debug", "info", "notice", "warning", "error"]
    expected: list[set[str]] = [set(), set()]
    start = threading.Barrier(2, timeout=TIMEOUT)

    def change(side: int, url: str) -> None:
        client = Client(url, session)
        try:
            start.wait()
            for n in range(ROUNDS):
                uri = f"notes://{side}/{n}"
                client.call("resources/subscribe", {"uri": uri})
                expected[side].add(uri)
                if side == 0 and n % 3 == 2:  # the first drops some of its own again
                    client.call("resources/unsubscribe", {"uri": f"notes://0/{n - 1}"})
                    expected[side].discard(f"notes://0/{n - 1}")
                if side == 1:  # the second sets the level each round: its last is the session's
                    client.call("logging/setLevel", {"level": levels[n % len(levels)]})
        finally:
            client.close()

    threads = [threading.Thread(target=change, args=(side, url)) for side, url in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(100)
    assert not any(thread.is_alive() for thread in threads)
    record = stored(redis_server, SCALED_NAME, session)
    level, subscriptions = record.log_level, record.subscriptions
    assert len(expected[0]) == 2 * ROUNDS // 3 and len(expected[1]) == ROUNDS
    wanted = expected[0] | expected[1]
    assert subscriptions == wanted, f"lost {len(wanted - subscriptions)}, kept {len(subscriptions - wanted)} dropped"
    assert level == levels[(ROUNDS - 1) % len(levels)]


def test_what_is_raised_after_the_worker_holding_the_only_copy_died_reaches_the_resumed_stream(
    machines: tuple[Hosted, Hosted],
) -> None:
    holder, other = machines
    url, elsewhere = holder.base + "/mcp", other.base + "/mcp"
    session = initialize(url)  # every request of the session goes to the holder: its only copy is there
    assert post(url, INITIALIZED, session)[0] == 202
    assert post(url, SUBSCRIBE, session)[0] == 200
    level = {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "warning"}}
    assert post(url, level, session)[0] == 200
    stream = Listening(url, session)
    try:
        [(last, _)] = stream.wait_for(None)
        [worker] = workers_of(holder)
        os.kill(worker, signal.SIGKILL)
        stream.wait_end()
    finally:
        stream.close()
    # Raised by the other process, which never saw the session (2026-07-28 calls of another client).
    assert "touched" in raw_call(elsewhere, "touch", {"uri": SUBSCRIBED})["content"][0]["text"]
    assert "announced" in raw_call(elsewhere, "announce", {"text": "quiet", "level": "info"})["content"][0]["text"]
    assert "announced" in raw_call(elsewhere, "announce", {"text": "loud", "level": "error"})["content"][0]["text"]
    resumed = Listening(elsewhere, session, last_event_id=last)
    try:
        events = resumed.wait_for(LOGGED)
        assert [method for _, method in events] == [UPDATED, LOGGED]  # the info message is under the level
    finally:
        resumed.close()


@pytest.fixture(params=[False, True], ids=["events-in-redis", "events-in-memory"])
def either_pair(request: pytest.FixtureRequest, redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url, events_in_memory=request.param)
    yield made
    made.close()


def test_the_server_log_reaches_sessions_held_elsewhere_at_the_level_their_client_chose(either_pair: Pair) -> None:
    a, _ = either_pair.urls
    session = initialize(a)  # its requests all go to a: b holds no copy
    assert post(a, INITIALIZED, session)[0] == 202
    level = {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "warning"}}
    assert post(a, level, session)[0] == 200
    stream = Listening(a, session)
    try:
        stream.wait_for(None)
        b = either_pair.apps[1].server
        b.log("info", "under the level", "test")
        b.log("error", "over it", "test")
        b.log("critical", "and over it", "test")
        b.register_tool("late", lambda arguments, ctx: "late")  # then a list change, told after them
        events = stream.wait_for(TOOLS_CHANGED)
        assert [method for _, method in events] == [None, LOGGED, LOGGED, TOOLS_CHANGED]
    finally:
        stream.close()
    assert not either_pair.apps[1].sessions.peek(session)  # b told it without a copy


def test_a_notice_raised_while_the_receiver_resubscribes_is_read_once_it_is_back(
    redis_server: RedisServer,
) -> None:
    held = Held(redis_server.url)
    try:
        b = held.b
        session = initialize(b)  # every request goes to b: a holds no copy, b holds the only one and the GET stream
        assert post(b, INITIALIZED, session)[0] == 202
        assert post(b, SUBSCRIBE, session)[0] == 200
        stream = Listening(b, session)
        try:
            stream.wait_for(None)
            with redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys:
                held.held.release.clear()  # b's receiver, once it lost Redis, waits in _subscribe
                keys.client_kill_filter(_type="pubsub")
                wait_until(lambda: not held.held.receiving, "b's receiver lost Redis")
            assert held.apps[1].sessions.peek(session) and not held.apps[0].sessions.peek(session)
            held.apps[0].server.mark_resource_updated(SUBSCRIBED)  # b hears neither the notice nor its doorbell
            assert [method for _, method in stream.events] == [None]
            held.held.release.set()
            stream.wait_for(UPDATED)  # on the stream already; b, subscribed again, reads what it missed
            assert [method for _, method in stream.events] == [None, UPDATED]
        finally:
            stream.close()
    finally:
        held.close()
