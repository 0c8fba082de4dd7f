"""The client's side of tasks against a peer scripted at the JSON-RPC level, in both wire forms.

The peer is a real :class:`JsonRpcDispatcher` on an in-memory pair whose
answers each test sets, so that the client meets exactly what the two task
forms allow (and what they do not): the SEP-2663 extension in the stateless
era, the experimental tasks of 2025-11-25 in the handshake era.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_sync import MCPClient
from mcp_sync.client.tasks import TaskPoller, TaskState, ToolTask, UnknownTaskError, created_task
from mcp_sync.protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, SERVER_INFO
from mcp_sync.protocol.tasks import EXTENSION
from mcp_sync.runtime.dispatcher import JsonRpcDispatcher
from mcp_sync.runtime.request_context import RequestContext
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitResult,
    JSONRPCMessage,
    JSONRPCRequest,
    TextContent,
)

WAIT = 10.0

Answer = Callable[[dict[str, Any]], Any]


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def task(task_id: str = "t1", status: str = "working", *, legacy: bool = False, **fields: Any) -> dict[str, Any]:
    """A task on the wire, in the extension's field names or (``legacy``) those of 2025-11-25."""
    wire = {"taskId": task_id, "status": status, "createdAt": "2026-12-01T00:00:00Z"}
    wire |= {"lastUpdatedAt": "2026-12-01T00:00:00Z", **fields}
    if legacy:
        wire |= {"ttl": None, "pollInterval": 10}
    else:
        wire |= {"ttlMs": None, "pollIntervalMs": 10}
    return wire


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return CallToolResult(content=[TextContent(text=text)], is_error=is_error).to_wire()


class NotingEnd(InMemoryTransport):
    """An in-memory end that notes the method of each request it sends, as it sends it.

    What a client sent is known the moment its call returns, whereas the peer's
    handler, run on a pool thread, may not have started yet (or been withdrawn
    before starting, as an abandoned ``tasks/cancel`` is).
    """

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def send(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self.sent.append(message.method)
        super().send(message)


class Peer:
    """A server scripted per method: ``answers[method]`` answers each request (a callable of its params)."""

    def __init__(self, legacy: bool, tools: list[dict[str, Any]]) -> None:
        self.legacy = legacy
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.answers: dict[str, Answer] = {}
        self.client_end, server_end = NotingEnd.pair()
        self.dispatcher = JsonRpcDispatcher(server_end, side="server", max_workers=4)
        for method in ("tools/call", "tasks/get", "tasks/update", "tasks/cancel", "tasks/result"):
            self.dispatcher.register_handler(method, self._answer(method))
        self.dispatcher.register_handler("tools/list", lambda params, ctx: {"tools": tools})
        info = {"name": "scripted", "version": "1"}
        if legacy:
            capabilities = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}}}
            self.dispatcher.register_handler(
                "initialize",
                lambda params, ctx: {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info},
            )
        else:
            discovery = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
            }
            self.dispatcher.register_handler(
                "server/discover", lambda params, ctx: {**discovery, "_meta": {SERVER_INFO: info}}
            )
        self.dispatcher.start()

    def _answer(self, method: str) -> Callable[[Any, RequestContext], Any]:
        def answer(params: Any, ctx: RequestContext) -> Any:
            self.seen.append((method, params))
            script = self.answers.get(method)
            if script is None:
                raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"no {method} here")
            return script(params)

        return answer

    def methods(self) -> list[str]:
        """The methods of the requests the peer's handlers took up, in order."""
        return [method for method, _ in self.seen]

    def sent(self) -> list[str]:
        """The methods of the requests the client sent, in order (known at once, handled or not)."""
        assert isinstance(self.client_end, NotingEnd)
        return self.client_end.sent

    def close(self) -> None:
        self.dispatcher.close()


def ask_colour(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"colour": "green"})


