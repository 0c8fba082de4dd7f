"""Tool calls the server runs as tasks: polled, answered and cancelled by the client (SEP-2663, and 2025-11-25).

A server may answer ``tools/call`` with a task handle instead of the result.
Two wire forms exist:

* the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): the client
  declares it in every request's ``_meta`` capabilities (and, for servers
  that offer it to handshake-era clients too, in its ``initialize``
  capabilities), the server decides per call, and the client polls
  ``tasks/get`` (which inlines the result, the error, or the
  ``inputRequests`` to answer with ``tasks/update``) and may send
  ``tasks/cancel``;
* the experimental tasks of 2025-11-25, in the handshake era: the client
  asks for a task with ``params.task`` when the server declares
  ``tasks.requests.tools.call`` and the tool's ``execution.taskSupport``
  allows it, polls ``tasks/get`` and fetches the outcome with
  ``tasks/result`` (the server asks its questions over the session
  meanwhile, answered by the client's providers as usual).

The answer that creates a task says which form it is of.

:class:`ToolTask` is the handle: a :class:`concurrent.futures.Future` of the
:class:`~mcp_sync.types.CallToolResult`, filled in by the client's one poller
thread. :meth:`MCPClient.call_tool <mcp_sync.client.core.MCPClient.call_tool>`
drives a task to its end in the calling thread instead, so that a caller who
wants the result never sees the task.

>>> state = TaskState.from_wire({"taskId": "t1", "status": "working", "pollIntervalMs": 250})
>>> state.task_id, state.status, state.poll_interval, state.terminal
('t1', 'working', 0.25, False)
"""

from __future__ import annotations

import concurrent.futures
import functools
import importlib
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

import pydantic_core

from ..protocol import tasks as wire
from ..protocol import types as models
from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, MCPProtocolError, mcp_code_for
from ..protocol.tasks import EXTENSION, TERMINAL
from ..runtime.dispatcher import USE_DEFAULT, PendingRequest, Timeout
from .era import StatelessEra
from .rounds import answer_inputs, validated

if TYPE_CHECKING:
    from ..protocol.types import (
        CallToolResult,  # noqa: F401 (named by ToolTask's base, a string ruff does not read)
        WireModel,
    )
    from .core import MCPClient
    from .era import ClientEra

__all__ = [
    "CANCEL_TIMEOUT",
    "DEFAULT_POLL_INTERVAL",
    "EXTENSION",
    "TERMINAL",
    "TaskPoller",
    "TaskState",
    "ToolTask",
    "UnknownTaskError",
]

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = 1.0
"""Seconds between two polls when the server suggests no interval."""
IDLE_WAIT = 60.0
"""The longest the poller sleeps with nothing to poll before it looks again (new work wakes it at once)."""
STOP_TIMEOUT = 10.0
"""The longest close() waits for the poller thread to finish the poll it is making."""
MIN_POLL_INTERVAL = 0.01
"""The shortest wait between two polls, whatever the server suggests (a zero would spin)."""
MAX_POLL_INTERVAL = 300.0
"""The longest wait between two polls, whatever the server suggests (a huge one would overflow a wait)."""
CANCEL_TIMEOUT = 2.0
"""The longest ``call_tool`` waits for the answer to its ``tasks/cancel`` (cancelling is best effort).

With a timeout, the call keeps the last tenth of it (this at most) for that
``tasks/cancel``: it stops following the task then, so that the whole call,
cancel included, ends within its timeout whatever the server does.
"""


class UnknownTaskError(MCPError):
    """The server knows no task by this id (never created, expired, or another server's).

    Its code is ``INVALID_PARAMS`` (the server's -32602); ``context["task_id"]`` names the task.

    >>> UnknownTaskError(MCP_CODES.INVALID_PARAMS, "no task 'x'").jsonrpc_code
    -32602
    """


