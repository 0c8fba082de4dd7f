"""What ``taking`` tells of the connections a thread's requests go on: the watchdogs' view of them.

The OAuth client's exchanges with an authorization server run inside the
Streamable HTTP transport's request (the auth's response hook signs in), so
the blocks nest: the transport's block must see the connection its request
is sent on again once the sign-in's exchanges are over. And a connection is
let go of (``None``) before it goes back to the pool, where another thread
may take it: a watchdog firing after that must not shut it down. Real
requests to a server on 127.0.0.1 (``servers/trickler.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from servers.trickler import Trickler

from mcp_sync.runtime.http import new_session, taking


@pytest.fixture
def server() -> Iterator[Trickler]:
    trickler = Trickler(b'{"ok": true}')
    yield trickler
    trickler.close()


def test_a_connection_is_let_go_of_before_it_goes_back_to_the_pool(server: Trickler) -> None:
    notes: list[Any] = []
    with new_session() as session, taking(notes.append):
        answer = session.get(server.url, timeout=5)
        assert answer.json() == {"ok": True}  # read whole: the connection went back to the pool
    assert len(notes) == 2 and notes[0] is not None and notes[1] is None


def test_blocks_nest_and_the_outer_one_is_told_again_after_the_inner_one(server: Trickler) -> None:
    outer: list[Any] = []
    inner: list[Any] = []
    with new_session() as session, taking(outer.append):
        with taking(inner.append):
            session.get(server.url, timeout=5).close()
        assert inner[0] is not None and outer == []
        with session.get(server.url, timeout=5, stream=True) as answer:
            assert outer[0] is not None and answer.status_code == 200
    assert inner[-1] is None and outer[-1] is None
    with new_session() as session:
        session.get(server.url, timeout=5).close()
    assert len(outer) == 2  # outside any block, nobody is told
