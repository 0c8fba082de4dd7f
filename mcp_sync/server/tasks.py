"""Tools that run as tasks: the server side of ``io.modelcontextprotocol/tasks`` (SEP-2663) and the 2025-11-25 form.

A tool registered with ``task="optional"`` or ``task="required"`` may run
as a task. The server decides per call: when a 2026-07-28 request declares
the extension (in ``_meta["io.modelcontextprotocol/clientCapabilities"]``),
the call answers at once with a ``CreateTaskResult`` and the tool runs on a
bounded pool of worker threads; otherwise an ``optional`` tool runs as a
plain call and a ``required`` one is refused (``-32021``, naming the
extension). The extension belongs to no handshake revision (SEP-2663: under
earlier protocol versions a server must not answer with a
``CreateTaskResult``), so there a client that sends the 2025-11-25
``params.task`` gets that core form (a nested ``task``, then
``tasks/result``), whatever extensions it declared at ``initialize``.

Inside a task, ``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots`` and
``ctx.ask_all`` need no client connection: the questions wait in the task
(``input_required``, listed as ``inputRequests`` by ``tasks/get``) until a
``tasks/update`` answers them, and the handler carries on. ``tasks/cancel``
sets ``ctx.cancelled``. A tool error completes the task with
``isError``; a protocol error (an :class:`~mcp_sync.errors.MCPError` from
the handler) fails it with that error.

Task state lives in a store (see :mod:`mcp_sync.server.task_store`): in
memory by default, or shared, such as
:class:`~mcp_sync.server.scale.redis_tasks.RedisTaskStore`; either is
bounded.

>>> from mcp_sync import Context, MCPServer
>>> server = MCPServer("demo")
>>> @server.tool(task="optional")
... def build_index(ctx: Context) -> str:
...     return "indexed"
>>> server.get_tool("build_index").model_extra["execution"]
{'taskSupport': 'optional'}
>>> server.stop()
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from ..protocol.tasks import (
    EXTENSION,
    RELATED_TASK,
    CancelTaskRequestParams,
    CoreCreateTaskResult,
    CreateTaskResult,
    GetTaskRequestParams,
    ListTasksResult,
    TaskStatus,
    TaskStatusNotificationParams,
    UpdateTaskRequestParams,
    core_task,
    is_terminal,
    missing_extension_data,
)
from ..protocol.types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmptyResult,
    Implementation,
    ListRootsRequest,
    ListRootsResult,
    LoggingLevel,
    PaginatedRequestParams,
    RequestParams,
    Result,
    ServerCapabilities,
    WireModel,
)
from ..runtime.cancellation import CancelEvent
from ..runtime.workers import ElasticPool, PoolClosed
from .backend import Notice
from .context import ClientChannel, Context, HandshakeChannel
from .stateless import ClientRequest, MissingClientCapability, StatelessRequest
from .task_store import (
    DEFAULT_POLL_INTERVAL_MS,
    DEFAULT_TTL_MS,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
)

if TYPE_CHECKING:
    from ..runtime.transport import Route
    from .core import MCPServer

__all__ = ["PROCESS_STOPPED", "TaskChannel", "TaskRunner"]

log = logging.getLogger(__name__)

PROCESS_STOPPED = "Internal error: the process running the task stopped before it finished"
"""The error of a task whose process stopped (a shared store's lease ran out: see :meth:`TaskRunner.end_stopped`)."""
_WAKE_S = 0.5
"""The longest a task waiting for input goes without reading its record again (a shared store has no push)."""
_CAPABILITY_FOR = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
_R = TypeVar("_R", bound=BaseModel)


def _declared(capabilities: ClientCapabilities) -> bool:
    return EXTENSION in (capabilities.extensions or {})


def declares_extension(ctx: Context) -> bool:
    """Whether the request of ``ctx`` may get the extension's tasks: a 2026-07-28 request that declares it.

    Never a handshake-era request (SEP-2663 is not part of those revisions),
    whatever its client declared at ``initialize`` or in its ``_meta``.
    """
    stateless = ctx.stateless
    return stateless is not None and _declared(stateless.client_capabilities)


def _core_ttl(requested: Any, most: int | None) -> int | None:
    """The TTL a 2025-11-25 ``params.task.ttl`` gets: what was asked, within the server's own TTL.

    The spec lets the server override it; a client asking for years (or a
    number a shared store cannot take as an expiry) gets the server's TTL.
    """
    if not isinstance(requested, int) or isinstance(requested, bool) or requested <= 0:
        return most
    return requested if most is None else min(requested, most)


def _owner(ctx: Context) -> str | None:
    auth = ctx.auth
    return None if auth is None else auth.subject or auth.client_id


class _Live:
    """What only the process running a task has: its cancel event and wake-up condition."""

    def __init__(self) -> None:
        self.cancelled = CancelEvent()
        self.wake = threading.Condition()
        self.started = False  # set by the worker thread that runs it (a task still in line is not)

    def poke(self) -> None:
        with self.wake:
            self.wake.notify_all()


class TaskChannel:
    """How a handler running as a task reaches its client: questions wait in the task for ``tasks/update``.

    The answers the originating request carried (a 2026-07-28 request that
    first gathered input in ``inputRequests`` rounds) answer questions
    asked again under the same key.
    """

    def __init__(
        self,
        runner: TaskRunner,
        task_id: str,
        origin: ClientChannel,
        live: _Live,
    ) -> None:
        self.runner = runner
        self.task_id = task_id
        self.live = live
        self._info = origin.client_info
        self._capabilities = origin.client_capabilities
        stateless = origin.stateless
        self._given: dict[str, Any] = dict(stateless.answers) if stateless is not None else {}
        self._origin = origin
        self._numbers = itertools.count(1)

    @property
    def client_info(self) -> Implementation | None:
        """The client that started the task."""
        return self._info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client that started the task declared."""
        return self._capabilities

    @property
    def stateless(self) -> StatelessRequest | None:
        """Always ``None``: a task outlives its request."""
        return None

    @property
    def route(self) -> Route | None:
        """Always ``None``: a task outlives its request, whose answer's stream has ended."""
        return None

    def log(self, level: LoggingLevel, data: Any, logger: str | None) -> None:
        """Sent the way the originating request's messages were, while its connection lasts."""
        self._origin.log(level, data, logger)

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """Every question put in the task at once; the answers once ``tasks/update`` gave them all."""
        for request in requests.values():
            capability = _CAPABILITY_FOR[request.method]
            if getattr(self._capabilities, capability) is None:
                raise MissingClientCapability(capability)
        answers = {key: self._given.pop(key) for key in list(requests) if key in self._given}
        pending = {key: request.to_wire() for key, request in requests.items() if key not in answers}
        if pending:
            answers.update(self.runner.wait_for_input(self.task_id, self.live, pending))
        return {key: answers[key] for key in requests}

    def _ask(self, request: ClientRequest, result: type[_R], key: str | None) -> _R:
        name = key or f"{request.method.split('/')[0]}-{next(self._numbers)}"
        answer = self.ask_all({name: request})[name]
        try:
            return result.model_validate(answer)
        except ValidationError as exc:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID, f"invalid answer to {request.method}: {exc}", cause=exc
            ) from exc

    def create_message(
        self, params: CreateMessageRequestParams, timeout: float | None, key: str | None
    ) -> CreateMessageResult:
        """The client's answer to a sampling question put in the task."""
        return self._ask(CreateMessageRequest(params=params), CreateMessageResult, key)

    def elicit(self, params: ElicitRequestFormParams, timeout: float | None, key: str | None) -> ElicitResult:
        """The client's answer to an elicitation question put in the task."""
        return self._ask(ElicitRequest(params=params), ElicitResult, key)

    def list_roots(self, timeout: float | None, key: str | None) -> ListRootsResult:
        """The client's answer to a roots question put in the task."""
        return self._ask(ListRootsRequest(params=RequestParams()), ListRootsResult, key)


