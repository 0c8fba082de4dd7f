"""The client side of MCP over HTTP: Streamable HTTP (``streamable``) and 2024-11-05 HTTP+SSE (``sse``)."""
