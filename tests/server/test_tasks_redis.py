"""Tasks kept in a real Redis (``mcp_sync.server.scale.redis_tasks``): any process answers for any task.

In this process, two apps with a server each stand for two processes that
share only Redis: a task started through one is followed, answered and
cancelled through the other, and expires in Redis at its TTL. Under
gunicorn, ``examples/scaled_app.py`` run by two masters of one worker each
(two ports, as two machines): a task started on the first is answered and
finished through the second, and one is cancelled through the second while
the first runs it. Every request is a new connection, so each task outlives
the connection that started it. A ``subscriptions/listen`` stream open on
one process hears the status changes of a task running on the other (in
both settings). A task whose process was killed (a real one, ``SIGKILL``)
ends as failed in the other once the killed process's lease has run out, and
its listeners hear so.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import finish_within
from redisserver import RedisServer, running_redis
from test_hosting import gunicorn, hosting
from test_tasks import (
    ASKING,
    REVISION,
    ROOT,
    Wire,
    _next_message,
    assert_result_waits_for_a_task_run_elsewhere,
    start,
)

from mcp_sync import Context, MCPServer
from mcp_sync.errors import MCPError
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, SUBSCRIPTION_ID
from mcp_sync.protocol.tasks import is_terminal
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.scale.redis_tasks import RedisTaskStore, share_tasks
from mcp_sync.server.task_store import MemoryTaskStore, TaskRecord
from mcp_sync.server.tasks import PROCESS_STOPPED

TIMEOUT = 10.0

pytestmark = pytest.mark.timeout(90)


def build_server(gate: threading.Event) -> MCPServer:
    server = MCPServer("tasks-redis-test", "1.0")

    @server.tool(task="optional")
    def confirm(ctx: Context) -> str:
        answer = ctx.elicit("Go?", {"type": "object", "properties": {"go": {"type": "boolean"}}})
        return f"go={(answer.data or {}).get('go')}"

    @server.tool(task="optional")
    def wait(ctx: Context) -> str:
        ctx.cancelled.wait(TIMEOUT * 6)
        return "waited"

    return server


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path / "redis.log") as server:
        yield server


@pytest.fixture
def two(redis_server: RedisServer) -> Iterator[tuple[Wire, Wire, list[MCPServer]]]:
    """Two apps on one Redis, each with a server of its own."""
    gate = threading.Event()
    started: list[tuple[RunningHTTPServer, MCPServer]] = []
    for _ in range(2):
        server = build_server(gate)
        running = start_http(server, backend=RedisBackend(redis_server.url, timeout=2.0))
        started.append((running, server))
    try:
        yield Wire(started[0][0].url), Wire(started[1][0].url), [server for _, server in started]
    finally:
        gate.set()
        for running, server in started:
            running.close()
            server.stop()


def test_a_task_started_in_one_process_is_followed_and_answered_in_another(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    first, second, servers = two
    assert all(isinstance(server.tasks.store, RedisTaskStore) for server in servers)
    task_id = start(first, "confirm", capabilities=ASKING)
    waiting = second.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    [key] = waiting["inputRequests"]
    answer = {key: {"action": "accept", "content": {"go": True}}}
    assert second.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, ASKING)["resultType"] == (
        "complete"
    )
    done = second.until(task_id, lambda task: is_terminal(task["status"]), ASKING)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "go=True"
    assert second.error("tasks/get", {"taskId": "not-a-task"})["code"] == -32602
    assert [record.task_id for record in servers[1].tasks.store.records()] == [task_id]


def test_a_cancel_sent_to_another_process_stops_the_handler(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    first, second, servers = two
    task_id = start(first, "wait")
    assert servers[0].tasks.running() == 1
    second.result("tasks/cancel", {"taskId": task_id})
    assert first.finished(task_id)["status"] == "cancelled"
    # The record says so at once; the process running it hears of the cancel at its next read of the record.
    assert _poll(lambda: servers[0].tasks.running() == 0)


def test_a_task_expires_in_redis_at_its_ttl(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    first, second, servers = two
    servers[0].tasks.ttl_ms = 300
    task_id = start(first, "wait")  # the expiry also stops its handler
    deadline = time.monotonic() + TIMEOUT
    while second.post("tasks/get", {"taskId": task_id})[1].get("result") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert second.error("tasks/get", {"taskId": task_id})["code"] == -32602
    store = servers[1].tasks.store
    assert store.sweep() == [] and store.next_expiry() is None
    assert store.update(task_id, lambda record: None) is None
    assert _poll(lambda: servers[0].tasks.running() == 0)


def test_a_record_without_ttl_is_kept(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    store = two[2][0].tasks.store
    store.create(TaskRecord("forever", "wait", ttl_ms=None))
    kept = store.get("forever")
    assert kept is not None and kept.ttl_ms is None


def test_tasks_result_waits_for_a_2025_11_25_task_of_another_process(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    """The process asked holds no thread of the task: only Redis tells when it ends (it used to answer at once)."""
    runner = two[2][1].tasks
    runner.store.create(TaskRecord("theirs", "wait", core_form=True))
    assert_result_waits_for_a_task_run_elsewhere(runner, "theirs")


def finish(store: Any, task_id: str) -> None:
    def done(record: TaskRecord) -> None:
        record.status = "completed"

    store.update(task_id, done)


def test_the_shared_store_is_bounded_across_its_processes(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    first, second = (server.tasks.store for server in two[2])  # two processes' stores on one Redis
    for store in (first, second):
        assert isinstance(store, RedisTaskStore)
        store.max_tasks, store.max_running = 3, 2
    first.create(TaskRecord("a", "tool", ttl_ms=None))
    finish(second, "a")
    second.create(TaskRecord("b", "tool", ttl_ms=None))
    first.create(TaskRecord("c", "tool", ttl_ms=60_000))
    finish(first, "c")
    second.create(TaskRecord("d", "tool", ttl_ms=None))  # full: "a", which finished first, makes room
    assert {record.task_id for record in first.records()} == {"b", "c", "d"}
    with pytest.raises(MCPError) as refused:  # "b" and "d" run, whichever process asks
        first.create(TaskRecord("e", "tool"))
    assert refused.value.jsonrpc_code == -32603 and refused.value.data == {"maxRunningTasks": 2}
    finish(second, "b")
    first.create(TaskRecord("e", "tool", ttl_ms=None))  # "c" finished before "b": it goes
    assert {record.task_id for record in second.records()} == {"b", "d", "e"}


def test_the_shared_store_bounds_each_callers_running_tasks(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    first, second = (server.tasks.store for server in two[2])
    for store in (first, second):
        assert isinstance(store, RedisTaskStore)
        store.max_running_per_owner = 2
    first.create(TaskRecord("a1", "tool", owner="alice"))
    second.create(TaskRecord("a2", "tool", owner="alice", ttl_ms=None))
    for store in (first, second):  # her third, whichever process asks
        with pytest.raises(MCPError, match=r"too many tasks running for this caller \(at most 2\)") as refused:
            store.create(TaskRecord("a3", "tool", owner="alice"))
        assert refused.value.jsonrpc_code == -32603 and refused.value.data == {"maxRunningTasksPerOwner": 2}
    second.create(TaskRecord("b1", "tool", owner="bob"))
    for number in range(3):  # callers nothing authenticates share only the store's own bound
        first.create(TaskRecord(f"anon{number}", "tool"))
    finish(second, "a2")  # the one without TTL: it ends, and no longer counts
    first.create(TaskRecord("a3", "tool", owner="alice"))
    brief = TaskRecord("b2", "tool", owner="bob", ttl_ms=200)
    second.create(brief)
    with pytest.raises(MCPError, match="for this caller"):
        first.create(TaskRecord("b3", "tool", owner="bob"))
    assert _poll(lambda: first.get("b2") is None)  # expired unfinished: it no longer counts either
    first.create(TaskRecord("b3", "tool", owner="bob"))


def test_one_callers_many_tasks_never_push_out_anothers_results_in_the_shared_store(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    first, second = (server.tasks.store for server in two[2])
    for store in (first, second):
        assert isinstance(store, RedisTaskStore)
        store.max_tasks, store.max_tasks_per_owner, store.retention_ms = 6, 2, 300
    first.create(TaskRecord("bob-report", "tool", owner="bob", ttl_ms=None))
    finish(second, "bob-report")
    for number in range(8):  # alice's, finished one after the other, through either process
        store = (first, second)[number % 2]
        store.create(TaskRecord(f"a{number}", "tool", owner="alice", ttl_ms=None))
        finish((second, first)[number % 2], f"a{number}")
    assert {record.task_id for record in first.records()} == {"bob-report", "a6", "a7"}
    first.max_running_per_owner = 10
    first.create(TaskRecord("a8", "tool", owner="alice", ttl_ms=None))
    second.create(TaskRecord("a9", "tool", owner="alice", ttl_ms=None))  # two running: her finished ones went
    with pytest.raises(MCPError) as refused:  # the lower of her two bounds refuses
        first.create(TaskRecord("a10", "tool", owner="alice", ttl_ms=None))
    assert refused.value.data == {"maxRunningTasksPerOwner": 2}
    assert {record.task_id for record in second.records()} == {"bob-report", "a8", "a9"}
    # Finished tasks expire after their retention; the next task counted clears what Redis kept of their owners.
    finish(first, "a8")
    assert _poll(lambda: first.get("a8") is None and first.get("bob-report") is None)
    second.create(TaskRecord("anon", "tool", ttl_ms=None))
    keys = first.backend.redis
    prefix = first.backend.key_prefix
    assert keys.hlen(f"{prefix}:tasks:owners") == 0
    assert keys.zcard(f"{prefix}:tasks:owner-finished:alice") == keys.zcard(f"{prefix}:tasks:owner-finished:bob") == 0


def test_a_finished_task_of_the_shared_store_goes_after_its_retention(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    store = two[2][0].tasks.store
    assert isinstance(store, RedisTaskStore)
    store.retention_ms = 300
    store.create(TaskRecord("forever", "tool", ttl_ms=None))
    store.create(TaskRecord("running", "tool", ttl_ms=None))
    finish(store, "forever")
    kept = store.get("forever")
    assert kept is not None and kept.ttl_ms is not None and kept.ttl_ms < 60_000  # what it ran, plus 300 ms
    assert _poll(lambda: store.get("forever") is None)  # Redis forgot it
    assert [record.task_id for record in store.records()] == ["running"]
    store.max_tasks = store.max_running = 2
    store.create(TaskRecord("next", "tool"))  # it no longer counts either


def test_a_running_task_of_the_shared_store_stops_counting_at_its_ttl(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    store = two[2][0].tasks.store
    assert isinstance(store, RedisTaskStore)
    store.max_running = 1
    store.create(TaskRecord("brief", "tool", ttl_ms=200))
    with pytest.raises(MCPError, match="too many tasks running"):
        store.create(TaskRecord("next", "tool"))
    assert _poll(lambda: store.get("brief") is None)  # Redis forgot it: it no longer counts
    store.create(TaskRecord("next", "tool"))
    assert [record.task_id for record in store.records()] == ["next"]


def test_a_server_without_task_tools_keeps_no_task_store(redis_server: RedisServer) -> None:
    server = MCPServer("no-tasks")
    backend = RedisBackend(redis_server.url, timeout=2.0)
    try:
        share_tasks(server, backend)
        assert server.task_runner is None
    finally:
        backend.close()


def test_the_redis_store_takes_the_bounds_of_the_store_it_replaces(redis_server: RedisServer) -> None:
    server = MCPServer("bounded")
    server.tool(task="optional")(lambda: "done")
    runner = server.task_runner
    assert runner is not None
    runner.store = MemoryTaskStore(
        max_tasks=50, max_running=7, max_running_per_owner=3, max_tasks_per_owner=4, retention_ms=9
    )
    backend = RedisBackend(redis_server.url, timeout=2.0)
    try:
        share_tasks(server, backend)
        store = runner.store
        assert isinstance(store, RedisTaskStore) and (store.max_tasks, store.max_running) == (50, 7)
        assert (store.max_running_per_owner, store.max_tasks_per_owner, store.retention_ms) == (3, 4, 9)
    finally:
        backend.close()


@contextlib.contextmanager
def listening(wire: Wire, task_id: str) -> Iterator[Iterator[str]]:
    """A ``subscriptions/listen`` stream for ``task_id`` on ``wire``'s process, acknowledged: its SSE lines."""
    meta = {PROTOCOL_VERSION: REVISION, CLIENT_INFO: {"name": "raw", "version": "1"}, CLIENT_CAPABILITIES: ASKING}
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [task_id]}, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "subscriptions/listen",
    }
    with requests.post(wire.url, json=body, headers=headers, stream=True, timeout=TIMEOUT) as stream:
        lines = stream.iter_lines(decode_unicode=True)
        assert _next_message(lines)["method"] == "notifications/subscriptions/acknowledged"
        yield lines


