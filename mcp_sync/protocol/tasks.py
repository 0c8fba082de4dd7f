"""Tasks on the wire: the extension ``io.modelcontextprotocol/tasks`` (SEP-2663) and the 2025-11-25 form.

A task is a request the server chose to run asynchronously. In the
extension (any revision whose client declares it, per request or at
``initialize``) the server alone decides: a ``tools/call`` may answer with a
flat :class:`CreateTaskResult` (``resultType: "task"``, the :class:`Task`
fields at the top level), which the client then follows with ``tasks/get``
(a :class:`DetailedTask`: the result or error inlined once terminal, the
pending ``inputRequests`` while ``input_required``), answers with
``tasks/update`` and stops with ``tasks/cancel``. ``tasks/result`` and
``tasks/list`` do not exist there (``-32601``).

The 2025-11-25 form is client-directed: the request carries
``params.task`` (:class:`TaskMetadata`), the answer nests the task
(:class:`CoreCreateTaskResult`), durations are ``ttl``/``pollInterval``,
and the result is fetched with ``tasks/result``.

>>> task = Task(task_id="t1", status="working", created_at="2026-01-01T00:00:00Z",
...             last_updated_at="2026-01-01T00:00:00Z", ttl_ms=60000, poll_interval_ms=500)
>>> sorted(CreateTaskResult(**task.model_dump()).to_wire())
['createdAt', 'lastUpdatedAt', 'pollIntervalMs', 'resultType', 'status', 'taskId', 'ttlMs']
>>> core_task(task)["ttl"], is_terminal("cancelled")
(60000, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Field

from .types import NotificationParams, RequestParams, Result, WireModel
from .types.lazy import Later

if TYPE_CHECKING:
    from .types import InputRequests

__all__ = [
    "EXTENSION",
    "NAMED_BY_TASK_ID",
    "RELATED_TASK",
    "TERMINAL",
    "CancelTaskRequestParams",
    "CoreCreateTaskResult",
    "CreateTaskResult",
    "DetailedTask",
    "GetTaskRequestParams",
    "ListTasksResult",
    "Task",
    "TaskExecution",
    "TaskMetadata",
    "TaskStatus",
    "TaskStatusNotificationParams",
    "TaskSupport",
    "UpdateTaskRequestParams",
    "core_task",
    "is_terminal",
    "missing_extension_data",
]

EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier under ``capabilities.extensions``."""
RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The 2025-11-25 ``_meta`` key tying a message to its task (never sent on an extension task's result)."""

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""Where a task stands; the last three are terminal."""
TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]
"""Whether a tool runs as a task: never (the default), when the client can follow one, or only as one."""
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""


def is_terminal(status: str) -> bool:
    """Whether a task in ``status`` is finished for good."""
    return status in TERMINAL


def _input_requests() -> Any:
    from .types import InputRequests

    return InputRequests | None


class Task(WireModel):
    """What a task is, in the extension's field names (durations in integer milliseconds)."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire = super().to_wire()
        wire.setdefault("ttlMs", None)  # null means "unlimited": the field itself is required
        return wire


class CreateTaskResult(Task):
    """A request's answer when the server runs it as a task: a flat ``Result & Task``."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    result_type: Literal["task"] = "task"


class DetailedTask(Task):
    """``tasks/get``'s answer (and ``notifications/tasks``' params): the task and what its status carries.

    ``result`` when ``completed`` (the original request's result),
    ``error`` (a JSON-RPC error object) when ``failed``, ``input_requests``
    when ``input_required``.
    """

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    result_type: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    if TYPE_CHECKING:
        input_requests: InputRequests | None = None
    else:  # the questions' models, loaded when this model is first built (see types.CLIENT_FEATURES)
        input_requests: Annotated[Any, Later(_input_requests)] = None


class GetTaskRequestParams(RequestParams):
    """Parameters of ``tasks/get`` and, in the 2025-11-25 form, ``tasks/result``."""

    task_id: str


class CancelTaskRequestParams(RequestParams):
    """Parameters of ``tasks/cancel``."""

    task_id: str


class UpdateTaskRequestParams(RequestParams):
    """Parameters of ``tasks/update``: answers to some of the task's pending input requests.

    The answers are kept as sent (each is checked against the request it
    answers when the handler reads it).
    """

    task_id: str
    input_responses: dict[str, Any]


class TaskStatusNotificationParams(DetailedTask, NotificationParams):
    """Parameters of ``notifications/tasks`` (extension) and ``notifications/tasks/status`` (2025-11-25)."""


NAMED_BY_TASK_ID = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The methods whose HTTP ``Mcp-Name`` header carries ``params.taskId`` (SEP-2663's routing header)."""


def missing_extension_data() -> dict[str, Any]:
    """The ``data`` of a ``-32021`` error that asks for this extension."""
    return {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


# --------------------------------------------------------------------------
# The 2025-11-25 form
# --------------------------------------------------------------------------


class TaskMetadata(WireModel):
    """``params.task`` of a 2025-11-25 request that asks to run as a task: the retention it asks for."""

    ttl: int | None = None


class TaskExecution(WireModel):
    """A tool's ``execution`` (2025-11-25): whether it runs as a task."""

    task_support: TaskSupport | None = None


class CoreCreateTaskResult(Result):
    """A 2025-11-25 request's answer when it runs as a task: the task nested under ``task``."""

    task: dict[str, Any]


class ListTasksResult(Result):
    """``tasks/list``'s answer (2025-11-25): a page of tasks."""

    tasks: list[dict[str, Any]]
    next_cursor: str | None = None


def core_task(task: Task) -> dict[str, Any]:
    """``task`` in the 2025-11-25 field names (``ttl``, ``pollInterval``)."""
    wire = task.to_wire()
    wire["ttl"] = wire.pop("ttlMs")
    if "pollIntervalMs" in wire:
        wire["pollInterval"] = wire.pop("pollIntervalMs")
    for key in ("resultType", "result", "error", "inputRequests"):
        wire.pop(key, None)
    return wire


# The names these had before the 2025-11-25 form was called by its revision ("legacy"); still importable.
LegacyCreateTaskResult = CoreCreateTaskResult
legacy_task = core_task
