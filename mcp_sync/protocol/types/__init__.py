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

- ``base``: JSON-RPC envelopes and ids, request and result bases, identity, capabilities, lifecycle, progress
  and cancellation;
- ``tool``: the declaration of a tool (``Tool``, ``ToolAnnotations``);
- ``content``: content blocks, resources and resource links, tool results, prompts, and the pages of the four
  lists;
- ``client_features``: what a server asks of its client: sampling, roots, elicitation, input requests;
- ``server_features``: reading and subscribing to resources, getting prompts, calling tools;
- ``utilities``: completion, logging and the 2026-07-28 subscriptions;
- ``meta``: typed views of the 2026-07-28 reserved ``_meta`` keys.

All but the first two are loaded the first time one of their names is looked up here (see :data:`ON_DEMAND`): a
program that only lists and calls tools, on either side, declares none of the last four's models, and a tool
server declares no ``content`` model until it lists its tools or answers a call.

The modules' annotations are evaluated as the classes are made (no
``from __future__ import annotations``): pydantic then has no strings to
compile and evaluate, which makes importing these models about a fifth
cheaper. Forward references are quoted. Each module ends with
:func:`~mcp_sync.protocol.types.lazy.adopt`, which gives its classes this
package as their module.

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

import importlib
import sys
from typing import TYPE_CHECKING, Any

from .base import *  # noqa: F403
from .tool import *  # noqa: F403

if TYPE_CHECKING:  # type checkers see every name; at run time these come from __getattr__
    from .client_features import *  # noqa: F403
    from .content import *  # noqa: F403
    from .meta import *  # noqa: F403
    from .server_features import *  # noqa: F403
    from .utilities import *  # noqa: F403

CONTENT = frozenset(
    {
        "Annotations",
        "AudioContent",
        "BaseResourceContents",
        "BlobResourceContents",
        "CallToolResult",
        "ContentBlock",
        "EmbeddedResource",
        "ImageContent",
        "ListPromptsResult",
        "ListResourceTemplatesResult",
        "ListResourcesResult",
        "ListToolsResult",
        "Prompt",
        "PromptArgument",
        "Resource",
        "ResourceContents",
        "ResourceLink",
        "ResourceTemplate",
        "TextContent",
        "TextResourceContents",
    }
)
"""The names of ``content``: content blocks, resources, tool results, prompts and the pages of the four lists. A
tool server needs them once it lists its tools or answers a call, not to register its tools and answer its
handshake, so that module is loaded the first time one of these names is looked up here."""

CLIENT_FEATURES = frozenset(
    {
        "BooleanSchema",
        "CreateMessageRequest",
        "CreateMessageRequestParams",
        "CreateMessageResult",
        "ElicitRequest",
        "ElicitRequestFormParams",
        "ElicitRequestParams",
        "ElicitRequestURLParams",
        "ElicitRequestedSchema",
        "ElicitResult",
        "ElicitationCompleteNotificationParams",
        "EnumSchema",
        "InputRequest",
        "InputRequests",
        "InputRequiredResult",
        "InputResponse",
        "InputResponses",
        "LegacyTitledEnumSchema",
        "ListRootsRequest",
        "ListRootsResult",
        "ModelHint",
        "ModelPreferences",
        "MultiSelectEnumSchema",
        "NumberSchema",
        "PrimitiveSchemaDefinition",
        "Root",
        "SamplingMessage",
        "SamplingMessageContentBlock",
        "SingleSelectEnumSchema",
        "StringSchema",
        "TitledEnumOption",
        "TitledMultiSelectEnumSchema",
        "TitledMultiSelectItems",
        "TitledSingleSelectEnumSchema",
        "ToolChoice",
        "ToolResultContent",
        "ToolUseContent",
        "UntitledMultiSelectEnumSchema",
        "UntitledMultiSelectItems",
        "UntitledSingleSelectEnumSchema",
    }
)
"""The names of ``client_features``: what a server asks of its client (sampling, roots, elicitation, input
requests). A server needs them only when it asks, a client only when it is asked, so that module is loaded the
first time one of these names is looked up here (or a model with an ``inputResponses`` field is first built)."""

SERVER_FEATURES = frozenset(
    {
        "CallToolRequestParams",
        "GetPromptRequestParams",
        "GetPromptResult",
        "InputResponseRequestParams",
        "PromptMessage",
        "ReadResourceRequestParams",
        "ReadResourceResult",
        "ResourceRequestParams",
        "ResourceUpdatedNotificationParams",
        "SubscribeRequestParams",
        "UnsubscribeRequestParams",
    }
)
"""The names of ``server_features``: the requests beyond the lists (reading and subscribing to resources, getting
prompts, calling tools). Both sides handle a ``tools/call`` without its params' model, and the rest only when
they are used."""

UTILITIES = frozenset(
    {
        "CompleteArgument",
        "CompleteContext",
        "CompleteRequestParams",
        "CompleteResult",
        "Completion",
        "LoggingMessageNotificationParams",
        "PromptReference",
        "ResourceReference",
        "ResourceTemplateReference",
        "SetLevelRequestParams",
        "SubscriptionFilter",
        "SubscriptionsAcknowledgedNotificationParams",
        "SubscriptionsListenRequestParams",
        "SubscriptionsListenResult",
    }
)
"""The names of ``utilities``: completion, logging and the 2026-07-28 subscriptions, used when a program uses them."""

META = frozenset(
    {"NotificationMetaObject", "RequestMetaObject", "ResultMetaObject", "SubscriptionsListenResultMetaObject"}
)
"""The names of ``meta``: typed views of the 2026-07-28 reserved ``_meta`` keys, which mcp_sync itself never needs."""

ON_DEMAND = {
    "content": CONTENT,
    "client_features": CLIENT_FEATURES,
    "server_features": SERVER_FEATURES,
    "utilities": UTILITIES,
    "meta": META,
}
"""Each module of this package loaded the first time one of its names is looked up here, with those names.

Declaring a pydantic model costs about 150 microseconds (its validator is built later, at first use): the models of
these modules are 76 of the package's 110. A server or client that lists and calls tools uses none but
``content``'s, and a tool server's start (its import, its tools' registration, its handshake) none at all."""


def __getattr__(name: str) -> Any:
    for module, names in ON_DEMAND.items():
        if name in names:
            loaded = importlib.import_module(f".{module}", __name__)
            globals().update({each: getattr(loaded, each) for each in names})
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def declared(name: str) -> bool:
    """Whether the model (or alias) ``name`` of this package exists yet: its module is loaded (see :data:`ON_DEMAND`).

    Until it does, nothing in the program can be an instance, a subclass or
    an annotation of it, and asking costs no import.

    >>> declared("Tool")
    True
    """
    for module, names in ON_DEMAND.items():
        if name in names:
            return f"{__name__}.{module}" in sys.modules
    return name in globals()


def __dir__() -> list[str]:
    return sorted(set(globals()).union(*ON_DEMAND.values()))
