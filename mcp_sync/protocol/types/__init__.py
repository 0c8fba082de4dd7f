"""Pydantic models for every MCP wire shape.

One model per definition of the official JSON schema, named as in the schema
(``Tool``, ``CallToolRequestParams``, ``CallToolResult``, ...). The models
cover the union of the revisions that mcp_sync speaks (2024-11-05 to
2025-11-25 and 2026-07-28); which fields a given peer gets is decided where
messages are sent, not here.

Conventions shared by all models:

* attributes are snake_case in Python and camelCase on the wire
  (``Tool(input_schema=...)`` serialises as ``inputSchema``); both spellings
  are accepted when parsing;
* unknown fields are kept and serialised back unchanged;
* optional fields default to ``None`` and are not emitted while ``None``;
  fields that the schema fixes to one value (``type``, ``method``,
  ``jsonrpc``, error ``code``) default to it;
* ``_meta`` is the attribute ``meta``, a plain dict (``RequestMetaObject``
  and its siblings give a typed view of the reserved keys);
* unions of the schema (``ContentBlock``, ``ResourceContents``,
  ``PrimitiveSchemaDefinition``, ``InputRequests``, ...) are type aliases,
  usable as field types or with ``pydantic.TypeAdapter``.

The per-method envelopes (``CallToolRequest``, ``ProgressNotification``,
...), the typed error responses and the unions of messages by direction are
in :mod:`mcp_sync.protocol.messages`.

The models live in modules by feature, as the MCP specification groups
them; import them from here:

- ``base``: JSON-RPC envelopes and ids, request and result bases, identity, capabilities, lifecycle;
- ``content``: content blocks, resources and resource links, tools and tool results;
- ``client_features``: what a server asks of its client: sampling, roots, elicitation, input requests;
- ``server_features``: the params and results of resources, prompts and tools;
- ``utilities``: completion, logging, progress, cancellation and the 2026-07-28 subscriptions.

The modules' annotations are evaluated as the classes are made (no
``from __future__ import annotations``): pydantic then has no strings to
compile and evaluate, which makes importing these models about a fifth
cheaper. Forward references are quoted.

The experimental *tasks* of 2025-11-25 are not modelled; their fields pass
through as unknown fields.

>>> from mcp_sync.types import Tool
>>> tool = Tool(name="echo", input_schema={"type": "object"})
>>> tool.to_wire()
{'name': 'echo', 'inputSchema': {'type': 'object'}}

Part of the protocol layer, under its rule:

May import: ``protocol``.
Must not import: ``runtime``, ``transports``, ``display``, ``client``, ``server``, ``llm``, ``apps``,
nor the composition level.
"""

from .base import *  # noqa: F403
from .client_features import *  # noqa: F403
from .content import *  # noqa: F403
from .server_features import *  # noqa: F403
from .utilities import *  # noqa: F403


def _adopt() -> None:
    """Give each model this package as its module: ``mcp_sync.protocol.types.Tool``, wherever it is defined.

    What shows in signatures, reprs and pickles is the path users import
    from, not a file's name that may move; every name is importable here.
    """
    for value in list(globals().values()):
        if isinstance(value, type) and value.__module__.startswith(__name__ + "."):
            value.__module__ = __name__


_adopt()