@dataclass
class TaskState:
    """What the server last said of a task, in either wire form."""

    task_id: str
    status: str
    status_message: str | None = None
    poll_interval: float | None = None
    """Seconds between polls the server suggests (``None``: it suggests none)."""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (completed, failed or cancelled)."""
        return self.status in TERMINAL

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> TaskState:
        """Read a task (flat, as SEP-2663 and 2025-11-25's ``tasks/get`` send it); a malformed one raises."""
        task_id, status = raw.get("taskId"), raw.get("status")
        # An unknown status is malformed too: a handle would poll it for ever.
        if not isinstance(task_id, str) or not isinstance(status, str) or status not in get_args(wire.TaskStatus):
            raise MCPProtocolError(MCP_CODES.PROTOCOL_INVALID, f"the server sent a malformed task: {raw!r}")
        interval = raw.get("pollIntervalMs", raw.get("pollInterval"))
        message = raw.get("statusMessage")
        requests = raw.get("inputRequests")
        result, error = raw.get("result"), raw.get("error")
        return cls(
            task_id=task_id,
            status=status,
            status_message=message if isinstance(message, str) else None,
            poll_interval=interval / 1000 if isinstance(interval, (int, float)) else None,
            result=result if isinstance(result, dict) else None,
            error=error if isinstance(error, dict) else None,
            input_requests=requests if isinstance(requests, dict) else None,
            raw=raw,
        )


def created_task(raw: dict[str, Any]) -> tuple[TaskState, bool] | None:
    """The task a ``tools/call`` answer hands back, and whether it is of the 2025-11-25 form; ``None`` for a result."""
    if raw.get("resultType") == "task":
        return TaskState.from_wire(raw), False
    nested = raw.get("task")
    if isinstance(nested, dict) and "content" not in raw:
        return TaskState.from_wire(nested), True
    return None


def _raised(error: dict[str, Any], task_id: str) -> MCPError:
    """The exception for a failed task's JSON-RPC ``error``."""
    number = error.get("code")
    number = number if isinstance(number, int) else JsonRpcCode.INTERNAL_ERROR
    message = error.get("message")
    return MCPError(
        mcp_code_for(number),
        message if isinstance(message, str) else f"task {task_id} failed",
        context={"task_id": task_id},
        data=error.get("data"),
        jsonrpc_code=number,
    )


class TaskForm:
    """How one connection speaks tasks: the extension (stateless era) or 2025-11-25's (handshake era)."""

    def __init__(
        self, client: MCPClient, era: ClientEra, *, core_form: bool, call_cancel: threading.Event | None = None
    ) -> None:
        self.client = client
        self.era = era
        self.core_form = core_form
        """Whether the task is of the 2025-11-25 form (else the extension's, in either era)."""
        self.call_cancel = call_cancel
        """Set, it withdraws a 2025-11-25 ``tasks/result`` waited for (``call_tool``'s ``cancel``)."""

    @classmethod
    def of(cls, client: MCPClient, era: ClientEra) -> TaskForm:
        """The form of a task known by its id alone: 2025-11-25's on a handshake-era server without the extension."""
        extensions = era.peer.capabilities.extensions or {}
        return cls(client, era, core_form=era.name == "handshake" and EXTENSION not in extensions)

    def request(
        self, method: str, params: WireModel, timeout: Timeout, cancel: threading.Event | None = None
    ) -> dict[str, Any]:
        return self.era.request(method, params, timeout=timeout, cancel=cancel, on_progress=None, fresh=True)

    def get(self, task_id: str, timeout: Timeout) -> TaskState:
        """``tasks/get``; the server's -32602 raises :class:`UnknownTaskError`."""
        try:
            raw = self.request("tasks/get", wire.GetTaskRequestParams(task_id=task_id), timeout)
        except MCPError as exc:
            if exc.jsonrpc_code != JsonRpcCode.INVALID_PARAMS:
                raise
            raise UnknownTaskError(
                MCP_CODES.INVALID_PARAMS,
                f"the server knows no task {task_id!r} (unknown or expired): {exc.message}",
                cause=exc,
                context={"task_id": task_id},
            ) from exc
        state = TaskState.from_wire(raw)
        if state.task_id != task_id:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID, f"tasks/get for {task_id!r} answered task {state.task_id!r}"
            )
        return state

    def answer(self, state: TaskState, answered: set[str], timeout: Timeout) -> None:
        """Answer the input requests not answered yet through the providers, with ``tasks/update``."""
        pending = {k: v for k, v in (state.input_requests or {}).items() if k not in answered}
        if not pending:
            return
        responses = answer_inputs(self.client, "tasks/get", pending, StatelessEra.missing_provider)
        self.request(
            "tasks/update", wire.UpdateTaskRequestParams(task_id=state.task_id, input_responses=responses), timeout
        )
        answered.update(pending)

    def outcome(self, state: TaskState, timeout: Timeout) -> models.CallToolResult:
        """The tool's result of a task that ended or (2025-11-25) waits for input; a failure raises."""
        if self.core_form:
            # tasks/result blocks until the task ends; the server asks its questions over the session meanwhile.
            return validated(
                models.CallToolResult,
                self.request(
                    "tasks/result", wire.GetTaskRequestParams(task_id=state.task_id), timeout, self.call_cancel
                ),
                "tasks/result",
            )
        if state.status == "failed":
            raise _raised(state.error or {}, state.task_id)
        if state.result is None:
            raise MCPProtocolError(MCP_CODES.PROTOCOL_INVALID, f"task {state.task_id} completed without a result")
        return validated(models.CallToolResult, state.result, "tasks/get")

    def cancel(self, task_id: str, timeout: Timeout) -> None:
        self.request("tasks/cancel", wire.CancelTaskRequestParams(task_id=task_id), timeout)

    def send_result(self, task_id: str) -> PendingRequest:
        """A 2025-11-25 ``tasks/result`` sent without waiting for its answer (the poller's way)."""
        return self.era.dispatcher.send_request("tasks/result", wire.GetTaskRequestParams(task_id=task_id))

    def withdraw(self, pending: PendingRequest, reason: str) -> None:
        """Give up on a request :meth:`send_result` sent: the server is sent ``notifications/cancelled``."""
        self.era.dispatcher.cancel(pending, reason)


