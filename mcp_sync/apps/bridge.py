"""The host's side of one app view, whatever carries its messages: :class:`AppBridge`.

An MCP App is an HTML page that talks JSON-RPC with its host (SEP-1865,
``io.modelcontextprotocol/ui``, 2026-01-26). The bridge is that host for
one view of one tool call: it answers the app's requests (``ui/initialize``,
``tools/call`` through the connected :class:`~mcp_sync.client.MCPClient`,
``resources/read``, ``ui/open-link``, ``ui/message``, ...) and produces
what the host tells the app (the tool's input and result, context changes,
``ui/resource-teardown``), holding every notification back until the app
said ``ui/notifications/initialized``.

It knows nothing of browsers or sockets. A carrier (the web host of
:mod:`mcp_sync.apps.web`, a notebook widget's comm) gives it a function that
delivers a message to the app (:meth:`AppBridge.attach`) and hands it each
message from the app (:meth:`AppBridge.receive`). Requests are answered on
the bridge's own worker threads, so a carrier's thread never waits on the
server.

Left out of the draft spec, on purpose: ``ui/notifications/tool-input-partial``
(the arguments are whole before the view exists), ``ui/download-file`` and
``sampling/createMessage`` (not offered, so not in ``hostCapabilities``), and
tools the app itself registers (the host does not call them).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..client.apps import AppResource
from ..protocol.apps import APP_MIME_TYPE, visible_to_app
from ..protocol.errors import MCPError
from ..protocol.types import CallToolResult, Tool
from .policy import checked_csp

if TYPE_CHECKING:
    from ..client.core import MCPClient

__all__ = ["PROTOCOL_VERSION", "AppBridge", "AppError"]

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "2026-01-26"
"""The MCP Apps version this host speaks."""
DEFAULT_CONTEXT: dict[str, Any] = {
    "theme": "light",
    "displayMode": "inline",
    "availableDisplayModes": ["inline"],
    "locale": "en-US",
    "platform": "web",
}
"""The host context a view starts with (the carrier updates it with what it knows: theme, locale, size)."""
CONTEXT_KEYS = frozenset(
    {"theme", "locale", "timeZone", "userAgent", "platform", "containerDimensions", "deviceCapabilities", "styles"}
)
"""The host-context fields a carrier may change (the display mode is the bridge's: only ``inline`` is offered)."""

# JSON-RPC error codes the bridge answers with.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
DENIED = -32000
"""The spec's implementation-defined code for a request the host refuses (a link, a tool)."""

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
"""MCP log levels as :mod:`logging` levels (``critical``, ``alert`` and ``emergency`` are CRITICAL)."""


class AppError(Exception):
    """An app resource that cannot be shown (not HTML)."""


class AppBridge:
    """The host of one app view: the app's JSON-RPC answered, the tool's input and result delivered to it.

    ``tool`` is the tool (or its name) whose call the view shows, with
    ``arguments``; its app is read through ``client``
    (:meth:`~mcp_sync.client.MCPClient.app_resource`, which raises for a tool
    without one), unless ``tool`` is that app already. ``permissions`` are the
    features the host grants (of ``camera``, ``microphone``, ``geolocation``,
    ``clipboardWrite``), given to the app only if its resource asks for them.
    ``on_open_link(url)`` opens a link the app asks for (http and https
    only); without it the host does not offer links. ``on_message(params)``
    sees each ``ui/message``, which is also kept (:attr:`messages`).

    A carrier connects it (``send`` delivers one message to the app)::

        bridge = AppBridge(client, "get-time")
        bridge.attach(post_to_app)            # how a message reaches the app
        ...                                   # each message from the app: bridge.receive(message)
        bridge.deliver_result(client.call_tool("get-time"))
        ...
        bridge.teardown("done")               # ui/resource-teardown, answered, then closed

    What the app said is kept: :attr:`messages` (``ui/message``),
    :attr:`model_context` (the last ``ui/update-model-context``),
    :attr:`size` (the last ``size-changed``), :attr:`app_info`.
    """

    def __init__(
        self,
        client: MCPClient,
        tool: Tool | str | AppResource,
        arguments: Mapping[str, Any] | None = None,
        *,
        permissions: Iterable[str] = (),
        context: Mapping[str, Any] | None = None,
        on_open_link: Callable[[str], None] | None = None,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60.0,
        workers: int = 4,
    ) -> None:
        app = tool if isinstance(tool, AppResource) else client.app_resource(tool)
        if app.mime_type is not None and not app.mime_type.replace(" ", "").startswith("text/html"):
            raise AppError(f"{app.uri} is {app.mime_type}, not {APP_MIME_TYPE}")
        self.client = client
        self.tool = app.tool
        self.arguments: dict[str, Any] = dict(arguments or {})
        self.resource = app
        """The app: its HTML and what its resource's ``_meta.ui`` asks for."""
        self.csp = checked_csp(app.ui.csp)
        """The origins of the resource's CSP that the view's policy holds (origins only)."""
        self.granted = frozenset(permissions) & frozenset(app.ui.permissions)
        """The permissions the app asked for and the host grants."""
        self.timeout = timeout
        self.on_open_link = on_open_link
        self.on_message = on_message
        self.initialized = threading.Event()
        """Set when the app said ``ui/notifications/initialized``."""
        self.closed = threading.Event()
        """Set by :meth:`close`."""
        self.teardown_requested = threading.Event()
        """Set when the app asked to be closed (``ui/notifications/request-teardown``)."""
        self.messages: list[dict[str, Any]] = []
        self.model_context: dict[str, Any] | None = None
        self.size: dict[str, Any] | None = None
        self.app_info: dict[str, Any] | None = None
        self.app_capabilities: dict[str, Any] | None = None
        self.result: CallToolResult | None = None
        self._context = {**DEFAULT_CONTEXT, **self._context_fields(context or {})}
        self._lock = threading.Lock()
        self._context_told = False
        self._send: Callable[[dict[str, Any]], None] | None = None
        self._held: list[dict[str, Any]] = [_notification("ui/notifications/tool-input", {"arguments": self.arguments})]
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcp-sync-app")
        self._undo: list[Callable[[], None]] = []
        # List changes reach the app where the connection delivers them (handshake era; 2026-07-28 would need a
        # subscriptions/listen stream of its own): hostCapabilities says listChanged only then.
        self._list_changes = client.negotiated_era == "handshake"
        if self._list_changes:
            for method in ("notifications/tools/list_changed", "notifications/resources/list_changed"):
                self._undo.append(client.on_notification(method, self._forwarder(method)))

    # ------------------------------------------------------------ the carrier

    def attach(self, send: Callable[[dict[str, Any]], None]) -> None:
        """Give the bridge the carrier's way to deliver one JSON-RPC message to the app (called once)."""
        self._send = send

    def receive(self, message: Any) -> None:
        """Handle one message from the app: a request (answered on a worker thread), a notification, a response."""
        if not isinstance(message, Mapping) or message.get("jsonrpc") != "2.0":
            log.warning("app %s: not a JSON-RPC 2.0 message, ignored", self.tool.name)
            return
        method, ident = message.get("method"), message.get("id")
        if method is None and ident is not None:
            self._answered(ident, dict(message))
        elif not isinstance(method, str):
            log.warning("app %s: a message without a method, ignored", self.tool.name)
        elif ident is None:
            self._notified(method, message.get("params"))
        else:
            try:
                self._workers.submit(self._request, ident, method, message.get("params"))
            except RuntimeError:  # closed: the view is gone
                log.debug("app %s: %s after close, ignored", self.tool.name, method)

    # --------------------------------------------------------- what the host says

    def deliver_result(self, result: CallToolResult) -> None:
        """Give the app the tool's result (``ui/notifications/tool-result``, held until it is initialized)."""
        self.result = result
        self._notify("ui/notifications/tool-result", result.to_wire())

    def cancel(self, reason: str = "") -> None:
        """Tell the app the tool call was cancelled or failed (``ui/notifications/tool-cancelled``)."""
        self._notify("ui/notifications/tool-cancelled", {"reason": reason})

    @property
    def context(self) -> dict[str, Any]:
        """The host context as the app last got it (or will get it at ``ui/initialize``)."""
        with self._lock:
            return dict(self._context)

    def update_context(self, changes: Mapping[str, Any]) -> None:
        """Change the host context (``theme``, ``locale``, ``containerDimensions``, ...); an initialized app is sent
        the changed fields (``ui/notifications/host-context-changed``). Unknown fields are ignored."""
        fields = self._context_fields(changes)
        with self._lock:
            changed = {key: value for key, value in fields.items() if self._context.get(key) != value}
            self._context.update(changed)
            told = self._context_told
        if changed and told:  # else the app gets the whole context in its ui/initialize answer
            self._notify("ui/notifications/host-context-changed", changed)

    def teardown(self, reason: str = "", timeout: float = 5.0) -> bool:
        """Ask the app to end (``ui/resource-teardown``), wait up to ``timeout`` for its answer, then :meth:`close`.

        Returns whether the app answered, with a result or an error: an app that has no teardown handler (the
        official ``App`` class without ``onteardown``) answers with an error, and it heard all the same. An app that
        never initialized is not asked (nothing may be sent to it).
        """
        answered = False
        if self.initialized.is_set() and not self.closed.is_set():
            answered = self.request("ui/resource-teardown", {"reason": reason}, timeout) is not None
        self.close()
        return answered

    def request(self, method: str, params: Mapping[str, Any], timeout: float) -> dict[str, Any] | None:
        """Send the app a request and wait up to ``timeout`` for its response (``None`` when none came)."""
        ident = next(self._ids)
        done: tuple[threading.Event, list[dict[str, Any]]] = (threading.Event(), [])
        with self._lock:
            self._waiting[ident] = done
        try:
            self._deliver({"jsonrpc": "2.0", "id": ident, "method": method, "params": dict(params)})
            done[0].wait(timeout)
        finally:
            with self._lock:
                self._waiting.pop(ident, None)
        return done[1][0] if done[1] else None

    def close(self) -> None:
        """Stop: no more messages either way, the worker threads joined, the notification listeners removed."""
        self.closed.set()
        for undo in self._undo:
            undo()
        self._undo.clear()
        self._workers.shutdown(wait=True, cancel_futures=True)

    @property
    def last_message(self) -> dict[str, Any] | None:
        """The app's last ``ui/message`` (its params: ``role``, ``content``), if any."""
        return self.messages[-1] if self.messages else None

    def host_capabilities(self) -> dict[str, Any]:
        """What this host offers the app, truly: only what the bridge does."""
        kept: dict[str, Any] = {
            "text": {},
            "image": {},
            "audio": {},
            "resource": {},
            "resourceLink": {},
            "structuredContent": {},
        }
        capabilities: dict[str, Any] = {
            "logging": {},
            "message": kept,
            "updateModelContext": kept,
            "sandbox": {"permissions": {name: {} for name in sorted(self.granted)}, "csp": self.csp},
            # Proxied whatever the server offers: a server without tools or resources answers the call itself.
            "serverTools": {"listChanged": self._list_changes},
            "serverResources": {"listChanged": self._list_changes},
        }
        if self.on_open_link is not None:
            capabilities["openLinks"] = {}
        return capabilities

    # ------------------------------------------------------------- internals

    @staticmethod
    def _context_fields(changes: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in changes.items() if key in CONTEXT_KEYS}

    def _forwarder(self, method: str) -> Callable[[dict[str, Any]], None]:
        def forward(params: dict[str, Any]) -> None:
            self._notify(method, params)

        return forward

    def _deliver(self, message: dict[str, Any]) -> None:
        send = self._send
        if send is None or self.closed.is_set():
            log.debug("app %s: %s not sent (no carrier, or closed)", self.tool.name, message.get("method", "answer"))
            return
        send(message)

    def _notify(self, method: str, params: Mapping[str, Any]) -> None:
        message = _notification(method, params)
        with self._lock:
            if not self.initialized.is_set():
                self._held.append(message)
                return
        self._deliver(message)

    def _notified(self, method: str, params: Any) -> None:
        params = params if isinstance(params, Mapping) else {}
        if method == "ui/notifications/initialized":
            with self._lock:
                held, self._held = self._held, []
                self.initialized.set()
            for message in held:
                self._deliver(message)
        elif method == "ui/notifications/size-changed":
            self.size = {key: params[key] for key in ("width", "height") if key in params}
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.CRITICAL)
            log.log(level, "app %s (%s): %s", self.tool.name, params.get("logger") or "app", params.get("data"))
        elif method == "ui/notifications/request-teardown":
            self.teardown_requested.set()
        else:
            log.debug("app %s: notification %s ignored", self.tool.name, method)

    def _answered(self, ident: Any, message: dict[str, Any]) -> None:
        with self._lock:
            waiting = self._waiting.get(ident) if isinstance(ident, int) else None
        if waiting is None:
            log.debug("app %s: an answer to no request of ours (%r), ignored", self.tool.name, ident)
            return
        waiting[1].append(message)
        waiting[0].set()

    def _request(self, ident: Any, method: str, params: Any) -> None:
        try:
            if not isinstance(params, (Mapping, type(None))):
                raise _Refused(INVALID_PARAMS, "params must be an object")
            result = self._answer(method, dict(params or {}))
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "result": result}
        except _Refused as refused:
            answer = _error(ident, refused.code, refused.message)
        except MCPError as exc:
            answer = _error(ident, exc.jsonrpc_code, exc.message)
        except Exception as exc:
            log.exception("app %s: %s failed", self.tool.name, method)
            answer = _error(ident, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        self._deliver(answer)

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        client, timeout = self.client, self.timeout
        if method == "ui/initialize":
            self.app_info = params.get("appInfo")
            self.app_capabilities = params.get("appCapabilities")
            with self._lock:
                self._context_told = True
                context = dict(self._context)
            return {
                "protocolVersion": PROTOCOL_VERSION,
                "hostInfo": client.info.to_wire(),  # the host is this client
                "hostCapabilities": self.host_capabilities(),
                "hostContext": {**context, "toolInfo": {"tool": self.tool.to_wire()}},
            }
        if method == "ping":
            return {}
        if method == "tools/call":
            name = params.get("name")
            tool = client.tools.find(name) if isinstance(name, str) else None
            if tool is None or not visible_to_app(tool):
                raise _Refused(DENIED, f"tool {name!r} is not one this app may call")
            log.info("app %s calls tool %s", self.tool.name, name)
            return client.call_tool(tool.name, params.get("arguments"), timeout=timeout).to_wire()
        if method == "tools/list":
            return {"tools": [tool.to_wire() for tool in client.tools() if visible_to_app(tool)]}
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise _Refused(INVALID_PARAMS, "resources/read needs a uri")
            return client.read_resource(uri, timeout=timeout).to_wire()
        if method == "resources/list":
            return client.list_resources(params.get("cursor"), timeout=timeout).to_wire()
        if method == "resources/templates/list":
            return client.list_resource_templates(params.get("cursor"), timeout=timeout).to_wire()
        if method == "ui/open-link":
            return self._open_link(params.get("url"))
        if method == "ui/message":
            self.messages.append(params)
            if self.on_message is not None:
                self.on_message(params)
            return {}
        if method == "ui/update-model-context":
            self.model_context = params
            return {}
        if method == "ui/request-display-mode":
            return {"mode": self.context["displayMode"]}  # inline is the one mode offered
        raise _Refused(METHOD_NOT_FOUND, f"{method} is not offered by this host")

    def _open_link(self, url: Any) -> dict[str, Any]:
        if self.on_open_link is None:
            raise _Refused(METHOD_NOT_FOUND, "this host opens no links")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise _Refused(DENIED, "only http and https links are opened")
        log.info("app %s opens %s", self.tool.name, url)
        self.on_open_link(parts.geturl())
        return {}


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _notification(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": dict(params)}


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
