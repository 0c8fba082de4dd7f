"""Where a server's tasks are kept: the record of one task, the store's protocol, and the in-memory store.

:class:`~mcp_sync.server.tasks.TaskRunner` runs the tasks and answers
``tasks/*``; it keeps their state in a :class:`TaskStore`:
:class:`MemoryTaskStore` by default (a task is forgotten when its TTL has
passed, polled or not), or a shared one such as
:class:`~mcp_sync.server.scale.redis_tasks.RedisTaskStore`. Either is
bounded, with or without TTLs: it keeps at most :data:`DEFAULT_MAX_TASKS`
tasks (the tasks that finished first are forgotten to make room), at most
:data:`DEFAULT_MAX_TASKS_PER_OWNER` of one caller's (that caller's own
finished tasks make room for its next one, so that one caller's many tasks
never push out another's results), a finished task
:data:`DEFAULT_RETENTION_MS` at most, and refuses a new task (``-32603``)
while :data:`DEFAULT_MAX_RUNNING` are unfinished, or
:data:`DEFAULT_MAX_RUNNING_PER_OWNER` of its caller's.

>>> store = MemoryTaskStore(max_tasks=10)
>>> store.create(TaskRecord(task_id="t1", tool="build_index"))
>>> store.get("t1").status
'working'
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.tasks import DetailedTask, Task, TaskStatus, is_terminal

__all__ = [
    "DEFAULT_MAX_RUNNING",
    "DEFAULT_MAX_RUNNING_PER_OWNER",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_MAX_TASKS_PER_OWNER",
    "DEFAULT_POLL_INTERVAL_MS",
    "DEFAULT_RETENTION_MS",
    "DEFAULT_TTL_MS",
    "MemoryTaskStore",
    "TaskRecord",
    "TaskStore",
    "too_many_running",
    "too_many_running_for_owner",
]

DEFAULT_TTL_MS = 60 * 60 * 1000
"""How long a task is kept after it was created, unless the server says otherwise (an hour)."""
DEFAULT_POLL_INTERVAL_MS = 500
"""How often clients are asked to poll ``tasks/get``."""


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """Everything a store keeps about one task (plain data: it travels as JSON to a shared store).

    ``answers`` holds the client's answers by input-request key until the
    handler takes them; ``owner`` is who may see the task (the caller's
    auth subject or client id, ``None`` when nothing authenticates callers);
    ``core_form`` says the task was asked for in the 2025-11-25 form
    (``params.task``) rather than given by the extension.
    """

    task_id: str
    tool: str
    status: TaskStatus = "working"
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0
    ttl_ms: int | None = DEFAULT_TTL_MS
    poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    cancel_requested: bool = False
    core_form: bool = False
    owner: str | None = None

    def __post_init__(self) -> None:
        self.updated_at = self.updated_at or self.created_at

    @property
    def expires_at(self) -> float:
        """When the task may be forgotten (``inf`` for no TTL)."""
        return float("inf") if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def retain(self, retention_ms: int, now: float) -> None:
        """The task finished at ``now``: its TTL ends ``retention_ms`` later at the most (the TTL of a task that
        has none, or a longer one, is shortened; both revisions let a TTL change over a task's life)."""
        kept = max(0, round((now - self.created_at) * 1000)) + retention_ms
        if self.ttl_ms is None or self.ttl_ms > kept:
            self.ttl_ms = kept

    def task(self) -> Task:
        """The task's wire description (extension field names)."""
        return Task(
            task_id=self.task_id,
            status=self.status,
            status_message=self.status_message,
            created_at=_iso(self.created_at),
            last_updated_at=_iso(self.updated_at),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
        )

    def detailed(self) -> DetailedTask:
        """``tasks/get``'s answer: the task with its result, error or pending input requests."""
        return DetailedTask(
            **self.task().model_dump(),
            result=self.result if self.status == "completed" else None,
            error=self.error if self.status == "failed" else None,
            input_requests=dict(self.input_requests) if self.status == "input_required" else None,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-compatible data (for shared stores)."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskRecord:
        """The record :meth:`to_json` gave (also one kept before ``core_form`` had its name: ``legacy``)."""
        if "legacy" in data:  # a record a process of an earlier release put in a shared store
            data = {**data, "core_form": data["legacy"]}
            del data["legacy"]
        return cls(**data)


class TaskStore(Protocol):
    """Where tasks are kept. Every method is atomic; an expired task is as good as unknown."""

    def create(self, record: TaskRecord) -> None:
        """Keep a new task, forgetting the tasks that finished first when full; ``-32603`` when too many run
        (in all, or for the task's owner)."""
        ...

    def get(self, task_id: str) -> TaskRecord | None:
        """A copy of the task, or ``None`` when unknown or expired."""
        ...

    def update(self, task_id: str, change: Callable[[TaskRecord], None]) -> TaskRecord | None:
        """Apply ``change`` to the task atomically; the record as changed, or ``None`` when unknown or expired."""
        ...

    def records(self) -> list[TaskRecord]:
        """Every live task, oldest first."""
        ...

    def sweep(self) -> list[str]:
        """Forget the expired tasks; their ids. Called about every half second while this process runs tasks (a
        shared store renews there this process's hold on them)."""
        ...

    def next_expiry(self) -> float | None:
        """When the next task expires (a time.time() value), or ``None`` when none is kept here."""
        ...


DEFAULT_MAX_TASKS = 10_000
"""How many tasks a store keeps at most, running or finished (the finished go first to make room)."""
DEFAULT_MAX_TASKS_PER_OWNER = 1_000
"""How many tasks of one caller (a task's ``owner``) a store keeps at most, running or finished: that caller's
tasks that finished first are forgotten to make room for its next one."""
DEFAULT_MAX_RUNNING = 1_000
"""How many unfinished tasks a store keeps at most: a new task beyond them is refused (``-32603``)."""
DEFAULT_MAX_RUNNING_PER_OWNER = 100
"""How many unfinished tasks one caller (a task's ``owner``) may have: a new one beyond them is refused."""
DEFAULT_RETENTION_MS = 60 * 60 * 1000
"""How long a store keeps a task once it has finished, at most, whatever its TTL (an hour)."""


def too_many_running(most: int) -> MCPError:
    """The refusal of a task beyond the store's ``max_running``."""
    return MCPError(
        MCP_CODES.INTERNAL_ERROR,
        f"Internal error: too many tasks running (at most {most}); try again once some have ended",
        data={"maxRunningTasks": most},
    )


def too_many_running_for_owner(most: int) -> MCPError:
    """The refusal of a task beyond the store's ``max_running_per_owner`` (for the caller asking)."""
    return MCPError(
        MCP_CODES.INTERNAL_ERROR,
        f"Internal error: too many tasks running for this caller (at most {most}); try again once some have ended",
        data={"maxRunningTasksPerOwner": most},
    )


class MemoryTaskStore:
    """Tasks in this process's memory, each forgotten once its TTL passed; bounded even without TTLs.

    At most ``max_tasks`` are kept: a new task beyond them makes the task
    that finished first be forgotten (a task with no TTL too). At most
    ``max_tasks_per_owner`` of one owner are kept: a new task of an owner at
    that bound makes the owner's own task that finished first be forgotten
    (so one caller's results are never pushed out by another's many tasks
    until the store itself is full). At most ``max_running`` (never more
    than ``max_tasks``) are unfinished, and at most
    ``max_running_per_owner`` (never more than ``max_tasks_per_owner``) of
    one owner: a new task beyond either is refused with ``-32603``. Callers
    that nothing authenticates (owner ``None``) share only the store's own
    bounds. A finished task is forgotten
    ``retention_ms`` after it finished at the latest (its TTL is shortened
    to that, or set when it had none).

    >>> store = MemoryTaskStore(max_tasks=1)
    >>> store.create(TaskRecord("t1", "tool", created_at=0.0, ttl_ms=1000))
    >>> store.sweep(), store.get("t1") is None, len(store)  # long expired
    (['t1'], True, 0)
    """

    def __init__(
        self,
        *,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_running: int = DEFAULT_MAX_RUNNING,
        max_running_per_owner: int = DEFAULT_MAX_RUNNING_PER_OWNER,
        max_tasks_per_owner: int = DEFAULT_MAX_TASKS_PER_OWNER,
        retention_ms: int = DEFAULT_RETENTION_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_tasks = max_tasks
        self.max_running = max_running
        self.max_running_per_owner = max_running_per_owner
        self.max_tasks_per_owner = max_tasks_per_owner
        self.retention_ms = retention_ms
        self._clock = clock
        self._tasks: dict[str, TaskRecord] = {}
        self._running: set[str] = set()
        self._finished: dict[str, None] = {}  # in the order they finished
        self._finished_by_owner: dict[str, dict[str, None]] = {}  # each owner's, in the order they finished
        self._expiry: list[tuple[float, str]] = []  # tasks with a TTL (and some already forgotten)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._tasks)

    def _sweep(self) -> list[str]:
        now = self._clock()
        gone: list[str] = []
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            if self._forget(task_id):  # not forgotten already to make room
                gone.append(task_id)
        return gone

    def _forget(self, task_id: str) -> bool:
        record = self._tasks.pop(task_id, None)
        if record is None:
            return False
        self._running.discard(task_id)
        self._finished.pop(task_id, None)
        self._untrack_owner(record)
        return True

    def _untrack_owner(self, record: TaskRecord) -> None:
        """Take ``record`` out of its owner's finished tasks (the owner's entry goes with its last one)."""
        owner = record.owner
        if owner is None or owner not in self._finished_by_owner:
            return
        mine = self._finished_by_owner[owner]
        mine.pop(record.task_id, None)
        if not mine:
            del self._finished_by_owner[owner]

    def _track(self, record: TaskRecord) -> None:
        """Note whether ``record`` runs or has finished (a finished task keeps its place in line)."""
        if is_terminal(record.status):
            self._running.discard(record.task_id)
            self._finished[record.task_id] = None
            if record.owner is not None:
                self._finished_by_owner.setdefault(record.owner, {})[record.task_id] = None
        else:
            self._finished.pop(record.task_id, None)
            self._untrack_owner(record)
            self._running.add(record.task_id)

    def sweep(self) -> list[str]:
        """Forget the expired tasks; their ids."""
        with self._lock:
            return self._sweep()

    def next_expiry(self) -> float | None:
        """When the next kept task expires, or ``None`` when none does."""
        with self._lock:
            # Entries of tasks forgotten already (for room, or at a TTL shortened when they finished) go first:
            # the reaper would wake for them for nothing.
            while self._expiry and self._expiry[0][1] not in self._tasks:
                heapq.heappop(self._expiry)
            return self._expiry[0][0] if self._expiry else None

    def create(self, record: TaskRecord) -> None:
        """Keep ``record``, forgetting the tasks that finished first to stay within ``max_tasks`` (and its owner's
        that finished first to stay within ``max_tasks_per_owner``).

        ``-32603`` when ``max_running`` tasks (or ``max_tasks``) are unfinished already, or
        ``max_running_per_owner`` (or ``max_tasks_per_owner``) of its owner's.
        """
        with self._lock:
            self._sweep()
            most = min(self.max_running, self.max_tasks)
            if len(self._running) >= most:
                raise too_many_running(most)
            owner = record.owner
            if owner is not None:  # (counted when asked: at most max_running tasks to look at)
                mine = sum(1 for task_id in self._running if self._tasks[task_id].owner == owner)
                most_mine = min(self.max_running_per_owner, self.max_tasks_per_owner)
                if mine >= most_mine:
                    raise too_many_running_for_owner(most_mine)
                finished = self._finished_by_owner.get(owner, {})
                while mine + len(finished) >= self.max_tasks_per_owner:  # some of the owner's have finished
                    self._forget(next(iter(finished)))
            while len(self._tasks) >= self.max_tasks:  # some have finished: fewer than max_tasks run
                self._forget(next(iter(self._finished)))
            self._tasks[record.task_id] = replace(record)
            self._track(record)
            if record.ttl_ms is not None:
                heapq.heappush(self._expiry, (record.expires_at, record.task_id))
                if len(self._expiry) > 2 * self.max_tasks:  # entries of tasks forgotten to make room
                    self._expiry = [(at, task_id) for at, task_id in self._expiry if task_id in self._tasks]
                    heapq.heapify(self._expiry)

    def get(self, task_id: str) -> TaskRecord | None:
        """A copy of the task, or ``None``."""
        with self._lock:
            self._sweep()
            record = self._tasks.get(task_id)
            return None if record is None else _copy(record)

    def update(self, task_id: str, change: Callable[[TaskRecord], None]) -> TaskRecord | None:
        """Change the task in place; a copy of it as changed, or ``None``. A task that finishes here is kept
        ``retention_ms`` more at the most."""
        with self._lock:
            self._sweep()
            record = self._tasks.get(task_id)
            if record is None:
                return None
            ran = not is_terminal(record.status)
            change(record)
            if ran and is_terminal(record.status):  # finished now: kept retention_ms more at the most
                record.retain(self.retention_ms, self._clock())
                heapq.heappush(self._expiry, (record.expires_at, task_id))  # (an earlier entry finds it gone)
            self._track(record)
            return _copy(record)

    def records(self) -> list[TaskRecord]:
        """Every live task, oldest first."""
        with self._lock:
            self._sweep()
            return sorted((_copy(r) for r in self._tasks.values()), key=lambda r: r.created_at)


def _copy(record: TaskRecord) -> TaskRecord:
    return replace(record, input_requests=dict(record.input_requests), answers=dict(record.answers))
