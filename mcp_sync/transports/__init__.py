"""The transports layer: the carriers of JSON-RPC messages, in memory, over stdio and over HTTP.

- ``memory``: two transports joined in one process, encoding and decoding as on a wire;
- ``stdio``: one message per line over a pair of byte streams, and a server process spoken to that way;
- ``process``: starting a server process, with the standard library alone (a connection starts it first);
- ``http/``: the client side of Streamable HTTP and of the 2024-11-05 HTTP+SSE transport (see its docstring).

A carrier never reaches for the client or the server: the client's factories
(:mod:`mcp_sync.client.factories`) join a transport to a client, and the
server hosts itself (``server/stdio.py``, ``server/http/``).

May import: ``transports``, ``runtime``, ``protocol``.
Must not import: ``display``, ``client``, ``server``, ``llm``, ``apps``, nor the composition level.
"""
