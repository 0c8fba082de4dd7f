"""A process's copy of a shared session is shared before any other request of the process can find it (issue 14).

A request naming a session that this process holds no copy of makes one from
the session's record in Redis. Another request of the same session may reach
the process at the same moment (a client POSTs and opens its GET stream
together). Had the copy been kept (visible to the process's other requests)
before it was shared, a request finding it in between would be served by an
unshared copy. The window is held open here by a hook of the test in the
registry's ``adopt`` (never by load or sleeps), and a request served in it:

- changes the session (``resources/subscribe``, ``logging/setLevel``): the
  change is kept in the record, so the other process's copy takes it;
- raises a server-wide notice (a resource update): it goes on the GET stream
  only, once, never also on the POST of the request that raised it;
- opens the GET stream: it reads the shared stream from its start, so every
  event id the client gets resumes in any process.

And two requests that both found no copy both make one: the copy that loses
the race is closed and stops watching the shared stream, while the one kept
goes on hearing what another process writes to it.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from redisserver import RedisServer, running_redis
from test_scale_out import TIMEOUT, wait_until
from test_scale_out_catchup import INITIALIZED, SUBSCRIBE, UPDATED, Listening
from test_scale_out_sessions import SUBSCRIBED, Pair, _copy, initialize, post

from mcp_sync.server import StreamableHTTPApp
from mcp_sync.server.http.sessions import HTTPSession
from mcp_sync.server.scale.redis_events import RedisEventStore

pytestmark = pytest.mark.timeout(60)

SET_LEVEL = {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "error"}}
TOUCH = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "touch", "arguments": {}}}


class HeldAdopt:
    """Holds the first request of app ``app`` that keeps a copy of a session: after the copy is kept (``after``),
    when the process's other requests find it, or before (the others find none and make copies of their own)."""

    def __init__(self, app: StreamableHTTPApp, monkeypatch: pytest.MonkeyPatch, *, after: bool) -> None:
        self.held = threading.Event()
        self.release = threading.Event()
        self.made: list[HTTPSession] = []
        self.kept: list[HTTPSession | None] = []
        self.statuses: list[int] = []
        adopt = app.sessions.adopt

        def held_adopt(entry: HTTPSession) -> HTTPSession | None:
            first = not self.held.is_set()
            if first and not after:
                self._hold()
            kept = adopt(entry)
            self.made.append(entry)
            self.kept.append(kept)
            if first and after:
                self._hold()
            return kept

        monkeypatch.setattr(app.sessions, "adopt", held_adopt)

    def _hold(self) -> None:
        self.held.set()
        assert self.release.wait(TIMEOUT)

    def post_meanwhile(self, url: str, session: str, message: dict[str, Any] = INITIALIZED) -> threading.Thread:
        """POST ``message`` on a thread; return once its request is held."""
        thread = threading.Thread(
            target=lambda: self.statuses.append(post(url, message, session)[0]), name="test-held-post"
        )
        thread.start()
        assert self.held.wait(TIMEOUT)
        return thread

    def finish(self, *threads: threading.Thread) -> None:
        self.release.set()
        for thread in threads:
            thread.join(TIMEOUT)
            assert not thread.is_alive()


