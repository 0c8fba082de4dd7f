"""MCP Apps in a notebook: :class:`AppWidget`, one app view in a cell's output, and :func:`show_app`.

The widget is an `anywidget <https://anywidget.dev>`_ (JupyterLab, Notebook 7,
VS Code, Colab; ``pip install "mcp-sync[notebook]"``). Its front end
(``static/widget.js``) builds the sandbox: a notebook has no second origin to
serve a sandbox proxy from, so the proxy is a ``srcdoc`` frame sandboxed
without ``allow-same-origin`` (an opaque origin: nothing of the notebook page,
its kernel connection included, is reachable from it), and the app runs in a
frame of the proxy, as sandboxed. The app's Content-Security-Policy is a
``<meta>`` tag put first in its HTML, built from the origins its resource
declares (none: no network), by the same function as the browser host's header.

Messages go through the widget's comm: the front end relays each JSON-RPC
message of the app to the kernel (checked there to come from the proxy's
window, and there from the app's frame), where the widget hands it to its
:class:`~mcp_sync.apps.bridge.AppBridge`; the bridge answers on its own threads
and its messages to the app go back the same way. The kernel handles comm
messages between cells, so the app's tool calls reach the server while the
notebook is idle, and whenever later cells are not running.

An opaque origin has no storage: an app that needs ``localStorage`` fails here
(the browser host, :mod:`mcp_sync.apps.web`, gives apps a real origin).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape
from importlib import resources as package_files
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from .bridge import AppBridge
from .policy import allow_attribute, content_security_policy

if TYPE_CHECKING:
    from ..client.core import MCPClient
    from ..protocol.types import CallToolResult, Tool

__all__ = ["AppWidget", "app_document", "show_app", "show_result"]

# What may stand before the point where the CSP tag goes: blanks, comments and the doctype. A tag placed before
# the doctype would put the page in quirks mode; placed after it, the parser opens <html> and <head> for it, and the
# page's own <html> and <head> tags merge into those.
_PROLOGUE = re.compile(r"\A(?:\s|<!--.*?-->)*(?:<!doctype[^>]*>)?", re.IGNORECASE | re.DOTALL)


def app_document(html: str, csp: Mapping[str, list[str]]) -> str:
    """The app's ``html`` with its Content-Security-Policy (from the checked origins ``csp``) as the first tag of its
    head, before any of its scripts.

    >>> page = app_document("<!doctype html><p>hi</p>", {})
    >>> page[:70]
    '<!doctype html><meta http-equiv="Content-Security-Policy" content="def'
    >>> "connect-src &#x27;none&#x27;" in page, page.endswith('"><p>hi</p>')
    (True, True)
    """
    tag = f'<meta http-equiv="Content-Security-Policy" content="{escape(content_security_policy(csp))}">'
    prologue = _PROLOGUE.match(html)
    end = prologue.end() if prologue is not None else 0
    return html[:end] + tag + html[end:]


class AppWidget(anywidget.AnyWidget):
    """One view of ``tool``'s app in a notebook cell, for a call with ``arguments`` (``options`` go to
    :class:`~mcp_sync.apps.bridge.AppBridge`: ``permissions``, ``context``, ``on_message``, ``timeout``...).

    Shown as a cell's value, like any widget. :func:`show_app` makes one and
    gives it the call's result; to give it yourself, use its :attr:`bridge`::

        view = AppWidget(client, "show_counter")
        view.bridge.deliver_result(client.call_tool("show_counter"))
        view

    What the app said is on the widget: :attr:`last_message` (its last
    ``ui/message``), :attr:`model_context` (its last
    ``ui/update-model-context``). :meth:`close` ends the view.
    """

    _esm = package_files.files(__package__).joinpath("static", "widget.js").read_text(encoding="utf-8")
    html = traitlets.Unicode("").tag(sync=True)
    """The app's document, its CSP first (see :func:`app_document`)."""
    allow = traitlets.Unicode("").tag(sync=True)
    """The frames' ``allow`` attribute: the permissions the app asked for and the host grants."""
    border = traitlets.Bool(True).tag(sync=True)
    """Whether the frame has a border (the resource's ``prefersBorder``; by default it does)."""
    title = traitlets.Unicode("").tag(sync=True)
    """The frame's title (the tool's)."""

    def __init__(
        self, client: MCPClient, tool: Tool | str, arguments: Mapping[str, Any] | None = None, **options: Any
    ) -> None:
        options.setdefault("on_open_link", self._open_link)  # the page opens it (the bridge checked it)
        bridge = AppBridge(client, tool, arguments, **options)
        super().__init__(
            html=app_document(bridge.resource.html, bridge.csp),
            allow=allow_attribute(bridge.granted),
            border=bridge.resource.ui.prefers_border is not False,
            title=bridge.tool.title or bridge.tool.name,
        )
        self.bridge = bridge
        """The view's :class:`~mcp_sync.apps.bridge.AppBridge` (its messages, size, result, context...)."""
        bridge.attach(self._to_app)
        self.on_msg(self._from_front_end)

    @property
    def last_message(self) -> dict[str, Any] | None:
        """The app's last ``ui/message`` (its params: ``role``, ``content``), if any."""
        return self.bridge.last_message

    @property
    def model_context(self) -> dict[str, Any] | None:
        """What the app last gave the model to read (``ui/update-model-context`` params), if anything."""
        return self.bridge.model_context

    def close(self) -> None:
        """End the view: the app told (``ui/resource-teardown``), the bridge closed, the widget's comm closed.

        The app's answer is not waited for: while a cell runs the kernel
        handles no comm message, so it could only come after the wait.
        """
        self.bridge.teardown("the view was closed", timeout=0)
        super().close()

    def _to_app(self, message: dict[str, Any]) -> None:
        self.send({"app": message})

    def _open_link(self, url: str) -> None:
        self.send({"open": url})

    def _from_front_end(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, Mapping):
            return
        if "app" in content:
            self.bridge.receive(content["app"])
        elif isinstance(content.get("context"), Mapping):
            self.bridge.update_context(content["context"])


