"""The protocol layer: wire models, errors, JSON-RPC, revisions and era rules, headers, schemas.

Each rule both roles follow lives here once: ``types`` (the wire models, a
package by feature), ``errors`` (codes, exceptions, validation errors as
``MCPError``), ``grammar`` (the HTTP token, quoted-string and auth-param
rules), ``oauth`` (well-known URLs, ``WWW-Authenticate`` challenges, bearer
credentials, scopes, loopback), ``headers`` (the ``Mcp-*`` header codec).

Layer rule: pure. Only pydantic and the standard library; no I/O, no
threads, and no import from any other part of mcp_sync.
"""
