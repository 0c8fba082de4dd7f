"""The stateless era (2026-07-28) as data: ``_meta`` keys, the methods of each kind, and how to tell the era.

Both roles read these: the client to build each request's ``_meta``
(:func:`request_meta`), the server to decide, once per request, which era
serves it (:func:`is_stateless_request`).

>>> is_stateless_request("tools/list", {"_meta": request_meta("2026-07-28", {}, {}, None)})
True
>>> is_stateless_request("tools/list", {}), "initialize" in REMOVED_METHODS
(False, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import JsonRpcCode

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"


CLIENT_INFO = "io.modelcontextprotocol/clientInfo"


CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


LOG_LEVEL = "io.modelcontextprotocol/logLevel"


SERVER_INFO = "io.modelcontextprotocol/serverInfo"


SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


REMOVED_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
"""Handshake-era methods that a 2026-07-28 request may not call (they answer ``-32601``)."""


def meta_revision(params: Mapping[str, Any] | None) -> Any:
    """The revision a request's ``_meta`` names (``None`` when it names none): the one reading of it.

    >>> meta_revision({"_meta": {PROTOCOL_VERSION: "2026-07-28"}}), meta_revision({"name": "x"})
    ('2026-07-28', None)
    """
    # (dict first: it is what comes off the wire, and isinstance against the Mapping ABC costs a Python call)
    meta = params.get("_meta") if isinstance(params, (dict, Mapping)) else None
    return meta.get(PROTOCOL_VERSION) if meta is not None and isinstance(meta, (dict, Mapping)) else None


def is_stateless_request(method: str, params: Mapping[str, Any] | None) -> bool:
    """Whether a request belongs to the stateless era: it names a revision in ``_meta``, or is discovery."""
    return method == "server/discover" or meta_revision(params) is not None


CACHEABLE = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
"""The methods whose results carry ``ttlMs``/``cacheScope`` and may be served from the cache."""


INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The methods a server may answer with an ``InputRequiredResult``."""


STATELESS_ONLY = frozenset({"server/discover", "subscriptions/listen"})
"""Methods that exist only in the stateless era (a handshake-era session answers them ``-32601``)."""


STATELESS_ERROR_CODES = frozenset(
    {
        JsonRpcCode.HEADER_MISMATCH,
        JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION,
    }
)
"""JSON-RPC error codes only a 2026-07-28 server sends: header mismatch, missing capability, unsupported version."""


def request_meta(
    revision: str, capabilities: dict[str, Any], info: dict[str, Any], log_level: str | None
) -> dict[str, Any]:
    """The ``_meta`` keys of a 2026-07-28 request."""
    meta = {PROTOCOL_VERSION: revision, CLIENT_CAPABILITIES: capabilities, CLIENT_INFO: info}
    if log_level is not None:
        meta[LOG_LEVEL] = log_level
    return meta