def _heard(lines: Iterator[str], task_id: str, count: int) -> dict[str, dict[str, Any]]:
    """The next ``count`` messages of a listen stream, all ``notifications/tasks`` about ``task_id``, by status."""
    heard = [_next_message(lines) for _ in range(count)]
    assert [message["method"] for message in heard] == ["notifications/tasks"] * count
    assert all(message["params"]["taskId"] == task_id for message in heard)
    assert all(message["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1" for message in heard)
    return {message["params"]["status"]: message["params"] for message in heard}


def test_a_listen_stream_hears_a_task_running_in_another_process(two: tuple[Wire, Wire, list[MCPServer]]) -> None:
    first, second, servers = two
    task_id = start(first, "confirm", capabilities=ASKING)
    [key] = first.until(task_id, lambda task: task["status"] == "input_required", ASKING)["inputRequests"]
    with listening(second, task_id) as lines:
        # Answered, run and finished on the first process: the second's stream hears it all through Redis.
        answer = {key: {"action": "accept", "content": {"go": True}}}
        first.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, ASKING)
        # The handler may finish before the answer's own "working" went out: their order is either.
        by_status = _heard(lines, task_id, 2)
        assert sorted(by_status) == ["completed", "working"]
        assert by_status["completed"]["result"]["content"][0]["text"] == "go=True"
    assert servers[1].tasks.running() == 0  # it ran on the first process only
    assert _poll(lambda: servers[0].tasks.running() == 0)


