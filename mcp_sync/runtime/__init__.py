"""The runtime layer: threads and correlation under both roles.

``transport`` (the Transport protocol and BaseTransport), ``dispatcher``
(JSON-RPC ids, pending futures, the handler pool, cancellation, progress),
``request_context`` (an incoming request as its handler sees it, and which
request the running thread serves), ``workers`` (the elastic thread pool),
``events`` and ``telemetry``.

Layer rule: imports ``protocol`` only; knows JSON-RPC, not MCP's methods.
"""
