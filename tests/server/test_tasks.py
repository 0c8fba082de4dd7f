"""Tools run as tasks (the tasks extension, SEP-2663, and the 2025-11-25 form), on the raw wire.

The extension is tested over a real loopback HTTP socket at 2026-07-28
(raw ``requests`` calls shaped like the conformance harness's), the
2025-11-25 form and the extension at a handshake revision over a real stdio
subprocess (``tests/servers/tasks_server.py``). Waits are deadline polls on
what the server reports (``tasks/get``, the task store), or Events.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import connect_pair, end_raw_peer
from servers.tasks_server import build_server

from mcp_sync import Context, MCPServer
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, SUBSCRIPTION_ID
from mcp_sync.protocol.tasks import EXTENSION, core_task, is_terminal
from mcp_sync.runtime.workers import ElasticPool
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.authorization import AuthInfo
from mcp_sync.server.backend import BackendUnavailable
from mcp_sync.server.context import StatelessChannel
from mcp_sync.server.stateless import StatelessRequest
from mcp_sync.server.task_store import MemoryTaskStore, TaskRecord
from mcp_sync.server.tasks import TaskRunner
from mcp_sync.types import ClientCapabilities

REVISION = "2026-07-28"
TIMEOUT = 10.0
ROOT = Path(__file__).resolve().parent.parent.parent
TASKS = {"extensions": {EXTENSION: {}}}
ASKING = {"elicitation": {}, "sampling": {}, "extensions": {EXTENSION: {}}}


class Wire:
    """Raw 2026-07-28 requests to one HTTP server."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.ids = iter(range(1, 1_000_000))

    def post(
        self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None, **headers: str
    ) -> tuple[int, dict[str, Any]]:
        body = dict(params)
        body["_meta"] = {
            PROTOCOL_VERSION: REVISION,
            CLIENT_INFO: {"name": "raw", "version": "1"},
            CLIENT_CAPABILITIES: capabilities if capabilities is not None else TASKS,
        }
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": REVISION,
            "Mcp-Method": method,
        }
        name = params.get("name", params.get("taskId"))
        if isinstance(name, str):
            sent["Mcp-Name"] = name
        sent.update(headers)
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": body}
        response = self.http.post(self.url, json=message, headers=sent, timeout=TIMEOUT)
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
            return response.status_code, json.loads(data[-1])
        return response.status_code, response.json()

    def result(self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Any:
        status, message = self.post(method, params, capabilities)
        assert status == 200 and "result" in message, message
        return message["result"]

    def error(self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Any:
        _, message = self.post(method, params, capabilities)
        assert "error" in message, message
        return message["error"]

    def until(self, task_id: str, done: Callable[[dict[str, Any]], bool], capabilities: Any = None) -> dict[str, Any]:
        """``tasks/get`` until ``done`` says so (or the deadline passes)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            task = self.result("tasks/get", {"taskId": task_id}, capabilities)
            if done(task) or time.monotonic() > deadline:
                return task
            time.sleep(0.02)  # a polling interval, not a synchronisation

    def finished(self, task_id: str) -> dict[str, Any]:
        return self.until(task_id, lambda task: is_terminal(task["status"]))


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def served(gate: threading.Event) -> Iterator[tuple[MCPServer, RunningHTTPServer]]:
    server = build_server(gate)
    running = start_http(server)
    try:
        yield server, running
    finally:
        gate.set()
        running.close()
        server.stop()


@pytest.fixture
def wire(served: tuple[MCPServer, RunningHTTPServer]) -> Wire:
    return Wire(served[1].url)


def start(wire: Wire, name: str, arguments: dict[str, Any] | None = None, capabilities: Any = None) -> str:
    created = wire.result("tools/call", {"name": name, "arguments": arguments or {}}, capabilities)
    assert created["resultType"] == "task", created
    return str(created["taskId"])


def declaring(server: MCPServer, auth: AuthInfo | None = None) -> Context:
    """The context of a 2026-07-28 request that declares the extension (the one era it applies to)."""
    request = StatelessRequest(REVISION, ClientCapabilities.model_validate(TASKS))
    return Context(server=server, channel=StatelessChannel(request), meta={CLIENT_CAPABILITIES: TASKS}, auth=auth)


def deadline_poll(condition: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# ------------------------------------------------------------------ deciding


def test_a_client_without_the_extension_gets_a_plain_result(wire: Wire) -> None:
    result = wire.result("tools/call", {"name": "slow", "arguments": {"seconds": 0}}, {})
    assert result["resultType"] == "complete" and "taskId" not in result
    assert result["content"][0]["text"] == "done"


def test_a_client_of_the_extension_gets_a_flat_task_it_can_follow(wire: Wire) -> None:
    created = wire.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.05}, "task": {"ttl": 5}})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 5  # params.task is ignored in the extension
    assert isinstance(created["pollIntervalMs"], int)
    assert not {"ttl", "pollInterval", "task", "result", "inputRequests", "requestState"} & set(created)
    assert created["createdAt"].endswith("Z") and created["lastUpdatedAt"] == created["createdAt"]
    right_away = wire.result("tasks/get", {"taskId": created["taskId"]})
    assert right_away["taskId"] == created["taskId"] and right_away["resultType"] == "complete"
    done = wire.finished(created["taskId"])
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "done"
    assert "error" not in done and "resultType" not in done["result"]


def test_bad_arguments_are_refused_before_a_task_starts(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    server, running = served
    error = Wire(running.url).error("tools/call", {"name": "slow", "arguments": {"seconds": "soon"}})
    assert error["code"] == -32602 and "seconds" in error["message"]
    assert server.tasks.store.records() == []


def test_a_plain_tool_answers_a_client_of_the_extension_with_complete(wire: Wire) -> None:
    result = wire.result("tools/call", {"name": "plain", "arguments": {"name": "Ada"}})
    assert result["resultType"] == "complete" and result["content"][0]["text"] == "Hello, Ada!"


def test_a_required_task_without_the_extension_names_it(wire: Wire) -> None:
    error = wire.error("tools/call", {"name": "must", "arguments": {}}, {})
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    assert wire.finished(start(wire, "must"))["result"]["content"][0]["text"] == "ran as a task"


def test_the_tasks_methods_need_the_extension(wire: Wire) -> None:
    task_id = start(wire, "slow", {"seconds": 0})
    for method, params in [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
        ("tasks/cancel", {"taskId": task_id}),
    ]:
        assert wire.error(method, params, {})["code"] == -32021


def test_unknown_ids_and_removed_methods_get_the_extensions_errors(wire: Wire) -> None:
    for method, params in [
        ("tasks/get", {"taskId": "no-such-task"}),
        ("tasks/update", {"taskId": "no-such-task", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "no-such-task"}),
    ]:
        error = wire.error(method, params)
        assert error["code"] == -32602 and "no-such-task" in error["message"]
    assert wire.error("tasks/result", {"taskId": "no-such-task"})["code"] == -32601
    assert wire.error("tasks/list", {})["code"] == -32601
    assert wire.error("tasks/get", {})["code"] == -32602  # no taskId at all


def test_mcp_name_must_match_the_task_id(wire: Wire) -> None:
    task_id = start(wire, "slow", {"seconds": 0})
    status, message = wire.post("tasks/get", {"taskId": task_id}, None, **{"Mcp-Name": "another-task"})
    assert status == 400 and message["error"]["code"] == -32020


# ------------------------------------------------------------- the outcomes


def test_cancel_is_cooperative_and_idempotent(wire: Wire) -> None:
    task_id = start(wire, "slow", {"seconds": 60})
    ack = wire.result("tasks/cancel", {"taskId": task_id})
    assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
    assert wire.finished(task_id)["status"] == "cancelled"
    assert wire.result("tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
    assert wire.result("tasks/get", {"taskId": task_id})["status"] == "cancelled"


def test_a_tool_error_completes_the_task_with_is_error(wire: Wire) -> None:
    done = wire.finished(start(wire, "crash"))
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "the tool broke" in done["result"]["content"][0]["text"]


def test_a_protocol_error_fails_the_task(wire: Wire) -> None:
    done = wire.finished(start(wire, "broken"))
    assert done["status"] == "failed" and "result" not in done
    assert done["error"] == {"code": -32602, "message": "the request was wrong after all", "data": {"why": "test"}}
    assert done["statusMessage"] == "the request was wrong after all"


def test_elicitation_in_a_task_waits_for_tasks_update(wire: Wire) -> None:
    task_id = start(wire, "ask", capabilities=ASKING)
    waiting = wire.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    assert waiting["status"] == "input_required"
    [(key, request)] = waiting["inputRequests"].items()
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "Name?"
    ignored = {"never-asked": {"action": "accept", "content": {}}}
    assert wire.result("tasks/update", {"taskId": task_id, "inputResponses": ignored}, ASKING)["resultType"] == (
        "complete"
    )
    assert wire.result("tasks/get", {"taskId": task_id}, ASKING)["status"] == "input_required"
    answer = {key: {"action": "accept", "content": {"name": "Ada"}}}
    wire.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, ASKING)
    done = wire.until(task_id, lambda task: is_terminal(task["status"]), ASKING)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Hello, Ada!"
    assert "inputRequests" not in done


def test_sampling_in_a_task_waits_for_tasks_update(wire: Wire) -> None:
    task_id = start(wire, "model", capabilities=ASKING)
    waiting = wire.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    [(key, request)] = waiting["inputRequests"].items()
    assert request["method"] == "sampling/createMessage"
    reply = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    wire.result("tasks/update", {"taskId": task_id, "inputResponses": {key: reply}}, ASKING)
    done = wire.until(task_id, lambda task: is_terminal(task["status"]), ASKING)
    assert done["result"]["content"][0]["text"] == "model said: hi"


def test_an_answer_that_does_not_fit_fails_the_task(wire: Wire) -> None:
    task_id = start(wire, "model", capabilities=ASKING)
    waiting = wire.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    [key] = waiting["inputRequests"]
    wire.result("tasks/update", {"taskId": task_id, "inputResponses": {key: {"no": "message"}}}, ASKING)
    done = wire.until(task_id, lambda task: is_terminal(task["status"]), ASKING)
    assert done["status"] == "failed" and "sampling/createMessage" in done["error"]["message"]


def test_a_question_the_client_cannot_answer_fails_the_task(wire: Wire) -> None:
    done = wire.finished(start(wire, "ask"))  # the client declared the extension, not elicitation
    assert done["status"] == "failed" and done["error"]["code"] == -32021


def test_cancelling_a_task_waiting_for_input_cancels_it(wire: Wire) -> None:
    task_id = start(wire, "ask", capabilities=ASKING)
    wire.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    wire.result("tasks/cancel", {"taskId": task_id}, ASKING)
    assert wire.until(task_id, lambda task: is_terminal(task["status"]), ASKING)["status"] == "cancelled"


def test_a_task_may_gather_input_on_its_call_first(wire: Wire) -> None:
    capabilities = {**ASKING, "roots": {}}
    params: dict[str, Any] = {"name": "everything", "arguments": {}}
    round_one = wire.result("tools/call", params, capabilities)
    assert round_one["resultType"] == "input_required" and list(round_one["inputRequests"]) == ["first"]
    params.update(inputResponses={"first": {"action": "accept", "content": {"name": "Ada"}}})
    params.update(requestState=round_one["requestState"])
    task_id = wire.result("tools/call", params, capabilities)["taskId"]
    waiting = wire.until(task_id, lambda task: task["status"] == "input_required", capabilities)
    [(key, request)] = waiting["inputRequests"].items()  # the first answer was not asked again
    assert request["method"] == "roots/list"
    wire.result("tasks/update", {"taskId": task_id, "inputResponses": {key: {"roots": [{"uri": "file:///w"}]}}})
    done = wire.until(task_id, lambda task: is_terminal(task["status"]), capabilities)
    assert done["result"]["content"][0]["text"] == "raw: Ada ['file:///w']"


def test_an_exception_that_is_no_tool_error_fails_the_task(wire: Wire) -> None:
    done = wire.finished(start(wire, "escapes"))
    assert done["status"] == "failed" and done["error"]["code"] == -32603


def test_a_task_cancelled_while_queued_never_runs(
    served: tuple[MCPServer, RunningHTTPServer], gate: threading.Event
) -> None:
    server, running = served
    server.tasks.max_threads = 1
    wire = Wire(running.url)
    first = start(wire, "gated")
    queued = start(wire, "crash")
    wire.result("tasks/cancel", {"taskId": queued})
    gate.set()
    assert wire.finished(first)["status"] == "completed"
    assert wire.finished(queued)["status"] == "cancelled"  # a crash, had it run


# -------------------------------------------------------- expiry and bounds


def test_a_task_never_polled_expires_at_its_ttl_and_is_released(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    server, running = served
    wire = Wire(running.url)
    server.tasks.ttl_ms = 300
    finished = start(wire, "slow", {"seconds": 0})
    still_running = start(wire, "slow", {"seconds": 60})  # the expiry cancels it
    still_asking = start(wire, "ask", capabilities=ASKING)  # the expiry ends its wait
    store = server.tasks.store
    assert isinstance(store, MemoryTaskStore)
    assert deadline_poll(lambda: len(store) == 0 and server.tasks.running() == 0)
    for task_id in (finished, still_running, still_asking):
        assert wire.error("tasks/get", {"taskId": task_id})["code"] == -32602
    assert deadline_poll(lambda: not any(t.name == "mcp-sync-task-reaper" for t in threading.enumerate()))


def test_a_thousand_tasks_run_on_bounded_threads_and_none_is_lost(
    served: tuple[MCPServer, RunningHTTPServer], gate: threading.Event
) -> None:
    server, running = served
    server.tasks.max_threads = 4
    wire = Wire(running.url)
    ids = [start(wire, "gated") for _ in range(1000)]
    assert len(set(ids)) == 1000
    workers = [t for t in threading.enumerate() if t.name.startswith("mcp-sync-task") and "reaper" not in t.name]
    assert 1 <= len(workers) <= 4
    assert server.tasks.running() == 1000
    gate.set()
    store = server.tasks.store
    assert deadline_poll(lambda: all(record.status == "completed" for record in store.records()), 60)
    assert {record.task_id for record in store.records()} == set(ids)
    assert wire.result("tasks/get", {"taskId": ids[-1]})["result"]["content"][0]["text"] == "through"


def test_a_store_full_of_running_tasks_refuses_new_ones(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    server, running = served
    server.tasks.store = MemoryTaskStore(max_tasks=5, max_running=1)
    wire = Wire(running.url)
    first = start(wire, "slow", {"seconds": 60})
    error = wire.error("tools/call", {"name": "slow", "arguments": {"seconds": 0}})
    assert error["code"] == -32603 and "too many tasks running (at most 1)" in error["message"]
    assert error["data"] == {"maxRunningTasks": 1}
    wire.result("tasks/cancel", {"taskId": first})
    assert wire.finished(first)["status"] == "cancelled"
    assert wire.finished(start(wire, "slow", {"seconds": 0}))["status"] == "completed"  # room again


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def finish(store: MemoryTaskStore, task_id: str) -> None:
    def done(record: TaskRecord) -> None:
        record.status = "completed"

    store.update(task_id, done)


def test_a_store_without_ttls_forgets_the_tasks_that_finished_first() -> None:
    store = MemoryTaskStore(max_tasks=3, max_running=2)
    for task_id in ("a", "b", "c"):
        store.create(TaskRecord(task_id, "tool", ttl_ms=None))
        if task_id != "b":
            finish(store, task_id)
    # Full: "a" (finished first) makes room, then "c"; "b" still runs and is kept.
    store.create(TaskRecord("d", "tool", ttl_ms=None))
    assert [record.task_id for record in store.records()] == ["b", "c", "d"]
    with pytest.raises(MCPError) as refused:  # "b" and "d" run: no third
        store.create(TaskRecord("e", "tool", ttl_ms=None))
    assert refused.value.jsonrpc_code == -32603
    finish(store, "b")
    store.create(TaskRecord("e", "tool", ttl_ms=None))
    assert [record.task_id for record in store.records()] == ["b", "d", "e"]  # "c" finished before "b"
    assert store.sweep() == []  # (the finished ones go an hour after they finished: see below)


def test_a_finished_task_is_forgotten_within_its_retention_even_without_ttl() -> None:
    clock = Clock()
    store = MemoryTaskStore(clock=clock)  # the defaults: a finished task is kept an hour at most
    store.create(TaskRecord("forever", "tool", created_at=clock.now, ttl_ms=None))
    store.create(TaskRecord("long", "tool", created_at=clock.now, ttl_ms=10 * 60 * 60 * 1000))
    store.create(TaskRecord("brief", "tool", created_at=clock.now, ttl_ms=60_000))
    store.create(TaskRecord("running", "tool", created_at=clock.now, ttl_ms=None))
    clock.now += 5
    for task_id in ("forever", "long", "brief"):
        finish(store, task_id)
    # The TTL the task reports says so: what it ran, plus the hour (a shorter TTL stays as it was).
    assert [store.get(task_id).ttl_ms for task_id in ("forever", "long", "brief")] == [  # type: ignore[union-attr]
        3_605_000,
        3_605_000,
        60_000,
    ]
    clock.now += 60 * 60 + 1
    assert sorted(store.sweep()) == ["brief", "forever", "long"]
    assert [record.task_id for record in store.records()] == ["running"]  # unfinished: kept (no TTL)
    assert store.next_expiry() is None


def test_one_caller_cannot_take_every_running_place() -> None:
    store = MemoryTaskStore()  # the defaults: 100 unfinished tasks per caller, 1,000 in all
    for number in range(100):
        store.create(TaskRecord(f"a{number}", "tool", owner="alice"))
    with pytest.raises(MCPError) as refused:
        store.create(TaskRecord("a100", "tool", owner="alice"))
    assert refused.value.jsonrpc_code == -32603 and refused.value.data == {"maxRunningTasksPerOwner": 100}
    assert "too many tasks running for this caller (at most 100)" in refused.value.message
    store.create(TaskRecord("b0", "tool", owner="bob"))  # others still may
    for number in range(150):  # callers nothing authenticates share only the store's own bound
        store.create(TaskRecord(f"anon{number}", "tool"))
    finish(store, "a0")
    store.create(TaskRecord("a100", "tool", owner="alice"))  # one of hers ended: room for one more


def test_one_callers_many_tasks_never_push_out_anothers_results() -> None:
    store = MemoryTaskStore()  # the defaults: 10,000 tasks kept, 1,000 of one caller's
    store.create(TaskRecord("bob-report", "tool", owner="bob", ttl_ms=None))
    finish(store, "bob-report")
    for number in range(10_050):  # alice's, finished one after the other: her own that finished first make room
        store.create(TaskRecord(f"a{number}", "tool", owner="alice", ttl_ms=None))
        finish(store, f"a{number}")
    kept = [record.task_id for record in store.records()]
    assert "bob-report" in kept  # his result waits for him
    assert kept[1:] == [f"a{number}" for number in range(9_050, 10_050)]
    store.create(TaskRecord("anon", "tool", ttl_ms=None))  # nobody's: only the store's own bound
    assert len(store) == 1_002


def test_the_tasks_of_an_owner_at_its_bound_make_room_only_once_finished() -> None:
    store = MemoryTaskStore(max_tasks_per_owner=3, max_running_per_owner=10)
    for task_id in ("a", "b", "c"):
        store.create(TaskRecord(task_id, "tool", owner="alice", ttl_ms=None))
    with pytest.raises(MCPError) as refused:  # three running, none finished: the lower bound of the two refuses
        store.create(TaskRecord("d", "tool", owner="alice", ttl_ms=None))
    assert refused.value.data == {"maxRunningTasksPerOwner": 3}
    finish(store, "b")
    finish(store, "a")
    store.create(TaskRecord("d", "tool", owner="alice", ttl_ms=None))  # "b" finished first: it goes
    assert [record.task_id for record in store.records()] == ["a", "c", "d"]

    def reopen(record: TaskRecord) -> None:  # no runner does it; a store stays consistent anyway
        record.status = "working"

    store.update("a", reopen)  # running again: no longer the owner's to forget for room
    with pytest.raises(MCPError, match=r"for this caller \(at most 3\)"):
        store.create(TaskRecord("e", "tool", owner="alice", ttl_ms=None))


def test_an_owners_finished_tasks_swept_leave_no_trace() -> None:
    clock = Clock()
    store = MemoryTaskStore(max_tasks_per_owner=2, clock=clock, retention_ms=1_000)
    for task_id in ("a", "b"):
        store.create(TaskRecord(task_id, "tool", created_at=clock.now, owner="alice", ttl_ms=None))
        finish(store, task_id)
    clock.now += 2
    assert sorted(store.sweep()) == ["a", "b"]
    for task_id in ("c", "d"):  # her count starts again from nothing: both kept
        store.create(TaskRecord(task_id, "tool", created_at=clock.now, owner="alice", ttl_ms=None))
    assert [record.task_id for record in store.records()] == ["c", "d"]


def test_the_running_cap_is_never_above_the_cap_of_tasks_kept() -> None:
    store = MemoryTaskStore(max_tasks=1, max_running=5)
    store.create(TaskRecord("a", "tool"))
    with pytest.raises(MCPError, match=r"at most 1\)"):
        store.create(TaskRecord("b", "tool"))


def test_tasks_forgotten_to_make_room_leave_nothing_behind() -> None:
    clock = Clock()
    store = MemoryTaskStore(max_tasks=2, clock=clock)
    for number in range(19):  # each with a TTL: forgotten for room long before it expires
        store.create(TaskRecord(f"t{number}", "tool", created_at=clock.now, ttl_ms=60_000))
        finish(store, f"t{number}")
    assert len(store) == 2 and len(store._expiry) <= 4  # the forgotten tasks' expiries are dropped in time
    clock.now += 61
    assert sorted(store.sweep()) == ["t17", "t18"] and len(store) == 0 and not store._expiry


def test_a_task_taken_back_from_finished_runs_again_in_the_count() -> None:
    store = MemoryTaskStore(max_tasks=3, max_running=1)
    store.create(TaskRecord("a", "tool"))
    finish(store, "a")

    def reopen(record: TaskRecord) -> None:  # no runner does it; a store stays consistent anyway
        record.status = "working"

    store.update("a", reopen)
    with pytest.raises(MCPError, match="too many tasks running"):
        store.create(TaskRecord("b", "tool"))


# ------------------------------------------------------------ notifications


def test_status_changes_reach_a_listen_stream_for_the_task(wire: Wire) -> None:
    task_id = start(wire, "ask", capabilities=ASKING)
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"taskIds": [task_id]},
            "_meta": {
                PROTOCOL_VERSION: REVISION,
                CLIENT_INFO: {"name": "raw", "version": "1"},
                CLIENT_CAPABILITIES: ASKING,
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "subscriptions/listen",
    }
    waiting = wire.until(task_id, lambda task: task["status"] == "input_required", ASKING)
    [key] = waiting["inputRequests"]
    with requests.post(wire.url, json=body, headers=headers, stream=True, timeout=TIMEOUT) as stream:
        lines = stream.iter_lines(decode_unicode=True)
        acknowledged = _next_message(lines)
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"]["notifications"]["taskIds"] == [task_id]
        answer = {key: {"action": "accept", "content": {"name": "Bo"}}}
        other = start(wire, "slow", {"seconds": 0})  # not listened to: nothing heard about it
        assert wire.finished(other)["status"] == "completed"
        wire.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, ASKING)
        heard = [_next_message(lines) for _ in range(2)]
        assert [message["method"] for message in heard] == ["notifications/tasks"] * 2
        # The handler may finish before the answer's own "working" went out (it reads its task now and then).
        by_status = {message["params"]["status"]: message for message in heard}
        assert sorted(by_status) == ["completed", "working"]
        assert by_status["completed"]["params"]["result"]["content"][0]["text"] == "Hello, Bo!"
        assert all(message["params"]["taskId"] == task_id for message in heard)
        assert heard[0]["params"]["_meta"][SUBSCRIPTION_ID] == "listen-1"


def test_listening_for_tasks_needs_the_extension(wire: Wire) -> None:
    error = wire.error("subscriptions/listen", {"notifications": {"taskIds": ["any"]}}, {})
    assert error["code"] == -32021 and error["data"]["requiredCapabilities"]["extensions"] == {EXTENSION: {}}


def test_listening_for_tasks_takes_only_the_callers_task_ids(wire: Wire) -> None:
    mine = start(wire, "slow", {"seconds": 0})
    for task_ids in ("abc", [mine, 5], {"id": mine}, ["never-started"]):
        error = wire.error("subscriptions/listen", {"notifications": {"taskIds": task_ids}})
        assert error["code"] == -32602, (task_ids, error)


def _next_message(lines: Iterator[str]) -> dict[str, Any]:
    for line in lines:
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    raise AssertionError("the stream ended")


# ------------------------------------------------------------ in the process


def test_a_task_is_seen_only_by_whom_started_it() -> None:
    server = MCPServer("owners")
    gate = threading.Event()
    server.register_tool("wait", lambda arguments, ctx: gate.wait(TIMEOUT) and "ok", task="optional")
    alice = declaring(server, auth=AuthInfo(subject="alice", client_id="a"))
    bob = declaring(server, auth=AuthInfo(subject="bob", client_id="b"))
    try:
        record = server.tasks.start("wait", {}, alice)
        from mcp_sync.protocol.tasks import GetTaskRequestParams

        assert server.tasks.get(GetTaskRequestParams(task_id=record.task_id), alice).to_wire()["status"] == "working"
        with pytest.raises(MCPError) as refused:
            server.tasks.get(GetTaskRequestParams(task_id=record.task_id), bob)
        assert refused.value.jsonrpc_code == -32602
        server.tasks.check_listen([record.task_id], alice)  # her own task: she may listen for it
        with pytest.raises(MCPError) as refused:
            server.tasks.check_listen([record.task_id], bob)  # nor may he listen for its result
        assert refused.value.jsonrpc_code == -32602
    finally:
        gate.set()
        server.stop()


class FlakyStore(MemoryTaskStore):
    """A shared store that is away (a Redis blip) for the methods named in ``away``."""

    def __init__(self, *away: str) -> None:
        super().__init__()
        self.away = set(away)
        self.failed = threading.Event()

    def _check(self, method: str) -> None:
        if method in self.away:
            self.failed.set()
            raise BackendUnavailable("Redis is away")

    def sweep(self) -> list[str]:
        try:
            self._check("sweep")
        finally:
            self.away.discard("sweep")  # away for one sweep only
        return super().sweep()

    def update(self, task_id: str, change: Callable[[TaskRecord], None]) -> TaskRecord | None:
        self._check("update")
        return super().update(task_id, change)


def waiting_server(name: str) -> tuple[MCPServer, Context]:
    server = MCPServer(name)
    server.register_tool("wait", lambda arguments, ctx: ctx.cancelled.wait(TIMEOUT) and "stopped", task="optional")
    return server, declaring(server)


def test_stopping_the_server_ends_the_tasks_still_in_line() -> None:
    """Tasks queued behind a busy thread never run once the server stops: they end cancelled, not "working"."""
    server, ctx = waiting_server("stopping")
    server.tasks.max_threads = 1
    ids = [server.tasks.start("wait", {}, ctx).task_id for _ in range(3)]
    server.stop()
    store = server.tasks.store
    assert [store.get(task_id).status for task_id in ids] == ["cancelled"] * 3  # type: ignore[union-attr]
    assert server.tasks.running() == 0


def test_a_task_started_as_the_server_stops_is_refused_and_ended() -> None:
    server, ctx = waiting_server("racing")
    closed = ElasticPool("mcp-sync-test-pool", max_threads=1)
    closed.close()
    server.tasks._pool = closed  # the stop closed the pool between start()'s check and its submit
    with pytest.raises(MCPError, match="shutting down"):
        server.tasks.start("wait", {}, ctx)
    [record] = server.tasks.store.records()
    assert record.status == "cancelled" and server.tasks.running() == 0
    server.stop()


def test_tasks_in_line_at_stop_are_forgotten_even_when_the_store_is_away() -> None:
    server, ctx = waiting_server("away")
    server.tasks.max_threads = 1
    store = server.tasks.store = FlakyStore()
    ids = [server.tasks.start("wait", {}, ctx).task_id for _ in range(2)]
    store.away.add("update")  # the store is away as the server stops: the records expire at their TTL instead
    server.stop()
    assert server.tasks.running() == 0 and {store.get(task_id).status for task_id in ids} == {"working"}  # type: ignore[union-attr]


def test_the_reaper_outlives_a_store_that_fails_for_a_moment() -> None:
    server, ctx = waiting_server("blip")
    store = server.tasks.store = FlakyStore("sweep")
    try:
        task_id = server.tasks.start("wait", {}, ctx).task_id
        assert store.failed.wait(TIMEOUT)

        def cancel_elsewhere(record: TaskRecord) -> None:  # as another process's tasks/cancel does
            record.cancel_requested = True

        store.update(task_id, cancel_elsewhere)
        assert deadline_poll(lambda: store.get(task_id).status == "cancelled")  # type: ignore[union-attr]
    finally:
        server.stop()


def test_tasks_kept_elsewhere_are_answered_without_their_threads() -> None:
    """A task in the store that this process does not run (as with a shared store): cancel, update, result."""
    server = MCPServer("elsewhere")
    runner = server.tasks
    declared = declaring(server)
    plain = Context(server=server)
    runner.store.create(TaskRecord("ext", "tool"))
    runner.store.create(TaskRecord("old", "tool", core_form=True))
    from mcp_sync.protocol.tasks import CancelTaskRequestParams, GetTaskRequestParams, UpdateTaskRequestParams

    assert runner.cancel(CancelTaskRequestParams(task_id="ext"), declared).to_wire() == {"resultType": "complete"}
    assert runner.store.get("ext").cancel_requested  # type: ignore[union-attr]
    runner.update(UpdateTaskRequestParams(task_id="ext", input_responses={}), declared)
    assert_result_waits_for_a_task_run_elsewhere(runner, "old")
    with pytest.raises(MCPError) as refused:
        runner.get(GetTaskRequestParams(task_id="ext"), plain)  # an extension task, asked without it
    assert refused.value.jsonrpc_code == -32021
    without_interval = TaskRecord("x", "tool").task().model_copy(update={"poll_interval_ms": None})
    assert "pollInterval" not in core_task(without_interval)
    server.stop()


def assert_result_waits_for_a_task_run_elsewhere(runner: TaskRunner, task_id: str) -> None:
    """``tasks/result`` for a 2025-11-25 task this process does not run waits for its end, then answers it."""
    from mcp_sync.protocol.tasks import GetTaskRequestParams

    answered: concurrent.futures.Future[Any] = concurrent.futures.Future()
    plain = Context(server=runner.server)

    def ask() -> None:
        try:
            answered.set_result(runner.result(GetTaskRequestParams(task_id=task_id), plain).to_wire())
        except MCPError as exc:
            answered.set_exception(exc)

    waiter = threading.Thread(target=ask, name="test-tasks-result", daemon=True)
    waiter.start()
    try:
        assert not answered.done()  # the task still works (elsewhere): the answer waits

        def finish(record: TaskRecord) -> None:  # as the process running it does
            record.status = "completed"
            record.result = {"content": [{"type": "text", "text": "done elsewhere"}]}

        runner.store.update(task_id, finish)
        result = answered.result(TIMEOUT)
        assert result["content"][0]["text"] == "done elsewhere"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    finally:
        waiter.join(TIMEOUT)


def test_tasks_result_ends_with_its_request_or_with_the_task() -> None:
    from mcp_sync.protocol.tasks import GetTaskRequestParams

    server = MCPServer("ending")
    runner = server.tasks
    runner.store.create(TaskRecord("stuck", "tool", core_form=True))
    given_up = Context(server=server, cancelled=threading.Event())
    given_up.cancelled.set()  # the client cancelled its tasks/result (or went away)
    with pytest.raises(MCPError) as cancelled:
        runner.result(GetTaskRequestParams(task_id="stuck"), given_up)
    assert cancelled.value.code == MCP_CODES.REQUEST_CANCELLED
    runner.store.create(TaskRecord("brief", "tool", core_form=True, ttl_ms=100))
    with pytest.raises(MCPError) as expired:  # never ended, and forgotten at its TTL: unknown now
        runner.result(GetTaskRequestParams(task_id="brief"), Context(server=server))
    assert expired.value.jsonrpc_code == -32602
    server.stop()


def test_task_support_is_checked_when_registering() -> None:
    server = MCPServer("checks")
    with pytest.raises(MCPError, match="forbidden, optional or required"):
        server.register_tool("bad", lambda arguments, ctx: "", task="sometimes")  # type: ignore[arg-type]
    assert "tasks/get" not in server.extension_methods() and server.task_runner is None
    assert server.task_support("nothing") == ("forbidden", None)
    with pytest.raises(MCPError, match="Unknown tool: nothing"):
        server.check_tool_arguments("nothing", {})
    server.register_tool("hello", lambda arguments, ctx: "hi")
    client = connect_pair(server)  # a server without task tools calls its tools as before
    try:
        assert client.call_tool("hello", {}).text == "hi"
    finally:
        client.close()
        server.stop()


def test_a_record_travels_as_json() -> None:
    record = TaskRecord("t1", "tool", ttl_ms=None, answers={"a": 1})
    again = TaskRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert again == record and again.expires_at == float("inf")
    assert again.task().to_wire()["ttlMs"] is None
    assert core_task(again.task())["ttl"] is None
    store = MemoryTaskStore()
    store.create(again)
    assert store.next_expiry() is None and store.update("nope", lambda r: None) is None


def test_the_2025_11_25_form_keeps_its_old_names() -> None:
    """It was called "legacy": the old imports still work, and a record kept under the old field name still reads."""
    from mcp_sync.protocol.tasks import CoreCreateTaskResult, LegacyCreateTaskResult, legacy_task

    assert LegacyCreateTaskResult is CoreCreateTaskResult and legacy_task is core_task
    kept = {**TaskRecord("t1", "tool").to_json(), "legacy": True}  # as an earlier release wrote it to Redis
    del kept["core_form"]
    assert TaskRecord.from_json(kept).core_form


def test_a_closed_runner_refuses_new_tasks_until_it_is_used_again() -> None:
    server = MCPServer("closing")
    runner = TaskRunner(server)
    runner._closed = True
    with pytest.raises(MCPError, match="shutting down"):
        runner.start("x", {}, Context(server=server))
    runner.close()
    assert not runner._closed


# ------------------------------------------------------------------- stdio


class Stdio:
    """The stdio test server in a subprocess, spoken to line by line."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "servers" / "tasks_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        self.ids = iter(range(1, 1_000_000))
        self.initialized: dict[str, Any] = {}
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, name="test-stdio-reader", daemon=True)
        self._arrived = threading.Condition()
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        with self._arrived:
            while True:
                for line in self.lines:
                    answer = json.loads(line)
                    if answer.get("id") == request_id:
                        return dict(answer)
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {method}"
                self._arrived.wait(left)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def asked(self, method: str) -> dict[str, Any]:
        """The first request ``method`` the server sent (waiting for it)."""
        deadline = time.monotonic() + TIMEOUT
        with self._arrived:
            while True:
                for line in self.lines:
                    message = json.loads(line)
                    if message.get("method") == method:
                        return dict(message)
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} request"
                self._arrived.wait(left)

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        answer = self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def close(self) -> None:
        end_raw_peer(self.process, self._reader, TIMEOUT)