KILLED_PROCESS = """
import sys, threading
from mcp_sync import Context, MCPServer
from mcp_sync.server import start_http
from mcp_sync.server.scale.redis_backend import RedisBackend

server = MCPServer("tasks-redis-test", "1.0")


@server.tool(task="optional")
def wait(ctx: Context) -> str:
    ctx.cancelled.wait(60)
    return "waited"


running = start_http(server, backend=RedisBackend(sys.argv[1], timeout=2.0))
server.tasks.store.lease_ms = 3000
print(running.url, flush=True)
threading.Event().wait()
"""
"""A process running a task until it is killed, its lease on its tasks three seconds long (renewed every half
second: a loaded machine may delay a renewal by a second or two without the task being taken for dead)."""


def test_a_task_whose_process_was_killed_ends_as_failed_in_another(redis_server: RedisServer) -> None:
    survivor_server = build_server(threading.Event())
    survivor = start_http(survivor_server, backend=RedisBackend(redis_server.url, timeout=2.0))
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_PROCESS, redis_server.url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        doomed, alive = Wire(finish_within(TIMEOUT, child.stdout.readline).strip()), Wire(survivor.url)
        task_id = start(doomed, "wait", capabilities=ASKING)
        time.sleep(3.5)  # past the first lease: renewed meanwhile, so the task still runs
        assert alive.result("tasks/get", {"taskId": task_id}, ASKING)["status"] == "working"
        with listening(alive, task_id) as lines:
            child.kill()
            child.wait(TIMEOUT)
            ended = alive.until(task_id, lambda task: task["status"] != "working", ASKING)
            assert ended["status"] == "failed" and ended["statusMessage"] == PROCESS_STOPPED
            assert ended["error"] == {"code": -32603, "message": PROCESS_STOPPED}
            assert _heard(lines, task_id, 1)["failed"]["error"]["message"] == PROCESS_STOPPED
        # Ended once, and no longer counted as running: the caps count it among the finished.
        store = survivor_server.tasks.store
        assert isinstance(store, RedisTaskStore)
        keys = store.backend.redis
        assert keys.zscore(f"{store.backend.key_prefix}:tasks:running", task_id) is None
        assert keys.zscore(f"{store.backend.key_prefix}:tasks:finished", task_id) is not None
        assert keys.hget(f"{store.backend.key_prefix}:tasks:runners", task_id) is None
    finally:
        child.kill()
        child.wait(TIMEOUT)
        survivor.close()
        survivor_server.stop()


