"""MCP over HTTP, the server side: a WSGI app that routes each request to the part serving it.

- ``app``: :class:`StreamableHTTPApp`, the router: the checks every request
  passes (``Host``, ``Origin``, CORS preflight, bearer token), then the
  endpoint's POST, GET and DELETE, handshake-era sessions, and the
  requests of stateless mode;
- ``wire``: the request and answer in WSGI terms, and the answers given alike
  everywhere (JSON errors, body reading, refusals);
- ``answers``: a POSTed request's answer: one JSON body, or an SSE stream of
  what its handler sends first;
- ``lending``: a request served on the thread that brought it, streamed by a
  handler thread only if it turns into a stream;
- ``stateless_era``: which POSTs are 2026-07-28, and their header checks;
- ``stateless_host``: serving them, each by one kernel call with nothing
  built for it (no session, dispatcher or transport per request);
- ``batches``: JSON-RPC batches (2025-03-26 only);
- ``legacy_sse``: the 2024-11-05 HTTP+SSE transport;
- ``bearer``: the bearer-token gate and the Protected Resource Metadata;
- ``shared_sessions``: handshake-era sessions shared by processes through the backend;
- ``sessions``: each session's streams and the registry of sessions;
- ``security``: ``Host``/``Origin``/``Accept`` checks; ``cors``: CORS for browser pages;
- ``event_store``: events kept for resumption;
- ``hosting``: the app's stop when a gunicorn worker stops;
- ``embedded``: :func:`start_http`, :func:`serve_http` and :class:`RunningHTTPServer`
  on ``wsgi``, the embedded HTTP/1.1 server (it imports nothing of MCP and can
  serve any WSGI app).

Bearer tokens and their verifiers are the server's authorization
(:mod:`mcp_sync.server.authorization`); Redis is :mod:`mcp_sync.server.scale`.
Part of the server layer, under its rule (the HTTP server is its own carrier:
it needs no transport of the transports layer):

May import: ``server``, ``runtime``, ``protocol``.
Must not import: ``client``, ``transports``, ``display``, ``llm``, ``apps``, nor the composition level.
"""