def handshake(capabilities: dict[str, Any]) -> Stdio:
    peer = Stdio()
    peer.initialized = peer.result(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}},
    )
    assert peer.process.stdin is not None
    peer.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    peer.process.stdin.flush()
    return peer


def legacy_until_done(peer: Stdio, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT
    while True:
        task = peer.result("tasks/get", {"taskId": task_id})
        if is_terminal(task["status"]) or time.monotonic() > deadline:
            return dict(task)
        time.sleep(0.02)


def test_the_2025_11_25_form_over_stdio() -> None:
    peer = handshake({"elicitation": {}, "tasks": {"list": {}, "cancel": {}}})
    try:
        offered = peer.initialized["capabilities"]
        assert offered["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        assert "extensions" not in offered  # the extension is no handshake revision's
        tools = {tool["name"]: tool for tool in peer.result("tools/list")["tools"]}
        assert tools["slow"]["execution"] == {"taskSupport": "optional"}
        assert "execution" not in tools["plain"]
        created = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.05}, "task": {"ttl": 60000}})
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 60000 and "ttlMs" not in task
        assert "pollInterval" in task and "resultType" not in created
        result = peer.result("tasks/result", {"taskId": task["taskId"]})  # waits for the result
        assert result["content"][0]["text"] == "done"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        got = peer.result("tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "completed" and got["ttl"] == 60000 and "result" not in got
        listed = peer.result("tasks/list")
        assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
        running = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 60}, "task": {}})["task"]
        cancelled = peer.result("tasks/cancel", {"taskId": running["taskId"]})
        assert cancelled["taskId"] == running["taskId"] and running["ttl"] > 0
        assert cancelled["status"] == "cancelled"  # this revision: cancelled before the response is sent
        assert legacy_until_done(peer, running["taskId"])["status"] == "cancelled"
        for ended in (running["taskId"], task["taskId"]):  # cancelled, completed: this revision refuses both
            assert peer.request("tasks/cancel", {"taskId": ended})["error"]["code"] == -32602
        refused = peer.request("tasks/result", {"taskId": running["taskId"]})
        assert refused["error"]["code"] == -32603 and "was cancelled" in refused["error"]["message"]
        failing = peer.result("tools/call", {"name": "broken", "arguments": {}, "task": {"ttl": 0}})["task"]
        error = peer.request("tasks/result", {"taskId": failing["taskId"]})["error"]
        assert error == {"code": -32602, "message": "the request was wrong after all", "data": {"why": "test"}}
        asking = peer.result("tools/call", {"name": "ask", "arguments": {}, "task": {}})["task"]
        question = peer.asked("elicitation/create")  # asked on the connection: this form has no tasks/update
        peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Cy"}}})
        answered = peer.result("tasks/result", {"taskId": asking["taskId"]})
        assert answered["content"][0]["text"] == "Hello, Cy!"
        plain = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0}})  # no params.task
        assert plain["content"][0]["text"] == "done" and "resultType" not in plain
        assert peer.request("tools/call", {"name": "must", "arguments": {}})["error"]["code"] == -32601  # this form's
        assert peer.request("tasks/update", {"taskId": task["taskId"], "inputResponses": {}})["error"]["code"] == -32021
    finally:
        peer.close()


