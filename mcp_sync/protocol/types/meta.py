"""Typed views of the 2026-07-28 revision's reserved ``_meta`` keys.

Params and results keep ``meta`` as a plain dict; validate it with one of these
models when a typed view is wanted. Nothing in mcp_sync needs them, so this
module is loaded the first time one of its names is looked up in the package
(see ``META`` there).
"""

from pydantic import Field

from .base import ClientCapabilities, Implementation, LoggingLevel, ProgressToken, RequestId, WireModel
from .lazy import adopt


class RequestMetaObject(WireModel):
    """Typed view of a 2026-07-28 request ``_meta`` (protocol version, client info...).

    Request params keep ``meta`` as a dict; validate it with this model when
    the typed view is wanted.
    """

    protocol_version: str = Field(alias="io.modelcontextprotocol/protocolVersion")
    client_capabilities: ClientCapabilities = Field(alias="io.modelcontextprotocol/clientCapabilities")
    client_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/clientInfo")
    log_level: LoggingLevel | None = Field(default=None, alias="io.modelcontextprotocol/logLevel")
    progress_token: ProgressToken | None = None


class ResultMetaObject(WireModel):
    """Typed view of a 2026-07-28 result ``_meta`` (server info)."""

    server_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/serverInfo")


class NotificationMetaObject(WireModel):
    """Typed view of a 2026-07-28 notification ``_meta`` (subscription id)."""

    subscription_id: RequestId | None = Field(default=None, alias="io.modelcontextprotocol/subscriptionId")


class SubscriptionsListenResultMetaObject(WireModel):
    """Typed view of the ``_meta`` of a ``subscriptions/listen`` result."""

    subscription_id: RequestId = Field(alias="io.modelcontextprotocol/subscriptionId")
    server_info: Implementation | None = Field(default=None, alias="io.modelcontextprotocol/serverInfo")


adopt(globals())
