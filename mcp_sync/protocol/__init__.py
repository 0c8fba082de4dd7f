"""The protocol layer: wire models, errors, JSON-RPC, revisions and era rules, headers, schemas.

Layer rule: pure. Only pydantic and the standard library; no I/O, no
threads, and no import from any other part of mcp_sync.
"""
