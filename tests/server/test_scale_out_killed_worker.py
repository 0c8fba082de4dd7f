"""A killed worker fails the calls it carried, not the client: the rest go on, on the workers still alive (issue 26).

``tests/servers/held_calls.py`` under gunicorn, two workers, ``--keep-alive
0`` (each request on a new connection), one real Redis. A client, of either
era, makes calls the server holds until the test lets them go, learning
through Redis which worker took each (steered: the other worker is stopped
while they are made); with some held on each worker, the test kills one
worker with SIGKILL. Its
calls fail, each with an error saying the connection broke; the calls held
on the other worker are let go and answered; the same client's next call is
answered (in the handshake era in the same session, shared through Redis),
and a handshake-era GET stream, held by the worker killed, is resumed on
the other and still delivers notifications. The client
closed its transport when the connection of a call it carried was reset, as
if the server could not be reached: every pending call failed with
``TRANSPORT_CLOSED`` and the session was lost.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
import redis
from redisserver import running_redis
from test_hosting import Hosted, gunicorn, hosting, stopped
from test_scale_out import TIMEOUT, wait_until
from test_scale_out_resume import stream_holders

from mcp_sync import MCP_CODES, MCPClient, MCPError
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport

HELD_APP = "tests.servers.held_calls:application"
NOTE = "notes://held"
CALLS_PER_WORKER = 3
"""Calls held on each worker before one is killed (each takes a thread of the worker it lands on)."""

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hosted, redis.Redis]]:
    tmp = tmp_path_factory.mktemp("held")
    with running_redis(tmp / "redis.log") as redis_server:
        argv = gunicorn("--threads", str(2 * CALLS_PER_WORKER + 8), "-w", "2", "--keep-alive", "0", HELD_APP)
        with (
            hosting("gunicorn-2", argv, tmp, sigterm_status=0, MCP_SYNC_REDIS_URL=redis_server.url) as hosted,
            redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys,
        ):
            yield hosted, keys


def where(keys: redis.Redis) -> tuple[str, int]:
    """The tag and worker of the next call the server took (waits for it, at most ``TIMEOUT``)."""
    taken = keys.blpop(["held"], timeout=TIMEOUT)
    assert taken is not None, "no call reached the server"
    told = json.loads(taken[1])
    return str(told["tag"]), int(told["pid"])


def both_workers_answer(client: MCPClient) -> set[int]:
    """A call, then another with the worker that answered stopped: the two workers' process ids. (gunicorn starts a
    killed worker's replacement, which may still be booting: the second call waits in the socket's backlog for it.)"""
    first = client.call_tool("pid").structured_content["result"]  # type: ignore[index]
    with stopped({first}):
        second = client.call_tool("pid").structured_content["result"]  # type: ignore[index]
    assert second != first
    return {first, second}


class Updates:
    """How many ``resources/updated`` a client heard, with a way to wait for more."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def add(self, params: dict[str, Any]) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def beyond(self, count: int, timeout: float = TIMEOUT) -> bool:
        """Whether more than ``count`` were heard within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.count > count, timeout)


def get_stream_open(client: MCPClient, heard: Updates) -> None:
    """Wait until the session's GET stream delivers: a touch raised before it opened is nobody's to keep."""
    for _ in range(int(TIMEOUT / 0.5)):
        before = heard.count
        client.call_tool("touch", {"uri": NOTE})
        if heard.beyond(before, 0.5):
            return
    pytest.fail("the GET stream delivered nothing")


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_killed_worker_fails_only_the_calls_it_carried(held: tuple[Hosted, redis.Redis], era: str) -> None:
    hosted, keys = held
    keys.delete("held")
    heard = Updates()
    transport = StreamableHTTPClientTransport(hosted.base + "/mcp")
    with (
        MCPClient(era=era, timeout=TIMEOUT) as client,
        ThreadPoolExecutor(2 * CALLS_PER_WORKER, thread_name_prefix="test-call") as calls,
    ):
        client.connect(transport)
        workers = both_workers_answer(client)
        if era == "handshake":
            client.on_notification("notifications/resources/updated", heard.add)
            client.subscribe_resource(NOTE)
            get_stream_open(client, heard)
            # The worker holding the GET stream is the one killed: the stream is resumed on the other.
            wait_until(lambda: len(stream_holders(hosted)) == 1, "one worker holds the GET stream")
        holding = stream_holders(hosted) if era == "handshake" else set()
        session = transport.session_id
        pending: dict[str, Future[str]] = {}
        by_worker: dict[int, list[str]] = {}
        for worker in sorted(workers):  # calls held on each worker: the others stopped while they are made
            with stopped(workers - {worker}):
                for n in range(CALLS_PER_WORKER):
                    tag = f"{era}-{worker}-{n}"
                    pending[tag] = calls.submit(lambda tag=tag: client.call_tool("hold", {"tag": tag}).text)
                    landed, taken_by = where(keys)
                    assert (landed, taken_by) == (tag, worker)
                    by_worker.setdefault(worker, []).append(landed)
        first, second = by_worker
        victim, survivor = (second, first) if second in holding else (first, second)

        os.kill(victim, signal.SIGKILL)
        for tag in by_worker[victim]:
            with pytest.raises(MCPError) as broke:
                pending[tag].result(TIMEOUT)
            assert broke.value.code == MCP_CODES.INTERNAL_ERROR, broke.value
            assert f"the connection to the MCP server at {transport.url} broke" in broke.value.message
            assert "tools/call" in broke.value.message
        assert not transport.closed
        for tag in by_worker[survivor]:
            keys.rpush(f"release:{tag}", "go")
            assert pending[tag].result(TIMEOUT) == f"{tag} released"

        # The same client goes on: its next calls are answered, on the survivor or the victim's replacement.
        assert client.call_tool("pid").structured_content["result"] != victim
        assert not transport.closed
        if era == "handshake":
            assert transport.session_id == session and transport.sessions_started == 0
            before = heard.count
            client.call_tool("touch", {"uri": NOTE})
            assert heard.beyond(before)
