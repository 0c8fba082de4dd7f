"""A tool's MCP App as a client reads it: the HTML of its ``ui://`` resource and what its ``_meta.ui`` asks for.

The function behind :meth:`MCPClient.app_resource <mcp_sync.client.core.MCPClient.app_resource>`.
It reads ``_meta.ui`` whether or not the server declared the
``io.modelcontextprotocol/ui`` extension (servers that do not are common),
and whether or not the client declared it (``MCPClient(host_apps=True)``).
The resource's ``_meta.ui`` is the read content item's, else its
``resources/list`` entry's, as the spec has hosts look.

>>> from mcp_sync import MCPServer, connect
>>> server = MCPServer("clock")
>>> _ = server.add_app_resource("ui://clock/app.html", html="<p>now</p>", prefers_border=False)
>>> _ = server.register_tool("now", lambda args, ctx: "12:00", ui="ui://clock/app.html")
>>> with connect(server) as client:
...     app = client.app_resource("now")
>>> app.html, app.ui.prefers_border, app.tool_ui.visibility
('<p>now</p>', False, ('model', 'app'))

A client that hosts apps (``host_apps=True``) also notes each call it makes
of a tool that has an app (:func:`note_app_call`), so that the result, shown
in a notebook, can show that app (:func:`app_call`; the composition level
joins it to :mod:`mcp_sync.apps`, which this layer does not import).
"""

from __future__ import annotations

import base64
import binascii
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.apps import ResourceUI, ToolUI, resource_ui, tool_ui
from ..protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from ..protocol.types import CallToolResult, ResourceContents, TextResourceContents, Tool
from ..runtime.dispatcher import USE_DEFAULT, Timeout

if TYPE_CHECKING:
    from .core import MCPClient

__all__ = ["AppCall", "AppResource", "app_call", "app_resource", "note_app_call"]


@dataclass(frozen=True)
class AppResource:
    """A tool's app: the tool, its ``_meta.ui`` (``tool_ui``), the resource's URI, MIME type and HTML, and the
    resource's ``_meta.ui`` (``ui``: CSP origins, permissions, domain, border)."""

    tool: Tool
    tool_ui: ToolUI
    uri: str
    mime_type: str | None
    html: str
    ui: ResourceUI


def app_resource(client: MCPClient, tool: Tool | str, *, timeout: Timeout = USE_DEFAULT) -> AppResource:
    """Read the app of ``tool`` (a :class:`~mcp_sync.types.Tool` or a tool's name) from ``client``'s server.

    ``NOT_FOUND`` for a name the server does not list; ``INVALID_PARAMS`` for
    a tool without an app; ``PROTOCOL_INVALID`` when the read returns no
    content at the app's URI, or a blob that is not UTF-8 text.
    """
    found = client.tools.find(tool) if isinstance(tool, str) else tool
    if found is None:
        raise MCPError(MCP_CODES.NOT_FOUND, f"no tool {tool!r}", context={"tool": tool})
    ui = tool_ui(found)
    if ui is None:
        raise MCPError(MCP_CODES.INVALID_PARAMS, f"tool {found.name!r} has no app", context={"tool": found.name})
    result = client.read_resource(ui.resource_uri, timeout=timeout)
    content = next((item for item in result.contents if item.uri == ui.resource_uri), None)
    if content is None:
        raise _refused(ui.resource_uri, f"reading {ui.resource_uri} returned no content at that URI")
    listed = next((item for item in client.resources() if item.uri == ui.resource_uri), None)
    return AppResource(
        tool=found,
        tool_ui=ui,
        uri=ui.resource_uri,
        mime_type=content.mime_type,
        html=_text(content),
        ui=resource_ui(content, listed),
    )


@dataclass(frozen=True)
class AppCall:
    """A call of a tool that has an app, by a client that hosts apps: what showing its result as the app needs."""

    client: MCPClient
    tool: Tool
    arguments: dict[str, Any]


# Results are pydantic models: not hashable, and compared field by field (a private attribute would make a result
# of such a call unequal to the same result built by hand). So they are looked up by identity, each entry dropped
# when its result is collected.
_calls: dict[int, AppCall] = {}


def note_app_call(client: MCPClient, name: str, arguments: Mapping[str, Any] | None, result: CallToolResult) -> None:
    """Keep, for as long as ``result`` lives, that it answers ``client``'s call of ``name`` with ``arguments`` when
    that tool has an app (otherwise nothing is kept). Called for a client that hosts apps."""
    tool = client.tools.find(name)
    if tool is None or tool_ui(tool) is None:
        return
    _calls[id(result)] = AppCall(client, tool, dict(arguments or {}))
    weakref.finalize(result, _calls.pop, id(result), None)


def app_call(result: object) -> AppCall | None:
    """The call ``result`` answers, when it was a call of a tool with an app by a client that hosts apps.

    >>> from mcp_sync import MCPServer, connect
    >>> server = MCPServer("clock")
    >>> _ = server.add_app_resource("ui://clock/app.html", html="<p>now</p>")
    >>> _ = server.register_tool("now", lambda args, ctx: "12:00", ui="ui://clock/app.html")
    >>> with connect(server, host_apps=True) as client:
    ...     call = app_call(client.call_tool("now", {"zone": "UTC"}))
    >>> call.tool.name, call.arguments
    ('now', {'zone': 'UTC'})
    """
    return _calls.get(id(result))


def _text(content: ResourceContents) -> str:
    if isinstance(content, TextResourceContents):
        return content.text
    try:
        return base64.b64decode(content.blob, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as error:
        raise _refused(content.uri, f"{content.uri}: the app's blob is not base64 UTF-8 text ({error})") from None


def _refused(uri: str, message: str) -> MCPProtocolError:
    return MCPProtocolError(MCP_CODES.PROTOCOL_INVALID, message, context={"uri": uri})
