"""Tasks kept in Redis, so that any worker answers for any task and a task outlives the connection that began it.

An app whose backend is a :class:`~mcp_sync.server.http.redis_backend.RedisBackend`
keeps its server's tasks (see :mod:`mcp_sync.server.tasks`) in that Redis,
with the backend's connection and key prefix: one key per task,
``<prefix>:task:<id>``, holding the task's record as JSON and expiring at the
task's TTL (Redis forgets it then: nothing to sweep). A task runs in the
process that started it; ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
may reach any process: each changes the record in Redis (atomically, with
``WATCH``/``MULTI``), and the running process reads it again at least every
half second while its handler waits for input, and its reaper thread turns a
cancel found there into ``ctx.cancelled``.

A task's status changes (``notifications/tasks``) go out on the backend's
channel like the server's other notifications: a ``subscriptions/listen``
stream open on any process hears those of the tasks it asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..tasks import TaskRecord

if TYPE_CHECKING:
    from ..core import MCPServer
    from .redis_backend import RedisBackend

__all__ = ["RedisTaskStore", "share_tasks"]


class RedisTaskStore:
    """The :class:`~mcp_sync.server.tasks.TaskStore` of the processes sharing ``backend``'s Redis.

    Redis unreachable: :class:`~mcp_sync.server.backend.BackendUnavailable`
    (``-32603``), from the backend's own bounded calls.
    """

    def __init__(self, backend: RedisBackend) -> None:
        self.backend = backend

    def _key(self, task_id: str) -> str:
        return f"{self.backend._prefix()}:task:{task_id}"

    def _client(self) -> Any:
        return self.backend._client

    def create(self, record: TaskRecord) -> None:
        """Keep ``record`` until its TTL passes."""
        expires = None if record.ttl_ms is None else int(record.expires_at * 1000)
        data = json.dumps(record.to_json())
        self.backend._call(self._client().set, self._key(record.task_id), data, nx=True, pxat=expires)

    def get(self, task_id: str) -> TaskRecord | None:
        """The task as kept, or ``None`` (unknown, or expired)."""
        data = self.backend._call(self._client().get, self._key(task_id))
        return None if data is None else TaskRecord.from_json(json.loads(data))

    def update(self, task_id: str, change: Callable[[TaskRecord], None]) -> TaskRecord | None:
        """Apply ``change`` to the task, retried when another process changed it meanwhile."""
        key = self._key(task_id)
        changed: list[TaskRecord | None] = []

        def transaction(pipe: Any) -> None:
            changed.clear()
            data = pipe.get(key)
            if data is None:
                changed.append(None)
                return
            record = TaskRecord.from_json(json.loads(data))
            change(record)
            pipe.multi()
            pipe.set(key, json.dumps(record.to_json()), keepttl=True)
            changed.append(record)

        # redis-py runs the function again whenever another process changed the key meanwhile.
        self.backend._call(self._client().transaction, transaction, key)
        return changed[0]

    def records(self) -> list[TaskRecord]:
        """Every task kept, oldest first."""
        client = self._client()
        keys = self.backend._call(lambda: list(client.scan_iter(match=self._key("*"), count=500)))
        values = self.backend._call(self._client().mget, keys) if keys else []
        records = [TaskRecord.from_json(json.loads(value)) for value in values if value is not None]
        return sorted(records, key=lambda record: record.created_at)

    def sweep(self) -> list[str]:
        """Nothing: Redis forgets an expired task itself."""
        return []

    def next_expiry(self) -> float | None:
        """``None``: Redis expires tasks itself."""
        return None


def share_tasks(server: MCPServer, backend: RedisBackend) -> None:
    """Keep ``server``'s tasks in ``backend``'s Redis, if it has task tools (called by the app)."""
    runner = server.task_runner
    if runner is not None:
        runner.store = RedisTaskStore(backend)
