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
so two processes never both take the last place.

A process that runs tasks holds a lease on them (``<prefix>:tasks:runner:<id>``,
renewed about every half second while it runs any, lasting ``lease_ms``), and
the hash ``<prefix>:tasks:runners`` names the process running each unfinished
task. A process killed before its tasks finished renews nothing: once its
lease has run out, the next process that reads one of its tasks
(``tasks/get``, ``tasks/result``, ``tasks/list``, a listen stream asking for it)
ends the task as failed and tells its listeners, so that its client learns
of it then, not at its TTL, and it no longer counts as running. A process
that still runs (stalled past its lease, say) stops the task's handler when
it reads the record again, and the task stays failed.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol.tasks import is_terminal
from ..task_store import (
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

__all__ = ["DEFAULT_LEASE_MS", "RedisTaskStore", "share_tasks"]

DEFAULT_LEASE_MS = 30_000
"""How long a process's lease on the tasks it runs lasts unless renewed (about every half second while it runs
any): once it has run out, the next process that reads one of them ends it as failed."""

# KEYS: the running, finished and expiry sorted sets, the new task's key, its owner's sets of unfinished and of
# finished tasks ("" for no owner), the hash of finished tasks' owners, the hash of unfinished tasks' runners, this
# process's lease.
# ARGV: now (ms), max tasks, max running, task id, created (ms), expiry (ms, "" for none), record, tasks' key prefix,
# max running per owner, max tasks per owner, the key prefix of owners' sets of finished tasks, this process's
# runner id, its lease (ms).
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
  redis.call('HDEL', KEYS[8], id)
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
redis.call('HSET', KEYS[8], ARGV[4], ARGV[12])
redis.call('SET', KEYS[9], '1', 'PX', ARGV[13])
return 0
"""

# KEYS: the hash of unfinished tasks' runners.
# ARGV: this process's runner id, the key prefix of runners' leases, the tasks' key prefix, then task ids.
# Returns, for each task id, {its record or nil, 1 when another process runs it and that process's lease ran out}.
_READ = """
local found = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local record = redis.call('GET', ARGV[3] .. id)
  local stopped = 0
  if record then
    local runner = redis.call('HGET', KEYS[1], id)
    if runner and runner ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. runner) == 0 then
      stopped = 1
    end
  end
  found[#found + 1] = {record, stopped}
end
return found
"""


class RedisTaskStore:
    """The :class:`~mcp_sync.server.task_store.TaskStore` of the processes sharing ``backend``'s Redis.

    ``max_tasks``, ``max_running``, ``max_running_per_owner``,
    ``max_tasks_per_owner`` and ``retention_ms`` bound it as they do a
    :class:`~mcp_sync.server.task_store.MemoryTaskStore` (every process sharing
    it should give the same). Redis unreachable:
    :class:`~mcp_sync.server.backend.BackendUnavailable` (``-32603``), from
    the backend's own bounded calls.

    The tasks this store creates are this process's (``runner_id``), under a
    lease of ``lease_ms`` that :meth:`sweep` renews. Reading a task whose
    process let its lease run out calls ``on_stopped`` with the task's id,
    which ends it (:func:`share_tasks` gives the task runner's
    :meth:`~mcp_sync.server.tasks.TaskRunner.end_stopped`) and returns it as
    it is then; without ``on_stopped`` such a task stays as it is until its TTL.
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
        lease_ms: int = DEFAULT_LEASE_MS,
        on_stopped: Callable[[str], TaskRecord | None] | None = None,
    ) -> None:
        self.backend = backend
        self.max_tasks = max_tasks
        self.max_running = max_running
        self.max_running_per_owner = max_running_per_owner
        self.max_tasks_per_owner = max_tasks_per_owner
        self.retention_ms = retention_ms
        self.lease_ms = lease_ms
        self.on_stopped = on_stopped
        self.runner_id = uuid.uuid4().hex
        """This process's name in the hash of runners (each store is one process's)."""
        self._create = self._client().register_script(_CREATE)  # sent to Redis at its first use
        self._read = self._client().register_script(_READ)

    def _key(self, task_id: str) -> str:
        return f"{self.backend.key_prefix}:task:{task_id}"

    def _set(self, name: str) -> str:
        return f"{self.backend.key_prefix}:tasks:{name}"

    def _lease(self, runner_id: str) -> str:
        return self._set(f"runner:{runner_id}")

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
        keys += [self._set("runners"), self._lease(self.runner_id)]
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
            self.runner_id,
            self.lease_ms,
        ]
        refused = self.backend.call(self._create, keys=keys, args=args)
        if refused:
            which, most = refused
            raise too_many_running(int(most)) if which == 1 else too_many_running_for_owner(int(most))

    def get(self, task_id: str) -> TaskRecord | None:
        """The task as kept, or ``None`` (unknown, or expired); ended first if its process stopped."""
        found = self._kept([task_id])
        return found[0] if found else None

    def _kept(self, task_ids: list[str]) -> list[TaskRecord]:
        """The tasks kept among ``task_ids``, in their order; each whose process let its lease run out is
        ended by ``on_stopped`` first (one script reads them all; ending one is an update of its own)."""
        args = [self.runner_id, self._lease(""), self._key(""), *task_ids]
        found = self.backend.call(self._read, keys=[self._set("runners")], args=args)
        records = []
        for task_id, (data, stopped) in zip(task_ids, found, strict=True):
            if data is None:
                continue
            record = TaskRecord.from_json(json.loads(data))
            if stopped and self.on_stopped is not None and not is_terminal(record.status):
                # (ended, or gone meanwhile: then the record as read, which expires with the task)
                record = self.on_stopped(task_id) or record
            records.append(record)
        return records

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
                pipe.hdel(self._set("runners"), task_id)
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
        """Every task kept, oldest first (each whose process stopped ended first, as by :meth:`get`)."""
        client = self._client()
        keys = self.backend.call(lambda: list(client.scan_iter(match=self._key("*"), count=500)))
        prefix = len(self._key(""))
        records = self._kept([key.decode()[prefix:] for key in keys]) if keys else []
        return sorted(records, key=lambda record: record.created_at)

    def sweep(self) -> list[str]:
        """Renew this process's lease on the tasks it runs (called while it runs any); no ids: Redis forgets an
        expired task itself."""
        self.backend.call(self._client().set, self._lease(self.runner_id), b"1", px=self.lease_ms)
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
            on_stopped=runner.end_stopped,
        )
