"""Tasks kept in Redis, so that any worker answers for any task and a task outlives the connection that began it.

An app whose backend is a :class:`~mcp_sync.server.scale.redis_backend.RedisBackend`
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

The store is bounded as the in-memory one is, across all its processes: it
keeps at most ``max_tasks`` tasks (those that finished first are deleted to
make room, tasks without TTL too), at most ``max_tasks_per_owner`` of one
owner's (the owner's that finished first make room), a finished task
``retention_ms`` at most, and refuses a new task (``-32603``) while
``max_running`` are unfinished, or ``max_running_per_owner`` of its owner's.
Sorted sets beside the records keep the count (``<prefix>:tasks:running``,
``:finished`` and ``:expiry``, ``<prefix>:tasks:owner:<owner>`` for each
owner's unfinished tasks, scored by their expiry, and
``<prefix>:tasks:owner-finished:<owner>`` for its finished ones, with the
hash ``<prefix>:tasks:owners`` naming each finished task's owner); a new
task is counted and kept in one Lua script,
so two processes never both take the last place. A task left unfinished by
a process that died counts until its TTL passes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol.tasks import is_terminal
from ..tasks import (
    DEFAULT_MAX_RUNNING,
    DEFAULT_MAX_RUNNING_PER_OWNER,
    DEFAULT_MAX_TASKS,
    DEFAULT_MAX_TASKS_PER_OWNER,
    DEFAULT_RETENTION_MS,
    TaskRecord,
    too_many_running,
    too_many_running_for_owner,
)

if TYPE_CHECKING:
    from ..core import MCPServer
    from .redis_backend import RedisBackend

__all__ = ["RedisTaskStore", "share_tasks"]

# KEYS: the running, finished and expiry sorted sets, the new task's key, its owner's sets of unfinished and of
# finished tasks ("" for no owner), the hash of finished tasks' owners.
# ARGV: now (ms), max tasks, max running, task id, created (ms), expiry (ms, "" for none), record, tasks' key prefix,
# max running per owner, max tasks per owner, the key prefix of owners' sets of finished tasks.
# Returns 0 once kept, else {1, cap} when the store's running cap refused it, {2, cap} when its owner's did.
_CREATE = """
local function forget_owner(id)
  local owner = redis.call('HGET', KEYS[7], id)
  if owner then
    redis.call('ZREM', ARGV[11] .. owner, id)
    redis.call('HDEL', KEYS[7], id)
  end
end
local function forget_finished(id)
  redis.call('DEL', ARGV[8] .. id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  forget_owner(id)
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(gone) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  forget_owner(id)
end
local most = math.min(tonumber(ARGV[2]), tonumber(ARGV[3]))
if redis.call('ZCARD', KEYS[1]) >= most then
  return {1, most}
end
if KEYS[5] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[1])
  local mine = redis.call('ZCARD', KEYS[5])
  if mine >= tonumber(ARGV[9]) then
    return {2, tonumber(ARGV[9])}
  end
  while mine + redis.call('ZCARD', KEYS[6]) >= tonumber(ARGV[10]) do
    forget_finished(redis.call('ZPOPMIN', KEYS[6])[1])
  end
end
while redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) do
  forget_finished(redis.call('ZPOPMIN', KEYS[2])[1])
end
if ARGV[6] == '' then
  redis.call('SET', KEYS[4], ARGV[7], 'NX')
else
  redis.call('SET', KEYS[4], ARGV[7], 'NX', 'PXAT', ARGV[6])
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[4])
end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[4])
if KEYS[5] ~= '' then
  redis.call('ZADD', KEYS[5], ARGV[6] == '' and '+inf' or ARGV[6], ARGV[4])