def test_a_process_that_finds_its_running_task_ended_elsewhere_stops_its_handler(
    two: tuple[Wire, Wire, list[MCPServer]],
) -> None:
    first, _, servers = two
    task_id = start(first, "wait")
    assert servers[0].tasks.running() == 1
    # What the second process does to a task whose process let its lease run out (stalled, not dead, here).
    ended = servers[1].tasks.end_stopped(task_id)
    assert ended is not None and ended.status == "failed"
    assert _poll(lambda: servers[0].tasks.running() == 0)  # the first's handler was told to stop
    assert first.finished(task_id)["statusMessage"] == PROCESS_STOPPED  # and the task stayed as ended


def test_the_store_ends_only_the_unfinished_tasks_of_a_process_whose_lease_ran_out(
    redis_server: RedisServer,
) -> None:
    backend = RedisBackend(redis_server.url, timeout=2.0, prefix="leases")
    try:
        gone = RedisTaskStore(backend, lease_ms=100)  # the process that will stop renewing
        gone.create(TaskRecord(task_id="unfinished", tool="wait", created_at=time.time() - 1))
        gone.create(TaskRecord(task_id="finished", tool="wait"))
        gone.update("finished", lambda record: setattr(record, "status", "completed"))
        mine = RedisTaskStore(backend, lease_ms=100)
        mine.create(TaskRecord(task_id="mine", tool="wait"))
        time.sleep(0.3)  # both leases ran out; neither process renewed its own

        # Without on_stopped, the task stays as it is (until its TTL).
        assert [record.status for record in RedisTaskStore(backend).records()] == ["working", "completed", "working"]

        asked: list[str] = []

        def end(task_id: str) -> TaskRecord | None:
            asked.append(task_id)
            return reader.update(task_id, lambda record: setattr(record, "status", "failed"))

        reader = RedisTaskStore(backend, on_stopped=end)
        assert [record.status for record in reader.records()] == ["failed", "completed", "failed"]
        assert sorted(asked) == ["mine", "unfinished"]  # a finished task is not asked about, nor asked about twice
        assert reader.get("unfinished") is not None and len(asked) == 2
        # Its own tasks a process never ends so, lease or not (it is running them).
        mine.on_stopped = end
        mine.create(TaskRecord(task_id="mine-too", tool="wait"))
        time.sleep(0.3)
        found = mine.get("mine-too")
        assert found is not None and found.status == "working" and len(asked) == 2
        # An ending that finds the task gone meanwhile leaves the record as read.
        vanished = RedisTaskStore(backend, on_stopped=lambda task_id: None)
        found = vanished.get("mine-too")
        assert found is not None and found.status == "working"
        # The process's lease is renewed at each sweep (while it runs tasks): its tasks then stand.
        mine.lease_ms = 60_000  # (long enough for any delay before the read below)
        mine.sweep()
        assert RedisTaskStore(backend, on_stopped=end).get("mine-too") is not None
        assert len(asked) == 2
    finally:
        backend.close()