def tool_call_params(
    client: MCPClient, era: ClientEra, name: str, arguments: Mapping[str, Any] | None, *, prefer: bool
) -> dict[str, Any]:
    """The params of ``tools/call`` as they go on the wire; with a 2025-11-25 task asked for when the server and the
    tool allow it (``prefer``: also when optional).

    Built as a dict, not as a :class:`~mcp_sync.types.CallToolRequestParams`
    made and dumped again for every call: the arguments become what JSON
    holds, as the model's dump makes them (a ``datetime`` its ISO text, a set
    a list, NaN ``null``), and keys that are not strings are refused. In the
    stateless era nothing is added: the extension is declared in every
    request's ``_meta``, and the server decides.
    """
    if not isinstance(name, str):
        raise TypeError(f"a tool's name is a string, not {type(name).__name__}")
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        arguments = dict(arguments)
        keys = [key for key in arguments if not isinstance(key, str)]
        if keys:
            raise TypeError(f"the arguments of tool {name!r} are named by strings, not {keys[0]!r}")
        params["arguments"] = pydantic_core.to_jsonable_python(
            arguments, by_alias=True, exclude_none=True, inf_nan_mode="null"
        )
    if era.name != "handshake":
        return params
    declared = era.peer.capabilities.model_extra or {}
    requests = (declared.get("tasks") or {}).get("requests") or {}
    if "call" not in (requests.get("tools") or {}):
        return params
    tool = client.tools.find(name)
    execution = ((tool.model_extra or {}).get("execution") if tool is not None else None) or {}
    support = execution.get("taskSupport", "forbidden")
    if support == "required" or (prefer and support == "optional"):
        params["task"] = wire.TaskMetadata().to_wire()  # an extra member, as 2025-11-25 has it
    return params


