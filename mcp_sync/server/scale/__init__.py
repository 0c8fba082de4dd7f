"""Scale-out: the Redis that shares what the processes serving one server must share.

It implements the seam beside it, :mod:`mcp_sync.server.backend`
(:class:`~mcp_sync.server.backend.Backend`; its default,
:class:`~mcp_sync.server.backend.InProcessBackend`, shares nothing):

- ``redis_backend``: ``RedisBackend``: the ``requestState`` secret, server-wide notifications,
  handshake-era session records;
- ``redis_events``: the resumability event store, SSE streams kept in Redis that any process replays;
- ``redis_tasks``: the server's tasks kept in Redis, so any process answers for any task.

Not HTTP-specific: tasks and notifications use it whatever the transport; the
HTTP app picks a Redis backend with ``backend="redis://..."``::

    from mcp_sync.server.scale.redis_backend import RedisBackend

redis-py is imported only by ``redis_backend``, when a Redis backend is made.
Part of the server layer, under its rule:

May import: ``server``, ``runtime``, ``protocol``.
Must not import: ``client``, ``transports``, ``display``, ``llm``, ``apps``, nor the composition level.
"""