class TaskRunner:
    """Runs a server's task tools and answers ``tasks/*`` (made by :attr:`MCPServer.tasks`).

    ``max_threads`` tools run at once (set it before the first task); later
    tasks wait in line, kept in the store meanwhile. ``ttl_ms`` and
    ``poll_interval_ms`` are what new tasks get; ``store`` is where they are
    kept (an app with a Redis backend sets a shared one). Invalid arguments
    are refused on the call (``-32602``), before any task starts.

    >>> from mcp_sync import MCPServer
    >>> server = MCPServer("demo")
    >>> server.tasks.max_threads = 2
    >>> server.tasks.ttl_ms = 10 * 60 * 1000  # ten minutes
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        store: TaskStore | None = None,
        max_threads: int = 8,
        ttl_ms: int | None = DEFAULT_TTL_MS,
        poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
    ) -> None:
        self.server = server
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.max_threads = max_threads
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self._lock = threading.Lock()
        self._live: dict[str, _Live] = {}
        self._pool: ElasticPool | None = None
        self._reaper: threading.Thread | None = None
        self._reaper_wake = threading.Condition(self._lock)
        self._closed = False

    # ------------------------------------------------------------- starting

    def check_listen(self, task_ids: object, ctx: Context) -> None:
        """A ``subscriptions/listen`` asking for ``task_ids``: ``-32021`` unless its client declared the extension,
        ``-32602`` unless they are a list of ids of the caller's own tasks (as ``tasks/get`` would find them)."""
        if not declares_extension(ctx):
            raise MCPError(
                MCP_CODES.MISSING_CAPABILITY,
                f"Missing required client capability: task notifications need the {EXTENSION} extension",
                data=missing_extension_data(),
            )
        if not isinstance(task_ids, list) or not all(isinstance(task_id, str) for task_id in task_ids):
            raise MCPError(MCP_CODES.INVALID_PARAMS, "Invalid params: notifications.taskIds must be a list of task ids")
        for task_id in task_ids:
            self._lookup(task_id, ctx)

    @staticmethod
    def offer_core(client: ClientCapabilities, server: ServerCapabilities) -> None:
        """What ``initialize`` says of tasks: the 2025-11-25 ``tasks`` capability for a client that declared it.

        The extension, which no handshake revision includes, is not offered
        there (``server`` loses it; ``server/discover`` offers it).
        """
        offered = {name: settings for name, settings in (server.extensions or {}).items() if name != EXTENSION}
        server.extensions = offered or None
        if (client.model_extra or {}).get("tasks") is not None:
            server.tasks = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}  # type: ignore[attr-defined]

    @staticmethod
    def declared(ctx: Context) -> bool:
        """Whether the request of ``ctx`` may get tasks (see :func:`declares_extension`)."""
        return declares_extension(ctx)

    def decide(self, name: str, arguments: dict[str, Any], params: dict[str, Any], ctx: Context) -> WireModel | None:
        """A ``tools/call`` of ``name``: the task it started, or ``None`` to run it as a plain call."""
        support, before = self.server.task_support(name)
        if support == "forbidden":
            return None
        self.server.check_tool_arguments(name, arguments)  # bad arguments are the call's error, not the task's
        if declares_extension(ctx):
            if before is not None:
                before(arguments, ctx)  # on the request: it may still ask in inputRequests rounds
            return CreateTaskResult(**self.start(name, arguments, ctx).task().model_dump())
        asked = params.get("task")
        if ctx.stateless is None and isinstance(asked, dict):
            ttl = _core_ttl(asked.get("ttl"), self.ttl_ms)
            record = self.start(name, arguments, ctx, core_form=True, ttl_ms=ttl)
            return CoreCreateTaskResult(task=core_task(record.task()))
        if support == "required" and ctx.stateless is None:  # 2025-11-25: -32601 for a required task not asked for
            raise MCPError(
                MCP_CODES.METHOD_NOT_FOUND,
                f"Method not found: tool {name} runs only as a task (call it with params.task)",
            )
        if support == "required":
            raise MCPError(
                MCP_CODES.MISSING_CAPABILITY,
                f"Missing required client capability: tool {name} runs only as a task ({EXTENSION})",
                data=missing_extension_data(),
            )
        return None

    def start(
        self,
        name: str,
        arguments: dict[str, Any],
        ctx: Context,
        *,
        core_form: bool = False,
        ttl_ms: int | None = None,
    ) -> TaskRecord:
        """Keep a new task for a call of tool ``name`` and queue it; the record as kept.

        The record is in the store before this returns, so a ``tasks/get``
        right after the ``CreateTaskResult`` finds it.
        """
        record = TaskRecord(
            task_id=secrets.token_hex(16),  # hex: an id never starts with "-", which a CLI would take for an option
            tool=name,
            ttl_ms=ttl_ms if core_form else self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            core_form=core_form,
            owner=_owner(ctx),
        )
        live = _Live()
        channel: ClientChannel
        if core_form:
            # A 2025-11-25 client knows no tasks/update: its task asks it directly, on its connection,
            # each question marked as the task's (related-task), and a tasks/cancel withdraws the question in
            # flight (notifications/cancelled).
            assert ctx.session is not None  # such a task starts only from a handshake-era session's request
            channel = HandshakeChannel(ctx.session, live.cancelled, {RELATED_TASK: {"taskId": record.task_id}})
        else:
            channel = TaskChannel(self, record.task_id, ctx.channel, live)
        context = Context(
            cancelled=live.cancelled,
            server=self.server,
            meta=ctx.meta,
            channel=channel,
            auth=ctx.auth,
        )
        context.task_id = record.task_id
        with self._lock:
            if self._closed:
                raise MCPError(MCP_CODES.INTERNAL_ERROR, "the server is shutting down: no new tasks")
            self.store.create(record)
            self._live[record.task_id] = live
            if self._pool is None:
                self._pool = ElasticPool("mcp-sync-task", max_threads=self.max_threads, idle_timeout=5.0)
            pool = self._pool
            self._start_reaper()
        try:
            pool.submit(lambda: self._run(record.task_id, name, arguments, context, live))
        except PoolClosed:  # the server stopped between the two locks: the task never runs
            self._abandon([record.task_id])
            raise MCPError(MCP_CODES.INTERNAL_ERROR, "the server is shutting down: no new tasks") from None
        return record

    def _run(self, task_id: str, name: str, arguments: dict[str, Any], ctx: Context, live: _Live) -> None:
        """One task, on a worker thread: the tool's outcome written to the store."""
        live.started = True
        try:
            if live.cancelled.is_set():
                raise MCPError(MCP_CODES.REQUEST_CANCELLED, "cancelled before it started")
            result = self.server.invoke_tool(name, arguments, context=ctx)
        except MCPError as error:
            if error.code == MCP_CODES.REQUEST_CANCELLED or live.cancelled.is_set():
                self._finish(task_id, "cancelled", None, None)
            else:
                wire = {"code": error.jsonrpc_code, "message": error.message}
                if error.data is not None:
                    wire["data"] = error.data
                self._finish(task_id, "failed", None, wire)
        except Exception as exc:  # the server failed, not the tool (the tool's own errors are results)
            log.warning("task %s of tool %s failed: %s", task_id, name, exc, exc_info=True)
            self._finish(task_id, "failed", None, {"code": -32603, "message": f"Internal error: {exc}"})
        else:
            wire = result.to_wire()
            wire.pop("resultType", None)
            self._finish(task_id, "completed", wire, None)
        finally:
            with self._lock:
                self._live.pop(task_id, None)
            live.poke()  # a tasks/result waiting for the end

    def end_stopped(self, task_id: str) -> TaskRecord | None:
        """End as failed a task whose process stopped before it finished (a shared store tells, having found that
        process's lease run out), and tell its listeners; the task as it is then (``None``: gone meanwhile)."""
        log.warning("task %s ended as failed: the process running it stopped", task_id)
        return self._finish(task_id, "failed", None, {"code": -32603, "message": PROCESS_STOPPED})

    def _finish(
        self, task_id: str, status: TaskStatus, result: dict[str, Any] | None, error: dict[str, Any] | None
    ) -> TaskRecord | None:
        def change(record: TaskRecord) -> None:
            if is_terminal(record.status):  # ended already (cancelled by a 2025-11-25 tasks/cancel): so it stays
                return
            record.status = status
            record.result = result
            record.error = error
            record.input_requests = {}
            record.answers = {}
            record.status_message = error["message"] if error is not None else None
            record.updated_at = time.time()

        record = self.store.update(task_id, change)
        self._changed(record)
        return record

    def _changed(self, record: TaskRecord | None) -> None:
        """Tell the listening clients about the task's new state: here, then in the server's other processes.

        As for a resource update, :class:`~mcp_sync.server.backend.BackendUnavailable`
        when the other processes cannot be told (this one's clients were).
        """
        if record is None:
            return
        params = TaskStatusNotificationParams(**record.detailed().model_dump())
        notice = Notice("task_status", record.task_id, detail=params.to_wire())
        self.server.deliver(notice)
        self.server.backend.publish(notice)

    # ---------------------------------------------------------------- input

    def wait_for_input(self, task_id: str, live: _Live, pending: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Put ``pending`` questions in the task and wait until ``tasks/update`` answered them all."""

        def ask(record: TaskRecord) -> None:
            record.input_requests.update(pending)
            record.status = "input_required"
            record.updated_at = time.time()

        self._changed(self.store.update(task_id, ask))
        answers: dict[str, Any] = {}
        while True:
            record = self.store.get(task_id)
            if record is None:
                raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"task {task_id} expired while waiting for input")
            if live.cancelled.is_set() or record.cancel_requested:
                live.cancelled.set()
                raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"task {task_id} was cancelled")
            arrived = {key: record.answers[key] for key in pending if key in record.answers}
            if arrived:

                def take(record: TaskRecord, keys: frozenset[str] = frozenset(arrived)) -> None:
                    for key in keys:
                        record.answers.pop(key, None)

                self.store.update(task_id, take)
                answers.update(arrived)
            if len(answers) == len(pending):
                return answers
            with live.wake:
                live.wake.wait(min(_WAKE_S, max(0.0, record.expires_at - time.time())))

    # ------------------------------------------------------------- methods

    def _lookup(self, task_id: str, ctx: Context) -> TaskRecord:
        record = self.store.get(task_id)
        if record is None or record.owner != _owner(ctx):
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Invalid params: unknown or expired task {task_id!r}",
                context={"taskId": task_id},
            )
        return record

    def _gate(self, task_id: str, ctx: Context, *, core_ok: bool) -> TaskRecord:
        """The task a ``tasks/*`` request names, when its client may ask for it."""
        if declares_extension(ctx):
            return self._lookup(task_id, ctx)
        if core_ok and ctx.stateless is None:  # a 2025-11-25 client, about a task it started that way
            record = self.store.get(task_id)
            if record is not None and record.core_form:
                return self._lookup(task_id, ctx)
        raise MCPError(
            MCP_CODES.MISSING_CAPABILITY,
            f"Missing required client capability: tasks need the {EXTENSION} extension",
            data=missing_extension_data(),
        )

    def get(self, params: GetTaskRequestParams, ctx: Context) -> WireModel:
        """``tasks/get``: the task, with its result, error or questions (``-32602`` for an unknown id)."""
        record = self._gate(params.task_id, ctx, core_ok=True)
        if record.core_form and not declares_extension(ctx):
            return _Flat(**core_task(record.task()))
        detailed = record.detailed().to_wire()
        detailed["resultType"] = "complete"
        return _Flat(**detailed)

    def update(self, params: UpdateTaskRequestParams, ctx: Context) -> EmptyResult:
        """``tasks/update``: answers to the task's pending questions (others are ignored, as the spec asks)."""
        self._gate(params.task_id, ctx, core_ok=False)
        responses = params.input_responses

        def answer(record: TaskRecord) -> None:
            for key, value in responses.items():
                if key in record.input_requests:
                    del record.input_requests[key]
                    record.answers[key] = value
            if not record.input_requests and record.status == "input_required":
                record.status = "working"
            record.updated_at = time.time()

        self._changed(self.store.update(params.task_id, answer))
        self._poke(params.task_id)
        return EmptyResult(result_type="complete")

    def cancel(self, params: CancelTaskRequestParams, ctx: Context) -> WireModel:
        """``tasks/cancel``: the handler's ``ctx.cancelled`` is set; an empty ack (also for a finished task).

        The 2025-11-25 form answers with the task, already ``cancelled`` (and
        so it stays, whatever the handler still does), and refuses a task that
        has ended with ``-32602``, as that revision requires.
        """
        record = self._gate(params.task_id, ctx, core_ok=True)
        core = record.core_form and not declares_extension(ctx)
        if core and is_terminal(record.status):
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Invalid params: task {params.task_id!r} has ended ({record.status})",
                context={"taskId": params.task_id},
            )
        if not is_terminal(record.status):

            def flag(record: TaskRecord) -> None:
                record.cancel_requested = True
                if core:
                    record.status = "cancelled"
                    record.updated_at = time.time()

            record = self.store.update(params.task_id, flag) or record
            with self._lock:
                live = self._live.get(params.task_id)
            if live is not None:
                live.cancelled.set()
                live.poke()
        if core:
            return _Flat(**core_task(record.task()))
        return EmptyResult(result_type="complete")

    def result(self, params: GetTaskRequestParams, ctx: Context) -> WireModel:
        """``tasks/result`` (2025-11-25 only): the task's result, once it has ended.

        It waits for the end, as that revision requires, wherever the task
        runs (a task of another process sharing the store is read again
        every half second), until the task expires (``-32602``, as for any
        unknown task) or the request is cancelled.
        """
        if ctx.stateless is not None:
            raise MCPError(MCP_CODES.METHOD_NOT_FOUND, "Method not found: tasks/result (not in the tasks extension)")
        record = self._gate(params.task_id, ctx, core_ok=True)
        while not is_terminal(record.status):
            if ctx.cancelled.is_set():  # the client gave up on this tasks/result, or went away
                raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"tasks/result for task {record.task_id} was cancelled")
            with self._lock:
                live = self._live.get(record.task_id)
            if live is None:  # run elsewhere, or ending just now: its record tells
                ctx.cancelled.wait(_WAKE_S)
            else:
                with live.wake:
                    live.wake.wait(_WAKE_S)
            record = self._lookup(params.task_id, ctx)
        if record.status == "failed" and record.error is not None:
            raise MCPError(
                MCP_CODES.INTERNAL_ERROR,
                str(record.error.get("message")),
                data=record.error.get("data"),
                jsonrpc_code=int(record.error.get("code", -32603)),
            )
        if record.status == "completed" and record.result is not None:
            result = dict(record.result)
            result["_meta"] = {**result.get("_meta", {}), RELATED_TASK: {"taskId": record.task_id}}
            return _Flat(**result)
        raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"task {record.task_id} was {record.status}")

    def list_tasks(self, params: PaginatedRequestParams, ctx: Context) -> WireModel:
        """``tasks/list`` (2025-11-25 only): the caller's tasks."""
        if ctx.stateless is not None:
            raise MCPError(MCP_CODES.METHOD_NOT_FOUND, "Method not found: tasks/list (not in the tasks extension)")
        owner = _owner(ctx)
        tasks = [record.task() for record in self.store.records() if record.core_form and record.owner == owner]
        page, cursor = self.server.page(tasks, params.cursor)
        return ListTasksResult(tasks=[core_task(task) for task in page], next_cursor=cursor)

    def _poke(self, task_id: str) -> None:
        with self._lock:
            live = self._live.get(task_id)
        if live is not None:
            live.poke()

    # -------------------------------------------------------------- expiry

    def _start_reaper(self) -> None:
        """(Under the lock.) The thread that forgets expired tasks and stops their handlers."""
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap, name="mcp-sync-task-reaper", daemon=True)
            self._reaper.start()
        else:
            self._reaper_wake.notify_all()

    def _reap(self) -> None:
        while True:
            soonest: float | None = None
            try:
                gone = set(self.store.sweep())
                soonest = self.store.next_expiry()
                with self._lock:
                    lives = list(self._live.items())
                for task_id, live in lives:
                    # Expired, cancelled through another process (a shared store), or ended there (this process
                    # stalled past its lease on its tasks): the handler is told to stop.
                    record = None if task_id in gone else self.store.get(task_id)
                    if record is None or record.cancel_requested or is_terminal(record.status):
                        live.cancelled.set()
                        live.poke()
            except MCPError as exc:  # a shared store away for a moment: looked at again at the next wake-up
                log.warning("could not look at the tasks' store: %s", exc)
            with self._lock:
                if self._closed or (not self._live and soonest is None):
                    self._reaper = None  # nothing to watch: the next task starts another reaper
                    return
                wait = _WAKE_S if self._live or soonest is None else min(60.0, soonest - time.time())
                self._reaper_wake.wait(max(0.01, wait))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel the running tasks and wait for their threads (``timeout`` seconds in all)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            reaper = self._reaper
            lives = list(self._live.values())
            self._reaper_wake.notify_all()
        for live in lives:
            live.cancelled.set()
            live.poke()
        if pool is not None:
            pool.close(timeout)
        if reaper is not None:
            reaper.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            # Tasks still in line when the pool closed never run: ended here, not left "working".
            queued = [task_id for task_id, live in self._live.items() if not live.started]
        self._abandon(queued)
        with self._lock:
            self._closed = False  # the server may be started again

    def _abandon(self, task_ids: list[str]) -> None:
        """End tasks that will never run as cancelled, and stop watching them."""
        for task_id in task_ids:
            with self._lock:
                self._live.pop(task_id, None)
            try:
                self._finish(task_id, "cancelled", None, None)
            except MCPError as exc:  # a shared store away: the record expires at its TTL
                log.warning("could not end task %s: %s", task_id, exc)

    def running(self) -> int:
        """How many tasks this process is running or has in line."""
        with self._lock:
            return len(self._live)


class _Flat(Result):
    """A result made of the fields given (the 2025-11-25 task shapes, a stored result)."""


def install(server: MCPServer, runner: TaskRunner) -> None:
    """Declare the extension on ``server`` and answer its methods with ``runner``."""
    server.extensions[EXTENSION] = {}
    server.register_method("tasks/get", GetTaskRequestParams, runner.get)
    server.register_method("tasks/update", UpdateTaskRequestParams, runner.update)
    server.register_method("tasks/cancel", CancelTaskRequestParams, runner.cancel)
    server.register_method("tasks/result", GetTaskRequestParams, runner.result)
    server.register_method("tasks/list", PaginatedRequestParams, runner.list_tasks)