def show_app(
    client: MCPClient, tool: Tool | str, arguments: Mapping[str, Any] | None = None, **options: Any
) -> AppWidget:
    """Call ``tool`` with ``arguments`` and return the view of its app, given the arguments and the result.

    The cell shows the widget when it is the cell's value; the app's tool
    calls then go to the server through the kernel. ``options`` go to
    :class:`~mcp_sync.apps.bridge.AppBridge`. A call that raises closes the
    view and raises (a result with ``isError`` is the app's to show)::

        client = MCPClient.stdio(["python", "examples/apps_server.py"], host_apps=True)
        counter = show_app(client, "show_counter")
        counter
    """
    view = AppWidget(client, tool, arguments, **options)
    try:
        result = client.call_tool(view.bridge.tool.name, view.bridge.arguments)
    except BaseException:
        view.close()
        raise
    view.bridge.deliver_result(result)
    return view


def show_result(
    client: MCPClient,
    tool: Tool | str,
    arguments: Mapping[str, Any] | None,
    result: CallToolResult,
    **options: Any,
) -> AppWidget:
    """The view of ``tool``'s app for a call already made, given its ``arguments`` and ``result``.

    A notebook shows this for the result of such a call, made by a client
    with ``host_apps=True``, when the result is a cell's value (or is
    ``display``-ed): a new view each time it is shown. ``options`` go to
    :class:`~mcp_sync.apps.bridge.AppBridge`::

        result = client.call_tool("show_counter")
        counter = show_result(client, "show_counter", {}, result)
    """
    view = AppWidget(client, tool, arguments, **options)
    view.bridge.deliver_result(result)
    return view