def _poll(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# ----------------------------------------------------- gunicorn, two machines

SCALED_APP = "examples.scaled_app:application"


def test_two_worker_processes_share_their_tasks(tmp_path: Path) -> None:
    with running_redis(tmp_path / "redis.log") as redis_server:
        argv = gunicorn("--threads", "8", "-w", "1", SCALED_APP)
        env = {"MCP_SYNC_REDIS_URL": redis_server.url}
        with (
            hosting("machine-a", argv, tmp_path, sigterm_status=0, **env) as first_host,
            hosting("machine-b", argv, tmp_path, sigterm_status=0, **env) as second_host,
        ):
            first, second = Wire(first_host.base + "/mcp"), Wire(second_host.base + "/mcp")
            task_id = start(first, "report", {"seconds": 0}, capabilities=ASKING)
            waiting = second.until(task_id, lambda task: task["status"] == "input_required", ASKING)
            [key] = waiting["inputRequests"]
            answer: dict[str, Any] = {key: {"action": "accept", "content": {"publish": True}}}
            second.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, ASKING)
            done = second.until(task_id, lambda task: is_terminal(task["status"]), ASKING)
            text = done["result"]["content"][0]["text"]
            assert done["status"] == "completed" and text.startswith("report published by process ")
            ran_on = int(text.rpartition(" ")[2])
            pid = second.result("tools/call", {"name": "pid", "arguments": {}})["structuredContent"]["result"]
            assert pid != ran_on  # the answer and the result came through the other process

            long_job = start(first, "report", {"seconds": 60}, capabilities=ASKING)
            with listening(second, long_job) as lines:
                second.result("tasks/cancel", {"taskId": long_job}, ASKING)
                # The first process ends the task; the second's listen stream hears it.
                assert _heard(lines, long_job, 1)["cancelled"]["taskId"] == long_job
            assert first.until(long_job, lambda task: is_terminal(task["status"]), ASKING)["status"] == "cancelled"