def sent_on_post(url: str, message: dict[str, Any], session: str) -> list[dict[str, Any]]:
    """The messages the answer to a POST carries, JSON or SSE alike."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": session,
        }
        connection.request("POST", parts.path, json.dumps(message).encode(), headers)
        response = connection.getresponse()
        assert response.status == 200
        body = response.read().decode()
        if (response.getheader("Content-Type") or "").startswith("application/json"):
            return [json.loads(body)]
        return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]
    finally:
        connection.close()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    made = Pair(redis_server.url)
    yield made
    made.close()


@pytest.mark.parametrize("change", [SUBSCRIBE, SET_LEVEL], ids=["subscribe", "set-level"])
def test_a_change_served_as_the_copy_is_made_reaches_the_other_process(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    a, b = pair.urls
    session = initialize(a)
    gate = HeldAdopt(pair.apps[1], monkeypatch, after=True)
    poster = gate.post_meanwhile(b, session)  # b's copy is kept; its request is held
    try:
        assert post(b, change, session)[0] == 200  # served by that copy
    finally:
        gate.finish(poster)
    assert gate.statuses == [202]
    a_copy = _copy(pair.apps[0], session).session
    if change is SUBSCRIBE:
        wait_until(lambda: SUBSCRIBED in a_copy.subscriptions, "a's copy subscribed")
    else:
        wait_until(lambda: a_copy.log_level == "error", "a's copy took the level")


def test_an_update_raised_as_the_copy_is_made_goes_on_the_get_stream_only(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair.urls
    session = initialize(a)
    assert post(a, INITIALIZED, session)[0] == 202
    assert post(a, SUBSCRIBE, session)[0] == 200
    stream = Listening(a, session)
    try:
        stream.wait_for(None)
        gate = HeldAdopt(pair.apps[1], monkeypatch, after=True)
        poster = gate.post_meanwhile(b, session)
        try:
            sent = sent_on_post(b, TOUCH, session)  # b's copy raises the update while serving the call
        finally:
            gate.finish(poster)
        assert [message.get("method") for message in sent] == [None]  # the call's result alone
        assert sent[0]["result"]["content"][0]["text"] == "b"
        events = stream.wait_for(UPDATED)  # written by both copies, kept once
        assert [method for _, method in events] == [None, UPDATED]
    finally:
        stream.close()


def test_a_get_opened_as_the_copy_is_made_reads_the_shared_stream_from_its_start(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair.urls
    session = initialize(a)
    gate = HeldAdopt(pair.apps[1], monkeypatch, after=True)
    poster = gate.post_meanwhile(b, session)
    stream = Listening(b, session)
    try:
        assert stream.status == 200
        gate.finish(poster)
        assert post(a, SUBSCRIBE, session)[0] == 200
        wait_until(lambda: SUBSCRIBED in _copy(pair.apps[1], session).session.subscriptions, "b's copy subscribed")
        pair.apps[0].server.mark_resource_updated(SUBSCRIBED)  # written by a's copy (and b's), sent by b
        events = stream.wait_for(UPDATED)
    finally:
        stream.close()
    # Every id the client got names the shared stream, its start too: it resumes in any process.
    assert [method for _, method in events] == [None, UPDATED]
    assert all(event_id.startswith(f"{session}.get:") for event_id, _ in events)
    resumed = Listening(a, session, last_event_id=events[0][0])
    try:
        assert [method for _, method in resumed.wait_for(UPDATED)] == [UPDATED]
    finally:
        resumed.close()


def test_a_copy_that_loses_the_race_stops_watching_and_the_one_kept_hears_the_stream(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair.urls
    session = initialize(a)
    app = pair.apps[1]
    store = app.event_store
    assert isinstance(store, RedisEventStore)
    missed: list[str] = []
    get = app.sessions.get

    def counting_get(session_id: str) -> HTTPSession | None:
        found = get(session_id)
        if found is None:
            missed.append(session_id)
        return found

    monkeypatch.setattr(app.sessions, "get", counting_get)
    gate = HeldAdopt(app, monkeypatch, after=False)
    first = gate.post_meanwhile(b, session)  # b made a copy and is about to keep it
    second = threading.Thread(target=lambda: gate.statuses.append(post(b, SUBSCRIBE, session)[0]), name="test-second")
    second.start()
    try:
        wait_until(lambda: len(missed) == 2, "the second request found no copy either")
    finally:
        gate.finish(first, second)
    assert sorted(gate.statuses) == [200, 202]
    [kept, lost] = gate.made
    assert gate.kept == [kept, kept]  # the first made is kept; the second request is served by it
    assert lost.session.closed and not kept.session.closed
    assert app.server.sessions == [kept.session]
    assert store._watchers == {f"{session}.get": (kept.transport._wake,)}  # type: ignore[union-attr]
    # What a's copy alone writes to the stream (a message outside any request) reaches b's GET: b is woken.
    stream = Listening(b, session)
    try:
        stream.wait_for(None)
        _copy(pair.apps[0], session).session.notify("notifications/message", {"level": "info", "data": "hi"})
        assert [method for _, method in stream.wait_for("notifications/message")] == [None, "notifications/message"]
    finally:
        stream.close()