# The parameter is a string: the subscript keeps it as written, and the content models wait for their first use.
class ToolTask(concurrent.futures.Future["CallToolResult"]):
    """A tool call the server runs as a task: a future of its :class:`~mcp_sync.types.CallToolResult`.

    ``result(timeout)`` waits for it (a tool error is a result with
    ``is_error``; a task that failed raises its error), ``cancel()`` sends
    ``tasks/cancel``, ``add_done_callback`` works as on any future.
    :attr:`task_id` is what :meth:`MCPClient.task` takes to reattach later,
    from another process for instance. The client's poller thread keeps
    :attr:`status` and :attr:`progress` up to date; closing the client ends
    the future with ``TRANSPORT_CLOSED`` (the task itself runs on).

    >>> from mcp_sync.types import CallToolResult, TextContent
    >>> done = ToolTask.finished("echo", CallToolResult(content=[TextContent(text="hi")]))
    >>> done.status, done.result(0).text
    ('completed', 'hi')
    """

    def __init__(self, name: str | None, state: TaskState, form: TaskForm | None = None) -> None:
        super().__init__()
        self.name = name
        """The tool's name (``None`` when reattached by id: the server does not say)."""
        self._last = state
        self._form = form
        self._answered: set[str] = set()
        self._displays: list[Any] = []
        self._fetching: PendingRequest | None = None
        """The poller's 2025-11-25 ``tasks/result`` in flight."""
        self.add_done_callback(lambda _: self._redraw())

    @classmethod
    def finished(cls, name: str, result: models.CallToolResult) -> ToolTask:
        """A handle on a call the server answered at once, without a task (its :attr:`task_id` is ``None``)."""
        task = cls(name, TaskState(task_id="", status="completed"))
        task.set_result(result)
        return task

    @property
    def task_id(self) -> str | None:
        """The server's id of the task (``None`` when the server answered at once)."""
        return self._last.task_id or None

    @property
    def status(self) -> str:
        """``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``, as last polled."""
        return "cancelled" if self.cancelled() else self._last.status

    @property
    def progress(self) -> str | None:
        """The server's last status message (what it says it is doing), if any."""
        return self._last.status_message

    def cancel(self) -> bool:
        """Send ``tasks/cancel`` and end the future as cancelled; ``False`` when it had ended already.

        Cancelling is cooperative on the server: the work may still finish there.
        """
        return self._cancel(USE_DEFAULT)

    def _cancel(self, within: Timeout) -> bool:
        if self.done():
            return False
        self._send_cancel(within)
        return super().cancel()

    def _send_cancel(self, within: Timeout) -> None:
        """``tasks/cancel`` to the server, its answer waited for ``within`` seconds (``USE_DEFAULT``: the client's
        timeout). A failure is logged (cancelling is best effort)."""
        form = self._form
        if form is not None:
            try:
                form.cancel(self._last.task_id, within)
            except MCPError as exc:
                log.warning("tasks/cancel for %s failed: %s", self._last.task_id, exc)

    def step(self, timeout: Timeout = USE_DEFAULT) -> float | None:
        """Poll once: update the status, answer input requests, end the future when the task has ended.

        Returns the seconds to wait before the next poll, or ``None`` once the
        future is done. Errors of the poll itself raise. A 2025-11-25 task's
        ``tasks/result`` is waited for here, within ``timeout``.
        """
        return self._step(timeout, None)

    def _advance(self, timeout: float | None, wake: Callable[[], None]) -> float | None:
        """The poller's :meth:`step`, which never waits for a 2025-11-25 ``tasks/result``.

        That request (which the server answers only once the task has ended)
        is sent and left in flight, and the delay returned is ``timeout``
        (infinite for none): the poller comes back when ``wake`` tells it the
        answer arrived, or when that time is up, and this call then collects
        the answer or gives up on the request (``TIMEOUT``). So one task
        waiting for input never holds up the poller's other handles.
        """
        pending = self._fetching
        if pending is None or self.done():
            return self._step(timeout, lambda form, state: self._fetch(form, state, timeout, wake))
        self._fetching = None
        self._collect(pending)
        return None

    def _step(self, timeout: Timeout, fetch: Callable[[TaskForm, TaskState], float] | None) -> float | None:
        """One poll; ``fetch`` (the poller's) sends a 2025-11-25 ``tasks/result`` instead of waiting for it."""
        form = self._form
        if self.done() or form is None:
            return None
        state = form.get(self._last.task_id, timeout)
        seen, self._last = self._last, state
        if (seen.status, seen.status_message) != (state.status, state.status_message):
            self._redraw()
        if state.terminal or (form.core_form and state.status == "input_required"):
            if fetch is not None and form.core_form and state.status != "cancelled":
                return fetch(form, state)
            self._settle(form, state, timeout)
            return None
        if state.status == "input_required":
            form.answer(state, self._answered, timeout)
        suggested = DEFAULT_POLL_INTERVAL if state.poll_interval is None else state.poll_interval
        return min(MAX_POLL_INTERVAL, max(MIN_POLL_INTERVAL, suggested))

    def _fetch(self, form: TaskForm, state: TaskState, limit: float | None, wake: Callable[[], None]) -> float:
        """Send the 2025-11-25 ``tasks/result`` and leave it in flight; the seconds until it is given up."""
        pending = self._fetching = form.send_result(state.task_id)
        pending.future.add_done_callback(lambda _: wake())
        return math.inf if limit is None else limit

    def _collect(self, pending: PendingRequest) -> None:
        """End the future with what the ``tasks/result`` in flight answered, or ``TIMEOUT`` if it never did."""
        form = self._form
        assert form is not None  # only a handle with a connection sends one

        def answered(state: TaskState, timeout: Timeout) -> models.CallToolResult:
            if not pending.future.done():
                form.withdraw(pending, "timed out")
                raise MCPError(
                    MCP_CODES.TIMEOUT,
                    f"tasks/result for task {self._last.task_id} timed out",
                    context={"task_id": self._last.task_id, "method": "tasks/result"},
                )
            return validated(models.CallToolResult, pending.future.result(), "tasks/result")

        self._settle(form, self._last, None, answered)

    def _settle(
        self,
        form: TaskForm,
        state: TaskState,
        timeout: Timeout,
        outcome: Callable[[TaskState, Timeout], models.CallToolResult] | None = None,
    ) -> None:
        if state.status == "cancelled":
            super().cancel()
            return
        try:
            result = (outcome or form.outcome)(state, timeout)
        except MCPError as exc:
            self._end(exc)
            return
        if form.core_form:
            self._last = TaskState(task_id=state.task_id, status="completed", status_message=state.status_message)
        self._end(result)

    def _end(self, outcome: models.CallToolResult | BaseException) -> None:
        """Fill in the future, unless it ended meanwhile (cancelled from another thread)."""
        try:
            if isinstance(outcome, BaseException):
                self.set_exception(outcome)
            else:
                self.set_result(outcome)
        except concurrent.futures.InvalidStateError:
            pass

    def __repr__(self) -> str:
        return f"<ToolTask {self.name} {self.task_id or '(no task)'} {self.status}>"

    def _ipython_display_(self) -> None:
        """Show the task's status in the notebook, updated in place as the poller learns more."""
        shown = importlib.import_module("IPython.display")
        self._displays.append(shown.display(shown.HTML(self._repr_html_()), display_id=True))

    def _redraw(self) -> None:
        """Update the task's displays in the notebook, if it has any."""
        if self._displays:
            html_type = importlib.import_module("IPython.display").HTML
            for handle in self._displays:
                handle.update(html_type(self._repr_html_()))

    def _repr_html_(self) -> str:
        """The task's status as a line of HTML (a notebook shows it under the cell)."""
        import html  # only notebooks show it (html.entities costs a millisecond to import)

        message = f" &mdash; {html.escape(self.progress)}" if self.progress else ""
        return (
            f"<div class='mcp-sync-task'><b>{html.escape(str(self.name))}</b> "
            f"<code>{html.escape(self.task_id or '(no task)')}</code>: {html.escape(self.status)}{message}</div>"
        )


