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

The models (and the types ``TaskStatus`` and ``TaskSupport``) are defined in
:mod:`~mcp_sync.protocol.task_models` and loaded the first time one is named
here (see :data:`MODELS`); the rules of the extension are here.

>>> from mcp_sync.protocol.tasks import CreateTaskResult, Task
>>> task = Task(task_id="t1", status="working", created_at="2026-01-01T00:00:00Z",
...             last_updated_at="2026-01-01T00:00:00Z", ttl_ms=60000, poll_interval_ms=500)
>>> sorted(CreateTaskResult(**task.model_dump()).to_wire())
['createdAt', 'lastUpdatedAt', 'pollIntervalMs', 'resultType', 'status', 'taskId', 'ttlMs']
>>> core_task(task)["ttl"], is_terminal("cancelled")
(60000, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time the models come from __getattr__, when first looked up
    from .task_models import (
        CancelTaskRequestParams,
        CoreCreateTaskResult,
        CreateTaskResult,
        DetailedTask,
        GetTaskRequestParams,
        ListTasksResult,
        Task,
        TaskExecution,
        TaskMetadata,
        TaskStatus,
        TaskStatusNotificationParams,
        TaskSupport,
        UpdateTaskRequestParams,
    )

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

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""


def is_terminal(status: str) -> bool:
    """Whether a task in ``status`` is finished for good."""
    return status in TERMINAL


NAMED_BY_TASK_ID = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The methods whose HTTP ``Mcp-Name`` header carries ``params.taskId`` (SEP-2663's routing header)."""


def missing_extension_data() -> dict[str, Any]:
    """The ``data`` of a ``-32021`` error that asks for this extension."""
    return {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


# --------------------------------------------------------------------------
# The 2025-11-25 form
# --------------------------------------------------------------------------


def core_task(task: Task) -> dict[str, Any]:
    """``task`` in the 2025-11-25 field names (``ttl``, ``pollInterval``)."""
    wire = task.to_wire()
    wire["ttl"] = wire.pop("ttlMs")
    if "pollIntervalMs" in wire:
        wire["pollInterval"] = wire.pop("pollIntervalMs")
    for key in ("resultType", "result", "error", "inputRequests"):
        wire.pop(key, None)
    return wire


# The name this had before the 2025-11-25 form was called by its revision ("legacy"); still importable.
legacy_task = core_task

MODELS = frozenset(name for name in __all__ if name[0].isupper() and not name.isupper())
"""The wire models and the types of their fields' values (the CamelCase names of ``__all__``), defined in
:mod:`.task_models` and loaded the first time one is named here: a client whose calls are answered at once, or a
server without a task tool, declares none."""


def __getattr__(name: str) -> Any:
    if name == "LegacyCreateTaskResult":  # the old name of CoreCreateTaskResult, still importable
        name = "CoreCreateTaskResult"
    if name not in MODELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import task_models

    value = getattr(task_models, name)
    globals()[name] = value
    return value
