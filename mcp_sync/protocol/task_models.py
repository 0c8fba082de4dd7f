"""The models of tasks on the wire (see :mod:`mcp_sync.protocol.tasks`, whose names they are).

Loaded the first time one of them is looked up in :mod:`mcp_sync.protocol.tasks`: a program that never meets a task
(a client whose calls are answered at once, a server without a task tool) declares none of them.

Part of the protocol layer, under its rule:

May import: ``protocol``.
Must not import: ``runtime``, ``transports``, ``display``, ``client``, ``server``, ``llm``, ``apps``,
nor the composition level.

Annotations are evaluated as the classes are made (no ``from __future__ import annotations``), as in
:mod:`mcp_sync.protocol.types`.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Field

from .types import NotificationParams, RequestParams, Result, WireModel
from .types.lazy import Later

if TYPE_CHECKING:
    from .types import InputRequests

__all__ = [
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
]

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""Where a task stands; the last three are terminal (see :data:`~mcp_sync.protocol.tasks.TERMINAL`)."""
TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]
"""Whether a tool runs as a task: never (the default), when the client can follow one, or only as one."""


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