TOOLS = [
    {"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
    {"name": "must", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
    {"name": "plain", "inputSchema": {"type": "object"}},
]


@pytest.fixture(params=["extension", "legacy"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    scripted = Peer(request.param == "legacy", TOOLS)
    yield scripted
    scripted.close()


@pytest.fixture
def client(peer: Peer) -> Iterator[MCPClient]:
    with MCPClient(era="handshake" if peer.legacy else "stateless", elicitation_provider=ask_colour, timeout=WAIT) as c:
        c.connect(peer.client_end)
        yield c


def polled(peer: Peer, states: list[dict[str, Any]]) -> None:
    """``tasks/get`` answers ``states`` in turn, then the last one for ever; ``tools/call`` creates the task."""
    legacy = peer.legacy
    first = states[0]
    created = {"task": first} if legacy else {**first, "resultType": "task"}
    peer.answers["tools/call"] = lambda params: created
    left = list(states)

    def get(params: dict[str, Any]) -> Any:
        return left.pop(0) if len(left) > 1 else left[0]

    peer.answers["tasks/get"] = get


def test_the_extension_is_declared_in_each_stateless_request() -> None:
    scripted = Peer(False, TOOLS)
    try:
        with MCPClient(era="stateless", timeout=WAIT) as c:
            c.connect(scripted.client_end)
            scripted.answers["tools/call"] = lambda params: text_result("at once")
            assert c.call_tool("plain").text == "at once"
        sent = dict(scripted.seen)["tools/call"]
        assert sent["_meta"][CLIENT_CAPABILITIES]["extensions"] == {EXTENSION: {}}
        assert "task" not in sent
    finally:
        scripted.close()


def test_call_tool_polls_the_task_to_its_result(peer: Peer, client: MCPClient) -> None:
    legacy = peer.legacy
    polled(
        peer,
        [task(legacy=legacy), task(legacy=legacy), task(status="completed", legacy=legacy, result=text_result("done"))],
    )
    peer.answers["tasks/result"] = lambda params: text_result("done")
    result = client.call_tool("must", {"n": 1})
    assert result.text == "done"
    assert peer.methods().count("tasks/get") == 3
    call = dict(peer.seen)["tools/call"]
    assert ("task" in call) is legacy  # 2025-11-25 asks for the task; the extension leaves it to the server
    assert ("tasks/result" in peer.methods()) is legacy


def test_a_tool_error_in_a_task_is_an_error_result(peer: Peer, client: MCPClient) -> None:
    failing = text_result("it broke", is_error=True)
    polled(peer, [task(legacy=peer.legacy), task(status="completed", legacy=peer.legacy, result=failing)])
    peer.answers["tasks/result"] = lambda params: failing
    assert client.call_tool("must").is_error
    with pytest.raises(MCPError, match="it broke") as caught:
        client.call_tool("must", raise_on_error=True)
    assert caught.value.code == MCP_CODES.HANDLER_FAILED


def test_a_failed_task_raises_its_error() -> None:
    scripted = Peer(False, TOOLS)
    try:
        with MCPClient(era="stateless", timeout=WAIT) as c:
            c.connect(scripted.client_end)
            polled(scripted, [task(), task(status="failed", error={"code": -32603, "message": "rate limited"})])
            with pytest.raises(MCPError, match="rate limited") as caught:
                c.call_tool("job")
            assert caught.value.jsonrpc_code == -32603
            assert caught.value.context == {"task_id": "t1"}
            polled(scripted, [task(), task(status="failed", error={"code": "x"})])
            with pytest.raises(MCPError, match="task t1 failed") as caught:
                c.call_tool("job")
            assert caught.value.code == MCP_CODES.INTERNAL_ERROR
            polled(scripted, [task(), task(status="completed")])
            with pytest.raises(MCPProtocolError, match="completed without a result"):
                c.call_tool("job")
    finally:
        scripted.close()


def test_a_failed_legacy_task_raises_what_tasks_result_raises() -> None:
    scripted = Peer(True, TOOLS)
    try:
        with MCPClient(era="handshake", timeout=WAIT) as c:
            c.connect(scripted.client_end)
            polled(scripted, [task(legacy=True), task(status="failed", legacy=True)])

            def refuse(params: dict[str, Any]) -> Any:
                raise MCPError(MCP_CODES.INVALID_PARAMS, "bad argument")

            scripted.answers["tasks/result"] = refuse
            with pytest.raises(MCPError, match="bad argument"):
                c.call_tool("must")
    finally:
        scripted.close()


def test_input_requests_are_answered_once_through_the_providers() -> None:
    scripted = Peer(False, TOOLS)
    try:
        asked: list[str] = []

        def elicit(params: ElicitRequestFormParams) -> ElicitResult:
            asked.append(params.message)
            return ElicitResult(action="accept", content={"colour": "green"})

        with MCPClient(era="stateless", timeout=WAIT, elicitation_provider=elicit) as c:
            c.connect(scripted.client_end)
            schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
            question = {"method": "elicitation/create", "params": {"message": "Colour?", "requestedSchema": schema}}
            waiting = task(status="input_required", inputRequests={"q1": question})
            polled(scripted, [task(), waiting, waiting, task(status="completed", result=text_result("green it is"))])
            scripted.answers["tasks/update"] = lambda params: {"resultType": "complete"}
            assert c.call_tool("job").text == "green it is"
        assert asked == ["Colour?"]  # the same request polled twice is answered once
        update = dict(scripted.seen)["tasks/update"]
        assert update["taskId"] == "t1"
        assert update["inputResponses"] == {"q1": {"action": "accept", "content": {"colour": "green"}}}
    finally:
        scripted.close()


def test_legacy_input_is_asked_over_the_session_while_tasks_result_waits() -> None:
    scripted = Peer(True, TOOLS)
    try:
        with MCPClient(era="handshake", timeout=WAIT, elicitation_provider=ask_colour) as c:
            c.connect(scripted.client_end)
            polled(scripted, [task(legacy=True), task(status="input_required", legacy=True)])

            def result(params: dict[str, Any]) -> Any:
                schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
                answer = scripted.dispatcher.request(
                    "elicitation/create", {"message": "Colour?", "requestedSchema": schema}, timeout=WAIT
                )
                return text_result(f"the user likes {answer['content']['colour']}")

            scripted.answers["tasks/result"] = result
            assert c.call_tool("must").text == "the user likes green"
    finally:
        scripted.close()


def test_start_tool_returns_a_future_the_poller_fills(peer: Peer, client: MCPClient) -> None:
    gate = threading.Event()
    legacy = peer.legacy
    working = task(legacy=legacy, statusMessage="3 of 10")
    finished = task(status="completed", legacy=legacy, result=text_result("built"))
    peer.answers["tools/call"] = lambda params: {"task": working} if legacy else {**working, "resultType": "task"}
    peer.answers["tasks/get"] = lambda params: finished if gate.is_set() else working
    peer.answers["tasks/result"] = lambda params: text_result("built")
    done: list[ToolTask] = []
    handle = client.start_tool("job", {"size": 10})
    other = client.start_tool("job", {"size": 1})  # one poller follows both
    handle.add_done_callback(done.append)
    assert handle.task_id == "t1" and handle.name == "job"
    assert handle.status == "working" and handle.progress == "3 of 10"
    assert "3 of 10" in handle._repr_html_() and "t1" in repr(handle)
    assert wait_for(lambda: "tasks/get" in peer.methods(), WAIT)
    assert not handle.done()
    gate.set()
    assert handle.result(WAIT).text == "built"
    assert done == [handle] and handle.status == "completed"
    assert other.result(WAIT).text == "built"
    assert ("task" in dict(peer.seen)["tools/call"]) is legacy  # optional: 2025-11-25 asks for one
    pollers = [t for t in threading.enumerate() if t.name == "mcp-sync-client-tasks"]
    assert len(pollers) == 1


def test_a_call_answered_at_once_gives_a_finished_handle(peer: Peer, client: MCPClient) -> None:
    peer.answers["tools/call"] = lambda params: text_result("quick")
    handle = client.start_tool("plain")
    assert handle.done() and handle.task_id is None and handle.result(0).text == "quick"
    assert not handle.cancel()  # nothing left to cancel
    assert "task" not in dict(peer.seen)["tools/call"]  # the tool forbids tasks
    assert "(no task)" in handle._repr_html_()


def test_cancel_sends_tasks_cancel_and_ends_the_future(peer: Peer, client: MCPClient) -> None:
    polled(peer, [task(legacy=peer.legacy)])
    peer.answers["tasks/cancel"] = lambda params: {}
    handle = client.start_tool("must")
    assert handle.cancel()
    assert handle.cancelled() and handle.status == "cancelled"
    assert dict(peer.seen)["tasks/cancel"]["taskId"] == "t1"
    with pytest.raises(concurrent.futures.CancelledError):
        handle.result(0)
    assert not handle.cancel()


def test_a_refused_cancel_still_ends_the_future(
    peer: Peer, client: MCPClient, caplog: pytest.LogCaptureFixture
) -> None:
    polled(peer, [task(legacy=peer.legacy)])
    handle = client.start_tool("must")
    assert handle.cancel()  # tasks/cancel answered -32601: noted, and the caller's wish is still done
    assert "tasks/cancel for t1 failed" in caplog.text


def test_a_task_the_server_cancelled_ends_cancelled(peer: Peer, client: MCPClient) -> None:
    polled(peer, [task(legacy=peer.legacy), task(status="cancelled", legacy=peer.legacy)])
    handle = client.start_tool("must")
    assert wait_for(handle.done, WAIT) and handle.cancelled()
    with pytest.raises(MCPError) as caught:
        client.call_tool("must")
    assert caught.value.code == MCP_CODES.REQUEST_CANCELLED


def test_call_tool_gives_up_at_its_timeout_and_cancels_the_task(peer: Peer, client: MCPClient) -> None:
    polled(peer, [task(legacy=peer.legacy)])
    peer.answers["tasks/cancel"] = lambda params: {}
    with pytest.raises(MCPError, match=r"did not end within 0\.2s") as caught:
        client.call_tool("must", timeout=0.2)
    assert caught.value.code == MCP_CODES.TIMEOUT
    assert "tasks/cancel" in peer.sent()


def test_a_poll_that_outlasts_the_call_ends_as_the_calls_timeout(peer: Peer, client: MCPClient) -> None:
    """A ``tasks/get`` still unanswered when the call's time is up: the call's own TIMEOUT, and the task cancelled."""
    polled(peer, [task(legacy=peer.legacy)])
    peer.answers["tasks/cancel"] = lambda params: {}
    release = threading.Event()
    peer.answers["tasks/get"] = lambda params: (release.wait(10), task(legacy=peer.legacy))[1]
    try:
        with pytest.raises(MCPError, match=r"did not end within 0\.2s") as caught:
            client.call_tool("must", timeout=0.2)
    finally:
        release.set()
    assert caught.value.code == MCP_CODES.TIMEOUT
    assert peer.methods().count("tasks/get") == 1 and "tasks/cancel" in peer.sent()


def test_an_answer_round_that_outlasts_the_call_ends_as_the_calls_timeout(peer: Peer, client: MCPClient) -> None:
    """Input asked for when the call's time runs out: its tasks/update (or, in 2025-11-25, tasks/result) hangs."""
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    question = {"method": "elicitation/create", "params": {"message": "Colour?", "requestedSchema": schema}}
    polled(
        peer,
        [task(legacy=peer.legacy), task(status="input_required", legacy=peer.legacy, inputRequests={"q": question})],
    )
    peer.answers["tasks/cancel"] = lambda params: {}
    release = threading.Event()
    hang = "tasks/result" if peer.legacy else "tasks/update"
    peer.answers[hang] = lambda params: (release.wait(10), {})[1]
    try:
        with pytest.raises(MCPError, match=r"did not end within 0\.3s") as caught:
            client.call_tool("must", timeout=0.3)
    finally:
        release.set()
    assert caught.value.code == MCP_CODES.TIMEOUT
    assert hang in peer.methods() and "tasks/cancel" in peer.sent()


def test_call_tool_cancelled_by_its_event_cancels_the_task(peer: Peer, client: MCPClient) -> None:
    polled(peer, [task(legacy=peer.legacy)])
    peer.answers["tasks/cancel"] = lambda params: {}
    stop = threading.Event()
    peer.answers["tasks/get"] = lambda params: (stop.set(), task(legacy=peer.legacy))[1]
    with pytest.raises(MCPError) as caught:
        client.call_tool("must", cancel=stop, timeout=None)
    assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
    assert "tasks/cancel" in peer.sent()


def test_an_unknown_task_id_raises_at_once(peer: Peer, client: MCPClient) -> None:
    def unknown(params: dict[str, Any]) -> Any:
        raise MCPError(MCP_CODES.INVALID_PARAMS, "Failed to retrieve task: Task not found")

    peer.answers["tasks/get"] = unknown
    with pytest.raises(UnknownTaskError, match="knows no task 'nope'") as caught:
        client.task("nope")
    assert caught.value.context == {"task_id": "nope"}


def test_a_task_that_expires_while_followed_ends_with_the_typed_error(peer: Peer, client: MCPClient) -> None:
    states = [task(legacy=peer.legacy)]

    def get(params: dict[str, Any]) -> Any:
        if not states:
            raise MCPError(MCP_CODES.INVALID_PARAMS, "Task has expired")
        return states.pop()

    peer.answers["tasks/get"] = get
    handle = client.task("t1")
    assert isinstance(handle.exception(WAIT), UnknownTaskError)
    assert handle.name is None


def test_other_poll_errors_end_the_future_with_them(peer: Peer, client: MCPClient) -> None:
    peer.answers["tasks/get"] = lambda params: task(task_id="other", legacy=peer.legacy)
    with pytest.raises(MCPProtocolError, match="answered task 'other'"):
        client.task("t1")
    states = [task(legacy=peer.legacy)]

    def get(params: dict[str, Any]) -> Any:
        if not states:
            raise MCPError(MCP_CODES.INTERNAL_ERROR, "store down")
        return states.pop()

    peer.answers["tasks/get"] = get
    handle = client.task("t1")
    error = handle.exception(WAIT)
    assert isinstance(error, MCPError) and error.code == MCP_CODES.INTERNAL_ERROR


def test_a_malformed_task_is_refused(peer: Peer, client: MCPClient) -> None:
    peer.answers["tools/call"] = lambda params: {"resultType": "task", "status": 3}
    if peer.legacy:
        peer.answers["tools/call"] = lambda params: {"task": {"taskId": 7}}
    with pytest.raises(MCPProtocolError, match="malformed task"):
        client.call_tool("must")


def test_closing_the_client_ends_its_handles_and_its_poller(peer: Peer, client: MCPClient) -> None:
    polled(peer, [task(legacy=peer.legacy)])
    handle = client.start_tool("must")
    assert wait_for(lambda: "tasks/get" in peer.methods(), WAIT)
    client.close()
    error = handle.exception(WAIT)
    assert isinstance(error, MCPError) and error.code == MCP_CODES.TRANSPORT_CLOSED
    assert "client.task(id)" in error.message
    assert not [t for t in threading.enumerate() if t.name == "mcp-sync-client-tasks"]


def test_a_done_callback_may_close_the_client(peer: Peer, client: MCPClient) -> None:
    legacy = peer.legacy
    polled(peer, [task(legacy=legacy), task(status="completed", legacy=legacy, result=text_result("x"))])
    peer.answers["tasks/result"] = lambda params: text_result("x")
    closed = threading.Event()
    handle = client.start_tool("must")
    handle.add_done_callback(lambda done: (client.close(), closed.set()))
    assert closed.wait(WAIT)  # closed from the poller's own thread, which is not waited for
    assert handle.result(0).text == "x"


def test_the_poller_refuses_work_once_stopped() -> None:
    poller = TaskPoller(lambda: WAIT)
    poller.stop(MCPError(MCP_CODES.TRANSPORT_CLOSED, "closed"))
    with pytest.raises(MCPError) as caught:
        poller.watch(ToolTask("x", TaskState(task_id="t", status="working")))
    assert caught.value.code == MCP_CODES.TRANSPORT_CLOSED


def test_a_handle_without_a_connection_neither_polls_nor_sends() -> None:
    handle = ToolTask("x", TaskState(task_id="t", status="working"))
    assert handle.step() is None
    assert handle.cancel() and handle.cancelled()
    handle._end(CallToolResult(content=[]))  # too late: it is cancelled, and stays so
    assert handle.cancelled()


def test_what_counts_as_a_created_task() -> None:
    assert created_task(text_result("x")) is None
    assert created_task({"task": {"taskId": "t", "status": "working"}, "content": []}) is None
    nested = {"task": {"taskId": "t", "status": "working"}}
    assert created_task(nested) == (TaskState(task_id="t", status="working"), True)
    assert created_task({"resultType": "task", "taskId": "t", "status": "working"}) == (
        nested and created_task(nested)[0],
        False,
    )
    state = TaskState.from_wire({"taskId": "t", "status": "working"})
    assert state.poll_interval is None and not state.terminal


def test_a_handshake_server_without_task_support_is_not_asked_for_one() -> None:
    scripted = Peer(True, TOOLS)
    scripted.dispatcher.unregister_handler("initialize")
    info = {"name": "scripted", "version": "1"}
    scripted.dispatcher.register_handler(
        "initialize",
        lambda params, ctx: {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info},
    )
    try:
        with MCPClient(era="handshake", timeout=WAIT) as c:
            c.connect(scripted.client_end)
            scripted.answers["tools/call"] = lambda params: text_result("plain")
            assert c.start_tool("must").result(0).text == "plain"
            assert c.start_tool("unlisted").result(0).text == "plain"
        assert all("task" not in params for method, params in scripted.seen if method == "tools/call")
    finally:
        scripted.close()


# ------------------------------------------- 2025-11-25 tasks/result and the poller


class Waiting:
    """A 2025-11-25 peer whose task ``asks`` waits for input (its ``tasks/result`` held until ``release``),
    while a second task, ``quick``, completes at once."""

    def __init__(self) -> None:
        self.peer = Peer(True, TOOLS)
        self.release = threading.Event()
        ids = iter(["asks", "quick"])
        self.peer.answers["tools/call"] = lambda params: {"task": task(next(ids), legacy=True)}
        self.peer.answers["tasks/get"] = lambda params: task(
            params["taskId"], "input_required" if params["taskId"] == "asks" else "completed", legacy=True
        )
        self.peer.answers["tasks/result"] = self.result
        self.peer.answers["tasks/cancel"] = lambda params: task(params["taskId"], "cancelled", legacy=True)
        self.withdrawn: list[Any] = []
        self.peer.dispatcher.on_notification("notifications/cancelled", lambda params: self.withdrawn.append(params))

    def result(self, params: dict[str, Any]) -> Any:
        if params["taskId"] == "asks":
            self.release.wait(WAIT)
            return text_result("answered")
        return text_result("quick one")

    def asked(self) -> bool:
        return ("tasks/result", {"taskId": "asks"}) in self.peer.seen

    def close(self) -> None:
        self.release.set()
        self.peer.close()


@pytest.fixture
def waiting() -> Iterator[Waiting]:
    scripted = Waiting()
    yield scripted
    scripted.close()


def test_a_legacy_task_waiting_for_input_holds_up_no_other_handle(waiting: Waiting) -> None:
    # No timeout at all: the task waiting for input is followed until it ends, however long that takes.
    with MCPClient(era="handshake", timeout=None) as c:
        c.connect(waiting.peer.client_end)
        asking = c.start_tool("job")
        assert wait_for(waiting.asked, WAIT)  # its tasks/result is in flight, unanswered
        quick = c.start_tool("job")
        assert quick.result(WAIT).text == "quick one"  # polled, and ended, meanwhile
        assert not asking.done() and asking.status == "input_required"
        waiting.release.set()
        assert asking.result(WAIT).text == "answered" and asking.status == "completed"
        assert waiting.peer.methods().count("tasks/result") == 2  # one each: the answer was awaited, not asked again


def test_a_legacy_tasks_result_in_flight_gives_up_at_the_clients_timeout(waiting: Waiting) -> None:
    with MCPClient(era="handshake", timeout=0.3) as c:
        c.connect(waiting.peer.client_end)
        asking = c.start_tool("job")
        error = asking.exception(WAIT)
        assert isinstance(error, MCPError) and error.code == MCP_CODES.TIMEOUT
        assert "tasks/result for task asks timed out" in error.message
        assert wait_for(lambda: len(waiting.withdrawn) == 1, WAIT)  # the server is told the client gave up


def test_a_legacy_task_cancelled_while_its_tasks_result_is_in_flight(waiting: Waiting) -> None:
    with MCPClient(era="handshake", timeout=WAIT) as c:
        c.connect(waiting.peer.client_end)
        asking = c.start_tool("job")
        assert wait_for(waiting.asked, WAIT)
        assert asking.cancel() and asking.cancelled()
        waiting.release.set()  # the answer comes, to a handle that has ended: nothing changes
        assert wait_for(lambda: "tasks/cancel" in waiting.peer.methods(), WAIT)
        assert asking.cancelled() and asking.status == "cancelled"


def test_call_tool_cancelled_while_its_legacy_tasks_result_waits(waiting: Waiting) -> None:
    # call_tool waits in tasks/result itself (no poller): its cancel event withdraws that request and cancels the task.
    cancel = threading.Event()
    with MCPClient(era="handshake", timeout=WAIT) as c:
        c.connect(waiting.peer.client_end)
        threading.Thread(target=lambda: wait_for(waiting.asked, WAIT) and cancel.set(), daemon=True).start()
        with pytest.raises(MCPError) as caught:
            c.call_tool("job", cancel=cancel)
        assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
        assert caught.value.message == "the call to 'job' was cancelled (tasks/cancel sent for asks)"
        assert wait_for(lambda: len(waiting.withdrawn) == 1, WAIT)  # the tasks/result, withdrawn
        assert waiting.peer.methods()[-1] == "tasks/cancel"


def test_closing_the_client_with_a_legacy_tasks_result_in_flight(waiting: Waiting) -> None:
    c = MCPClient(era="handshake", timeout=WAIT)
    c.connect(waiting.peer.client_end)
    asking = c.start_tool("job")
    assert wait_for(waiting.asked, WAIT)
    c.close()
    error = asking.exception(WAIT)
    assert isinstance(error, MCPError) and error.code == MCP_CODES.TRANSPORT_CLOSED
    assert not [t for t in threading.enumerate() if t.name == "mcp-sync-client-tasks"]


@pytest.mark.parametrize("ending", ["timeout", "cancel"])
def test_a_hanging_tasks_cancel_holds_call_tool_only_briefly(peer: Peer, ending: str) -> None:
    """The call's tasks/cancel is waited for CANCEL_TIMEOUT, not the client's (hour-long) timeout."""
    polled(peer, [task(legacy=peer.legacy)])
    release = threading.Event()
    peer.answers["tasks/cancel"] = lambda params: (release.wait(WAIT * 6), task(status="cancelled"))[1]
    withdrawn: list[Any] = []
    peer.dispatcher.on_notification("notifications/cancelled", withdrawn.append)
    stop = threading.Event()
    if ending == "cancel":
        peer.answers["tasks/get"] = lambda params: (stop.set(), task(legacy=peer.legacy))[1]
    outcome: concurrent.futures.Future[Any] = concurrent.futures.Future()
    with MCPClient(era="handshake" if peer.legacy else "stateless", timeout=3600) as c:
        c.connect(peer.client_end)

        def call() -> None:
            try:
                c.call_tool("must", timeout=0.2 if ending == "timeout" else None, cancel=stop)
            except MCPError as exc:
                outcome.set_result(exc.code)

        caller = threading.Thread(target=call, name="test-call-tool", daemon=True)
        caller.start()
        try:
            expected = MCP_CODES.TIMEOUT if ending == "timeout" else MCP_CODES.REQUEST_CANCELLED
            assert outcome.result(WAIT) == expected  # well before the client's own timeout
            assert "tasks/cancel" in peer.sent()
            assert wait_for(lambda: bool(withdrawn), WAIT)  # given up, and the server told so
        finally:
            release.set()
            caller.join(WAIT)


def test_call_tool_ends_within_its_timeout_cancel_included(peer: Peer) -> None:
    """A slow ``tools/call`` answer, then a ``tasks/cancel`` the server never answers: the whole call still ends
    within its timeout (the task is followed for what the answer left of it, less the last tenth, which the
    cancel gets)."""
    polled(peer, [task(legacy=peer.legacy)])
    creating = peer.answers["tools/call"]
    slow = threading.Event()  # never set: the server takes half the call's time to answer tools/call
    peer.answers["tools/call"] = lambda params: (slow.wait(0.5), creating(params))[1]
    release = threading.Event()
    peer.answers["tasks/cancel"] = lambda params: (release.wait(WAIT * 6), {})[1]
    withdrawn: list[Any] = []
    peer.dispatcher.on_notification("notifications/cancelled", withdrawn.append)
    with MCPClient(era="handshake" if peer.legacy else "stateless", timeout=3600) as c:
        c.connect(peer.client_end)
        c.list_tools()
        began = time.monotonic()
        try:
            with pytest.raises(MCPError) as caught:
                c.call_tool("must", timeout=1.0)
            took = time.monotonic() - began
        finally:
            release.set()
    assert caught.value.code == MCP_CODES.TIMEOUT and "tasks/cancel" in peer.sent()
    assert wait_for(lambda: bool(withdrawn), WAIT)  # the unanswered tasks/cancel given up, and the server told
    # Before, the call took 0.5 s for tools/call, then a whole second of its own and two more for the cancel.
    assert took < 1.0 + 0.8, took
