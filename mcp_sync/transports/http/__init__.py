"""The client side of MCP over HTTP: the Streamable HTTP transport and the 2024-11-05 HTTP+SSE one.

- ``streamable``: ``StreamableHTTPClientTransport``, a POST per message answered with JSON or an SSE stream;
- ``sse``: ``SSEClientTransport``, the older transport of one GET event stream and POSTs to its endpoint;
- ``_common``: what both share: timeouts, sending, SSE parsing, HTTP failures turned into answers;
- ``cursor``: where a client is in an SSE stream, and when it resumes a broken one;
- ``turns``: when a caller that read its own answer lets another thread have the interpreter lock.

The HTTP sessions and the bounded request are :mod:`mcp_sync.runtime.http`'s,
shared with the OAuth client and the server's token verifiers.

Part of the transports layer, under its rule:

May import: ``transports``, ``runtime``, ``protocol``.
Must not import: ``display``, ``client``, ``server``, ``llm``, ``apps``, nor the composition level.
"""