def drive(task: ToolTask, limit: float | None, started: float, cancel: threading.Event | None) -> models.CallToolResult:
    """Poll ``task`` in this thread until it ends; return its result (what call_tool does).

    The call began at ``started`` (a :func:`time.monotonic` value) and ends
    within ``limit`` seconds of it (``None``: no limit), ``tasks/cancel``
    included: the task is followed until the last tenth of that time
    (:data:`CANCEL_TIMEOUT` at most), kept for the cancel. Running out of
    time, or ``cancel`` being set, sends ``tasks/cancel`` and raises
    ``TIMEOUT`` or ``REQUEST_CANCELLED``; a task the server cancelled raises
    ``REQUEST_CANCELLED``.
    """
    deadline: float | None = None  # when the call ends
    followed: float | None = None  # when the task stops being followed, the rest kept for tasks/cancel
    if limit is not None:
        deadline = started + limit
        followed = deadline - min(CANCEL_TIMEOUT, limit / 10)

    def cancel_within() -> float:
        """How long the tasks/cancel may wait for its answer: what is left of the call, CANCEL_TIMEOUT at most."""
        return CANCEL_TIMEOUT if deadline is None else max(0.0, min(CANCEL_TIMEOUT, deadline - time.monotonic()))

    waiter = cancel if cancel is not None else threading.Event()
    while True:
        remaining = None if followed is None else followed - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise _timed_out(task, limit, cancel_within())
        try:
            delay = task.step(remaining)
        except MCPError as exc:
            if exc.code != MCP_CODES.TIMEOUT or followed is None or time.monotonic() < followed:
                raise
            delay = 0.0  # the poll itself ran out of the call's time: cancelled and reported as the call's timeout
        if delay is None:
            break
        if waiter.wait(delay if remaining is None else min(delay, remaining)):
            task._cancel(cancel_within())
            raise MCPError(
                MCP_CODES.REQUEST_CANCELLED,
                f"the call to {task.name!r} was cancelled (tasks/cancel sent for {task.task_id})",
                context={"task_id": task.task_id, "tool": task.name},
            )
    if task.cancelled():
        raise MCPError(
            MCP_CODES.REQUEST_CANCELLED,
            f"the server cancelled task {task.task_id} of tool {task.name!r}",
            context={"task_id": task.task_id, "tool": task.name},
        )
    try:
        return task.result(0)
    except MCPError as exc:
        if exc.code == MCP_CODES.REQUEST_CANCELLED and waiter.is_set():
            # The call was cancelled while its 2025-11-25 tasks/result waited (withdrawn): the task is cancelled too.
            task._send_cancel(cancel_within())
            raise MCPError(
                MCP_CODES.REQUEST_CANCELLED,
                f"the call to {task.name!r} was cancelled (tasks/cancel sent for {task.task_id})",
                context={"task_id": task.task_id, "tool": task.name},
            ) from exc
        # A 2025-11-25 tasks/result that ran out of the call's time ended the future: the call's own timeout.
        if exc.code != MCP_CODES.TIMEOUT or followed is None or time.monotonic() < followed:
            raise
        raise _timed_out(task, limit, cancel_within()) from exc