end
return 0
"""


class RedisTaskStore:
    """The :class:`~mcp_sync.server.tasks.TaskStore` of the processes sharing ``backend``'s Redis.

    ``max_tasks``, ``max_running``, ``max_running_per_owner``,
    ``max_tasks_per_owner`` and ``retention_ms`` bound it as they do a
    :class:`~mcp_sync.server.tasks.MemoryTaskStore` (every process sharing
    it should give the same). Redis unreachable:
    :class:`~mcp_sync.server.backend.BackendUnavailable` (``-32603``), from
    the backend's own bounded calls.
    """

    def __init__(
        self,
        backend: RedisBackend,
        *,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_running: int = DEFAULT_MAX_RUNNING,
        max_running_per_owner: int = DEFAULT_MAX_RUNNING_PER_OWNER,
        max_tasks_per_owner: int = DEFAULT_MAX_TASKS_PER_OWNER,
        retention_ms: int = DEFAULT_RETENTION_MS,
    ) -> None:
        self.backend = backend
        self.max_tasks = max_tasks
        self.max_running = max_running
        self.max_running_per_owner = max_running_per_owner
        self.max_tasks_per_owner = max_tasks_per_owner
        self.retention_ms = retention_ms
        self._create = self._client().register_script(_CREATE)  # sent to Redis at its first use

    def _key(self, task_id: str) -> str:
        return f"{self.backend.key_prefix}:task:{task_id}"

    def _set(self, name: str) -> str:
        return f"{self.backend.key_prefix}:tasks:{name}"

    def _owned(self, owner: str | None, finished: bool = False) -> str:
        """The key of ``owner``'s set of unfinished (or ``finished``) tasks ("" for no owner: nothing to count)."""
        if owner is None:
            return ""
        return self._set(f"owner-finished:{owner}" if finished else f"owner:{owner}")

    def _client(self) -> Any:
        return self.backend.redis

    def create(self, record: TaskRecord) -> None:
        """Keep ``record`` until its TTL passes (or it makes room, once finished); ``-32603`` when too many run
        (in all, or for its owner)."""
        expires = "" if record.ttl_ms is None else int(record.expires_at * 1000)
        keys = [self._set("running"), self._set("finished"), self._set("expiry"), self._key(record.task_id)]
        keys += [self._owned(record.owner), self._owned(record.owner, finished=True), self._set("owners")]
        args = [
            int(time.time() * 1000),
            self.max_tasks,
            self.max_running,
            record.task_id,
            int(record.created_at * 1000),
            expires,
            json.dumps(record.to_json()),
            self._key(""),
            min(self.max_running_per_owner, self.max_tasks_per_owner),
            self.max_tasks_per_owner,
            self._set("owner-finished:"),
        ]
        refused = self.backend.call(self._create, keys=keys, args=args)
        if refused:
            which, most = refused
            raise too_many_running(int(most)) if which == 1 else too_many_running_for_owner(int(most))

    def get(self, task_id: str) -> TaskRecord | None:
        """The task as kept, or ``None`` (unknown, or expired)."""
        data = self.backend.call(self._client().get, self._key(task_id))
        return None if data is None else TaskRecord.from_json(json.loads(data))

    def update(self, task_id: str, change: Callable[[TaskRecord], None]) -> TaskRecord | None:
        """Apply ``change`` to the task, retried when another process changed it meanwhile; a task that finishes
        here is kept ``retention_ms`` more at the most."""
        key = self._key(task_id)
        changed: list[TaskRecord | None] = []

        def transaction(pipe: Any) -> None:
            changed.clear()
            data = pipe.get(key)
            if data is None:
                changed.append(None)
                return
            record = TaskRecord.from_json(json.loads(data))
            ran = not is_terminal(record.status)
            change(record)
            pipe.multi()
            if ran and is_terminal(record.status):  # finished: no longer counted as running, and may make room
                now = time.time()
                record.retain(self.retention_ms, now)
                expires = int(record.expires_at * 1000)
                pipe.set(key, json.dumps(record.to_json()), pxat=expires)
                pipe.zadd(self._set("expiry"), {task_id: expires})
                pipe.zrem(self._set("running"), task_id)
                pipe.zadd(self._set("finished"), {task_id: now}, nx=True)  # in the order they finish
                if record.owner is not None:  # counted among its owner's finished tasks, which make room for its next
                    pipe.zrem(self._owned(record.owner), task_id)
                    pipe.zadd(self._owned(record.owner, finished=True), {task_id: now}, nx=True)
                    pipe.hset(self._set("owners"), task_id, record.owner)
            else:
                pipe.set(key, json.dumps(record.to_json()), keepttl=True)
            changed.append(record)

        # redis-py runs the function again whenever another process changed the key meanwhile.
        self.backend.call(self._client().transaction, transaction, key)
        return changed[0]

    def records(self) -> list[TaskRecord]:
        """Every task kept, oldest first."""
        client = self._client()
        keys = self.backend.call(lambda: list(client.scan_iter(match=self._key("*"), count=500)))
        values = self.backend.call(self._client().mget, keys) if keys else []
        records = [TaskRecord.from_json(json.loads(value)) for value in values if value is not None]
        return sorted(records, key=lambda record: record.created_at)

    def sweep(self) -> list[str]:
        """Nothing: Redis forgets an expired task itself."""
        return []

    def next_expiry(self) -> float | None:
        """``None``: Redis expires tasks itself."""
        return None


def share_tasks(server: MCPServer, backend: RedisBackend) -> None:
    """Keep ``server``'s tasks in ``backend``'s Redis, if it has task tools (called by the app).

    The Redis store takes the bounds of the store it replaces: set them with
    ``server.tasks.store = MemoryTaskStore(max_tasks=..., max_running=...,
    max_running_per_owner=..., max_tasks_per_owner=..., retention_ms=...)``.
    """
    runner = server.task_runner
    if runner is not None:
        replaced = runner.store  # (a store of the user's own may have no bounds: the defaults then)
        runner.store = RedisTaskStore(
            backend,
            max_tasks=getattr(replaced, "max_tasks", DEFAULT_MAX_TASKS),
            max_running=getattr(replaced, "max_running", DEFAULT_MAX_RUNNING),
            max_running_per_owner=getattr(replaced, "max_running_per_owner", DEFAULT_MAX_RUNNING_PER_OWNER),
            max_tasks_per_owner=getattr(replaced, "max_tasks_per_owner", DEFAULT_MAX_TASKS_PER_OWNER),
            retention_ms=getattr(replaced, "retention_ms", DEFAULT_RETENTION_MS),
        )
