"""Scale-out: the Redis that shares what the processes serving one server must share.

It implements the seam beside it, :mod:`mcp_sync.server.backend`
(:class:`~mcp_sync.server.backend.Backend`; its default,
:class:`~mcp_sync.server.backend.InProcessBackend`, shares nothing).
``redis_backend`` is the backend (the ``requestState`` secret, server-wide
notifications, handshake-era session records), ``redis_events`` keeps
resumable SSE streams in Redis and ``redis_tasks`` the server's tasks. Not
HTTP-specific: tasks and notifications use it whatever the transport; the
HTTP app picks a Redis backend with ``backend="redis://..."``::

    from mcp_sync.server.scale.redis_backend import RedisBackend

Layer rule: part of the server layer (it may import ``server``, ``runtime``
and ``protocol``); it imports no transport. redis-py is imported only by
``redis_backend``, when a Redis backend is made.
"""