def _timed_out(task: ToolTask, limit: float | None, within: float) -> MCPError:
    """The call's TIMEOUT, once the server was sent ``tasks/cancel`` (also when the future has ended already)."""
    if not task._cancel(within):
        task._send_cancel(within)
    return MCPError(
        MCP_CODES.TIMEOUT,
        f"task {task.task_id} of tool {task.name!r} did not end within {limit}s (tasks/cancel sent)",
        context={"task_id": task.task_id, "tool": task.name},
    )


class TaskPoller:
    """The client's one thread that polls its :class:`ToolTask` handles, each at its server's interval.

    Started by the first task watched, stopped by :meth:`stop` (the client's
    close), which ends every unfinished handle with ``TRANSPORT_CLOSED``.
    """

    def __init__(self, timeout: Callable[[], float | None]) -> None:
        self._timeout = timeout
        self._due: dict[ToolTask, float] = {}
        self._woken: set[ToolTask] = set()
        """Handles whose ``tasks/result`` in flight was answered: due at once, whatever their time."""
        self._condition = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def watch(self, task: ToolTask) -> None:
        """Poll ``task`` from now on, until it ends."""
        with self._condition:
            if self._stopped:
                raise MCPError(MCP_CODES.TRANSPORT_CLOSED, "the client is closed")
            self._due[task] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcp-sync-client-tasks", daemon=True)
                self._thread.start()
            self._condition.notify()

    def _next(self) -> list[ToolTask] | None:
        """The tasks due now, waiting until one is; ``None`` once stopped."""
        with self._condition:
            while not self._stopped:
                now = time.monotonic()
                ready = [task for task, due in self._due.items() if due <= now or task in self._woken]
                self._woken.difference_update(ready)
                if ready:
                    return ready
                soonest = min(self._due.values(), default=None)
                # At most IDLE_WAIT: a handle whose tasks/result has no time limit is due at infinity.
                self._condition.wait(IDLE_WAIT if soonest is None else min(IDLE_WAIT, soonest - now))
            return None

    def _run(self) -> None:
        while (ready := self._next()) is not None:
            for task in ready:
                try:
                    delay = task._advance(self._timeout(), functools.partial(self._wake, task))
                except Exception as exc:
                    # An MCPError of the poll, or a provider's own error: it ends this handle, never the
                    # poller (whose death would leave every other handle of the client unpolled).
                    task._end(exc)
                    delay = None
                with self._condition:
                    if delay is not None and not task.done() and task in self._due:
                        self._due[task] = time.monotonic() + delay
                    else:  # ended, or stop() let go of it meanwhile
                        self._due.pop(task, None)
                        self._woken.discard(task)

    def _wake(self, task: ToolTask) -> None:
        """Have ``task`` polled at once (its ``tasks/result`` was answered; called on the connection's thread)."""
        with self._condition:
            if task in self._due:  # still followed (a handle stays there while it is polled)
                self._woken.add(task)
                self._condition.notify()

    def stop(self, failure: MCPError) -> None:
        """Stop polling: each unfinished handle ends with ``failure`` now; :meth:`join` waits for the thread."""
        with self._condition:
            self._stopped = True
            left = list(self._due)
            self._due.clear()
            self._woken.clear()
            self._condition.notify()
        for task in left:
            task._end(failure)

    def join(self) -> None:
        """Wait for the thread to end (not from the thread itself: a done callback may close the client)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # The connection is closed first, so a poll in flight fails at once; a provider still asking
            # someone something is not waited for beyond this.
            thread.join(STOP_TIMEOUT)
