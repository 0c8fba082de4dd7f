"""The runtime layer: threads and request correlation under both roles; it knows JSON-RPC, not MCP's methods.

- ``transport``: the ``Transport`` interface and the ``BaseTransport`` every carrier builds on;
- ``dispatcher``: the JSON-RPC dispatcher: ids, pending futures, the handler pool, cancellation, progress;
- ``request_context``: an incoming request as its handler sees it, and which request a thread serves;
- ``cancellation``: a cancel event that wakes its waiters instead of being polled;
- ``deadline``: ``Deadline``, the one way a bounded wait knows how long it has left;
- ``workers``: the elastic thread pool: a task never waits for a busy thread, and idle threads end;
- ``http``: outbound HTTP for both roles (closable sessions, one bounded request), nothing of MCP;
- ``events``: the lifecycle events and the ``EventBus`` that delivers them;
- ``telemetry`` and ``tracing``: OpenTelemetry metrics and spans of requests and notifications;
- ``imports``: the first import of the client or the server, without the garbage collector walking it.

May import: ``runtime``, ``protocol``.
Must not import: ``transports``, ``display``, ``client``, ``server``, ``llm``, ``apps``, nor the composition level.
"""