@pytest.mark.parametrize(
    ("tool", "method"), [("ask", "elicitation/create"), ("model", "sampling/createMessage"), ("where", "roots/list")]
)
def test_cancelling_a_2025_11_25_task_withdraws_its_question_at_once(tool: str, method: str) -> None:
    # The server's own timeout for a question is a minute: the withdrawal must come from the cancel, not from it.
    peer = handshake({"elicitation": {}, "sampling": {}, "roots": {}, "tasks": {"cancel": {}}})
    try:
        task = peer.result("tools/call", {"name": tool, "arguments": {}, "task": {}})["task"]
        question = peer.asked(method)
        # The task's questions say whose they are (2025-11-25: "MUST include the related-task metadata").
        assert question["params"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task["taskId"]}}
        assert peer.result("tasks/cancel", {"taskId": task["taskId"]})["status"] == "cancelled"
        withdrawn = peer.asked("notifications/cancelled")
        assert withdrawn["params"]["requestId"] == question["id"]
        refused = peer.request("tasks/result", {"taskId": task["taskId"]})  # the handler has ended: no wait
        assert "was cancelled" in refused["error"]["message"]
        # A late answer to the withdrawn question changes nothing.
        peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"roots": [], "action": "decline"}})
        assert peer.result("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    finally:
        peer.close()


@pytest.mark.parametrize(
    ("tool", "method"), [("ask", "elicitation/create"), ("model", "sampling/createMessage"), ("where", "roots/list")]
)
def test_cancelling_a_plain_call_withdraws_its_question_at_once(tool: str, method: str) -> None:
    # The same as for a task, without one: the client's notifications/cancelled for its tools/call ends the question.
    peer = handshake({"elicitation": {}, "sampling": {}, "roots": {}})
    try:
        peer.send({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": {"name": tool, "arguments": {}}})
        question = peer.asked(method)
        assert "_meta" not in question.get("params", {})  # no task: nothing to relate it to
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "call"}})
        withdrawn = peer.asked("notifications/cancelled")
        assert withdrawn["params"]["requestId"] == question["id"]
        # A late answer to the withdrawn question changes nothing, and the connection serves on.
        peer.send({"jsonrpc": "2.0", "id": question["id"], "result": {"roots": [], "action": "decline"}})
        assert peer.result("ping") == {}
    finally:
        peer.close()


