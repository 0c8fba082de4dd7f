"""MCP over HTTP, the server side: the WSGI app, its sessions, the request checks, and the embedded server.

``app`` (:class:`StreamableHTTPApp`, ``start_http``, ``serve_http``) is the
entry; ``sessions`` routes messages to streams, ``security`` checks
``Host``/``Origin``/``Accept``, ``event_store``
keeps events for resumption and ``wsgi`` is the embedded HTTP/1.1 server
(it imports nothing of MCP and can serve any WSGI app). Bearer tokens and their
verifiers are the server's authorization: :mod:`mcp_sync.server.authorization`.
"""
