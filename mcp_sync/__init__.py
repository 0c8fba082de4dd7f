"""mcp_sync: a synchronous, thread-based Model Context Protocol client and server.

>>> import mcp_sync
>>> server = mcp_sync.MCPServer("demo")
>>> client_end, server_end = mcp_sync.InMemoryTransport.pair()

``mcp_sync.connect(target)`` connects to a server given by URL, command line
or MCPServer object; ``mcp_sync.proxy(target)`` serves such a server as one
of its own. Names are imported lazily, so ``import mcp_sync`` stays cheap.

The modules directly in this package are the composition level: they join
the layers, which are the sub-packages. What is here:

- ``connect``: ``mcp_sync.connect``, from a server's address (URL, command line, MCPServer) to a connected client;
- ``compose``: proxies and many servers as one (``proxy``, ``ProxyServer``, ``ServerGroup``, ``connect_all``);
- ``cli`` and ``__main__``: the ``mcp-sync`` command, also run as ``python -m mcp_sync``;
- ``types`` and ``errors``: the public faces of the wire models and of the error codes and exceptions;
- ``testing``: the pytest plugin of people who test their servers (fixtures that connect and close after the test);
- this module: the lazy top-level names, the renderer that shows wire models richly (loading ``display``
  the first time one is shown) and the IPython extension of ``%load_ext mcp_sync``;
- the layers, each a sub-package whose docstring says what it holds: ``protocol/``, ``runtime/``,
  ``transports/``, ``display/``, ``client/`` and ``server/``.

May import: anything, being the composition level.
Nothing in a layer imports a module of this level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

# Bound here, not lazily: importing the submodule ``mcp_sync.connect`` sets
# the package attribute to the module, and this import then rebinds it to
# the function for good. The module itself imports nothing heavy.
from .connect import connect
from .protocol import rendering as _rendering
from .runtime.imports import import_unwalked

__version__ = "0.1.0"

_EXPORTS = {
    "MCPClient": "client.core",
    "MCPServer": "server.core",
    "ProxyServer": "compose",
    "ServerGroup": "compose",
    "connect_all": "compose",
    "proxy": "compose",
    "ServerSession": "server.session",
    "Context": "server.context",
    "JsonRpcDispatcher": "runtime.dispatcher",
    "Transport": "runtime.transport",
    "InMemoryTransport": "transports.memory",
    "EventBus": "runtime.events",
    "Telemetry": "runtime.telemetry",
    "MCP_CODES": "protocol.errors",
    "MCPError": "protocol.errors",
    "MCPProtocolError": "protocol.errors",
    "MCPTransportError": "protocol.errors",
    "define_codes": "protocol.errors",
    "StreamableHTTPApp": "server.http.app",
    "serve_http": "server.http.embedded",
    "start_http": "server.http.embedded",
}

__all__ = [
    "MCP_CODES",
    "Context",
    "EventBus",
    "InMemoryTransport",
    "JsonRpcDispatcher",
    "MCPClient",
    "MCPError",
    "MCPProtocolError",
    "MCPServer",
    "MCPTransportError",
    "ProxyServer",
    "ServerGroup",
    "ServerSession",
    "StreamableHTTPApp",
    "Telemetry",
    "Transport",
    "__version__",
    "connect",
    "connect_all",
    "define_codes",
    "load_ipython_extension",
    "proxy",
    "serve_http",
    "start_http",
]

if TYPE_CHECKING:
    from .client.core import MCPClient
    from .compose import ProxyServer, ServerGroup, connect_all, proxy
    from .protocol.errors import MCP_CODES, MCPError, MCPProtocolError, MCPTransportError, define_codes
    from .runtime.dispatcher import JsonRpcDispatcher
    from .runtime.events import EventBus
    from .runtime.telemetry import Telemetry
    from .runtime.transport import Transport
    from .server.context import Context
    from .server.core import MCPServer
    from .server.http.app import StreamableHTTPApp
    from .server.http.embedded import serve_http, start_http
    from .server.session import ServerSession
    from .transports.memory import InMemoryTransport


def _render(kind: str, model: object) -> str | None:
    """The wire models' rich display: the display layer, imported the first time something is shown."""
    from .display.render import render

    return render(kind, model)


def _bundle(model: object) -> _rendering.Bundle | None:
    """In a notebook, the result of a call of a tool that has an app, by a client that hosts apps: the app's widget.

    Only the widget's view: IPython adds the result's HTML and text, which
    front ends without widgets (a notebook viewer, a terminal) show.
    """
    from .client.apps import app_call
    from .display.ipython import in_notebook
    from .protocol.types import CallToolResult

    call = app_call(model)
    if call is None or not isinstance(model, CallToolResult) or not in_notebook():
        return None
    from .apps.widget import show_result

    view = show_result(call.client, call.tool, call.arguments, model)
    data, metadata = cast("_rendering.Bundle", view._repr_mimebundle_())  # anywidget's: (data, metadata)
    return {kind: value for kind, value in data.items() if kind != "text/plain"}, metadata


# Set here, at the composition level, so that ``protocol`` never imports ``display``
# and still every result shown in a notebook (even one built by hand) renders richly;
# nor ``client`` the app host, and still a tool's result shows its app.
_rendering.set_renderer(_render)
_rendering.set_bundler(_bundle)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext mcp_sync``: show tool results, resource contents and prompts richly in that IPython shell.

    The display package is imported only here, when IPython loads the extension::

        %load_ext mcp_sync

    See :func:`mcp_sync.display.ipython.enable_rich_display`.
    """
    from .display.ipython import enable_rich_display

    enable_rich_display(ipython)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_sync' has no attribute {name!r}")
    # The first of these imports loads the client or the server: see import_unwalked for why it is done so.
    value = getattr(import_unwalked(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