def test_the_extension_is_not_honoured_at_a_handshake_revision() -> None:
    """SEP-2663 belongs to 2026-07-28 on: a 2025-11-25 client that declares it (at initialize, or in a request's
    _meta) still gets the core form, and a tool call with no params.task runs as a plain call."""
    peer = handshake({"extensions": {EXTENSION: {}}, "tasks": {}})
    try:
        offered = peer.initialized["capabilities"]
        assert "extensions" not in offered and offered["tasks"]["requests"] == {"tools": {"call": {}}}
        declared = {"_meta": {CLIENT_CAPABILITIES: {"extensions": {EXTENSION: {}}}}}
        plain = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0}, **declared})
        assert plain["content"][0]["text"] == "done" and "resultType" not in plain and "taskId" not in plain
        created = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.05}, "task": {}, **declared})
        assert "resultType" not in created and created["task"]["status"] == "working"  # nested: the core form
        task_id = created["task"]["taskId"]
        assert peer.result("tasks/result", {"taskId": task_id, **declared})["content"][0]["text"] == "done"
        done = peer.result("tasks/get", {"taskId": task_id, **declared})
        assert done["status"] == "completed" and "ttlMs" not in done and "resultType" not in done
        assert peer.request("tools/call", {"name": "must", "arguments": {}, **declared})["error"]["code"] == -32601
    finally:
        peer.close()
