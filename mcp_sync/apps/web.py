"""MCP Apps in a browser: :class:`AppHost`, a WSGI application that shows app views in a page.

Three frames, two origins. The host page (on ``page_origin``) holds a
sandbox proxy frame served from ``sandbox_origin``, which holds the app.
The origins must differ, so that nothing of the host page (its DOM, its
token, its channel to Python) is reachable from the app; the app and the
proxy share the sandbox origin, which holds nothing but the view.

- The app is loaded by URL from the sandbox origin, its
  Content-Security-Policy in the response header, built from the origins its
  resource declares (none: no network). Not ``srcdoc``, a ``blob:`` or a
  written ``about:blank``: those inherit the proxy page's own policy.
- The app's frame is ``sandbox="allow-scripts allow-same-origin allow-forms"``:
  a real origin, so apps that use storage work (an opaque origin throws on
  ``localStorage``); no popups, no top navigation, no downloads. The features
  its resource asks for go into its ``allow`` (and the proxy frame's) only
  when the host grants them (``permissions``).
- Every ``postMessage`` is checked by source and origin, both ways: the page
  takes messages only from the proxy frame's window on the sandbox origin, the
  proxy only from its parent on the page origin and from its app frame.
- The page attaches its listener before it creates the proxy frame, so the
  proxy's ``ui/notifications/sandbox-proxy-ready`` cannot be missed.

The page talks to the Python :class:`~mcp_sync.apps.bridge.AppBridge` over
HTTP: ``POST .../send`` for each message from the app, ``POST .../poll``
(long poll) for what goes to it. Every request is checked: the ``Host``
header must name one of the two origins (and the path be one of that
origin's), each view's URLs carry an unguessable token, and each POST's
``Origin`` must be the page origin.

``mcp-sync app`` serves it on two ports of 127.0.0.1. A web application
mounts it under a prefix, with a second host name pointing at the same
application for the sandbox (Flask, with Werkzeug's dispatcher)::

    from werkzeug.middleware.dispatcher import DispatcherMiddleware
    from mcp_sync.apps import AppHost

    apps = AppHost("https://example.com", "https://sandbox.example.com", prefix="/apps")
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/apps": apps})

    @app.get("/clock")
    def clock():
        view = apps.show(client, "get-time")      # the call's view, shown at view.url
        view.bridge.deliver_result(client.call_tool("get-time"))
        return redirect(view.url)

In Django, wrap the project's WSGI application the same way in ``wsgi.py``.
"""

from __future__ import annotations

import hmac
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from importlib import resources as package_files
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from .bridge import AppBridge
from .policy import allow_attribute, content_security_policy

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from ..client.apps import AppResource
    from ..client.core import MCPClient
    from ..protocol.types import Tool

__all__ = ["AppHost", "AppView"]

log = logging.getLogger(__name__)

POLL_WAIT = 10.0
"""The longest a poll waits for a message to the app (seconds); the page polls again at once."""
PAGE_SILENCE = 5.0
"""How long a page that has polled may go without polling before it counts as gone (seconds; see
:meth:`AppView.wait_closed`)."""
MAX_BODY = 4 << 20
"""The largest request body taken (bytes)."""
CLOSED_DELIVERY_WAIT = 2.0
"""How long :meth:`AppView.close` waits for the page to fetch the news that the view closed (seconds)."""

_Response = tuple[str, list[tuple[str, str]], bytes]
"""A status line, headers and body."""
_Sent = Callable[[], object]
"""What to call once a response is written (the server calls the body's ``close()``, PEP 3333)."""
_COMMON_HEADERS = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
]


class AppView:
    """One app view served by an :class:`AppHost`: its :attr:`bridge`, and the page :attr:`url` that shows it.

    :attr:`closed` is set when the view ends, by :meth:`close` (or
    :meth:`teardown`) or because the page went away.
    """

    def __init__(self, host: AppHost, bridge: AppBridge) -> None:
        self.id = secrets.token_hex(8)
        self.bridge = bridge
        self.page_token = secrets.token_urlsafe(24)
        self.sandbox_token = secrets.token_urlsafe(24)
        self.url = f"{host.page_origin}{host.prefix}/view/{self.id}?token={self.page_token}"
        """The host page of this view (it holds the token: give it to the one person who should see the app)."""
        self.closed = threading.Event()
        self._outbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self._delivered = threading.Event()
        self._lock = threading.Lock()
        self._polls = 0  # polls waiting now
        self._heard: float | None = None  # when the last poll ended (None: the page has not polled yet)
        bridge.attach(self._to_app)

    def _to_app(self, message: dict[str, Any]) -> None:
        self._outbox.put({"app": message})

    def open_link(self, url: str) -> None:
        """Have the page open ``url`` in a new tab (the bridge checked it is http or https)."""
        self._outbox.put({"open": url})

    def teardown(self, reason: str = "the host is closing", timeout: float = 5.0) -> bool:
        """Ask the app to end (and wait up to ``timeout`` for its answer), then :meth:`close`; whether it answered."""
        answered = self.bridge.teardown(reason, timeout)
        self.close(reason)
        return answered

    def close(self, reason: str = "closed", *, wait: float = CLOSED_DELIVERY_WAIT) -> None:
        """End the view: the bridge closed, the page told (waiting up to ``wait`` for it to hear it)."""
        if self.closed.is_set():
            return
        self.closed.set()
        self.bridge.close()
        self._outbox.put({"closed": reason})
        self._delivered.wait(wait)

    def gone(self) -> None:
        """The page went away: close without telling it."""
        self._delivered.set()
        self.close("the page closed", wait=0)

    def wait_closed(self, silence: float = PAGE_SILENCE) -> None:
        """Wait until the view ends: closed here, by the page's beacon, or by the page's silence.

        A page polls without pause, so a page that polled once and then went
        ``silence`` seconds without a poll waiting is gone although its
        beacon never came (a browser killed, a network lost, or a beacon the
        browser dropped as it closed the page): the view is then closed as
        :meth:`gone` does.
        """
        while not self.closed.wait(min(1.0, silence)):
            with self._lock:
                silent = not self._polls and self._heard is not None and time.monotonic() - self._heard > silence
            if silent:
                self.gone()

    def poll(self, wait: float) -> list[dict[str, Any]]:
        """What waits for the page: everything queued, after waiting up to ``wait`` for the first item."""
        with self._lock:
            self._polls += 1
        try:
            return self._take(wait)
        finally:
            with self._lock:
                self._polls -= 1
                self._heard = time.monotonic()

    def _take(self, wait: float) -> list[dict[str, Any]]:
        try:
            items = [self._outbox.get(timeout=wait)]
        except queue.Empty:
            return []
        while True:
            try:
                items.append(self._outbox.get_nowait())
            except queue.Empty:
                break
        return items

    @property
    def delivered(self) -> bool:
        """Whether the page has been sent the news that the view closed."""
        return self._delivered.is_set()

    def sent(self, items: list[dict[str, Any]]) -> None:
        """Polled ``items`` are written to the page: if they tell it the view closed, :meth:`close` may return.

        Not when they are taken from the queue: a :meth:`close` that returned
        then would let its caller stop the HTTP server under the poll's answer.
        """
        if any("closed" in item for item in items):
            self._delivered.set()


class AppHost:
    """A WSGI application that shows MCP App views: a host page, a sandbox proxy, and their channel to Python.

    ``page_origin`` and ``sandbox_origin`` are the two origins (scheme, host
    and port, as the browser sees them) it is reached at; they must differ.
    ``prefix`` is where it is mounted (its URLs are under it). ``permissions``
    are the browser features it may grant an app that asks for them
    (``camera``, ``microphone``, ``geolocation``, ``clipboardWrite``; none by
    default).

    >>> host = AppHost("http://127.0.0.1:8000", "http://127.0.0.1:8001")
    >>> host.sandbox_origin
    'http://127.0.0.1:8001'
    """

    def __init__(
        self, page_origin: str, sandbox_origin: str, *, prefix: str = "", permissions: Iterable[str] = ()
    ) -> None:
        self.page_origin = _origin(page_origin)
        self.sandbox_origin = _origin(sandbox_origin)
        if self.page_origin == self.sandbox_origin:
            raise ValueError("the sandbox must be on another origin than the page")
        self.prefix = prefix.rstrip("/")
        self.permissions = frozenset(permissions)
        self._views: dict[str, AppView] = {}
        self._lock = threading.Lock()
        self._closed = False

    def show(
        self,
        client: MCPClient,
        tool: Tool | str | AppResource,
        arguments: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> AppView:
        """A view of ``tool``'s app for a call with ``arguments`` (``options`` go to :class:`AppBridge`).

        Deliver the call's result with ``view.bridge.deliver_result(result)``, when it comes.
        """
        bridge = AppBridge(client, tool, arguments, permissions=self.permissions, **options)
        view = AppView(self, bridge)
        bridge.on_open_link = view.open_link
        with self._lock:
            if self._closed:
                bridge.close()
                raise RuntimeError("the AppHost is closed")
            self._views[view.id] = view
        return view

    def close(self) -> None:
        """Close every view (each page is told), so no poll is left waiting."""
        with self._lock:
            self._closed = True
            views = list(self._views.values())
        for view in views:
            view.close("the host stopped", wait=0)

    # ---------------------------------------------------------------- WSGI

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        sent: list[_Sent] = []
        status, headers, body = self._handle(environ, sent)
        start_response(status, [*_COMMON_HEADERS, *headers, ("Content-Length", str(len(body)))])
        return _Body(body, sent)

    def _handle(self, environ: WSGIEnvironment, sent: list[_Sent]) -> _Response:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "")
        netloc = environ.get("HTTP_HOST", "")
        query = parse_qs(environ.get("QUERY_STRING", ""))
        token = (query.get("token") or [""])[0]
        parts = path.strip("/").split("/")
        if netloc == urlsplit(self.page_origin).netloc:
            if method == "GET" and path == "/host.js":
                return _script("host.js")
            if len(parts) < 2 or parts[0] != "view":
                return _refused("404 Not Found")
            view = self._view(parts[1], token, page=True)
            if view is None:
                return _refused("404 Not Found")
            if method == "GET" and len(parts) == 2:
                return self._page(view)
            if method == "POST" and len(parts) == 3:
                if environ.get("HTTP_ORIGIN") != self.page_origin:
                    return _refused("403 Forbidden")
                return self._channel(view, parts[2], environ, sent)
            return _refused("404 Not Found")
        if netloc == urlsplit(self.sandbox_origin).netloc:
            if method == "GET" and path == "/sandbox.js":
                return _script("sandbox.js")
            if method != "GET" or len(parts) not in (2, 3) or parts[0] != "sandbox":
                return _refused("404 Not Found")
            view = self._view(parts[1], token, page=False)
            if view is None or (len(parts) == 3 and parts[2] != "app"):
                return _refused("404 Not Found")
            return self._proxy(view) if len(parts) == 2 else self._app(view)
        # Neither origin: a DNS-rebound name, or a proxy that rewrote the Host header.
        return _refused("421 Misdirected Request")

    def _view(self, ident: str, token: str, *, page: bool) -> AppView | None:
        with self._lock:
            view = self._views.get(ident)
        if view is None:
            return None
        expected = view.page_token if page else view.sandbox_token
        return view if hmac.compare_digest(token.encode(), expected.encode()) else None

    def _page(self, view: AppView) -> _Response:
        bridge = view.bridge
        base = f"{self.prefix}/view/{view.id}"
        config = {
            "send": f"{base}/send?token={view.page_token}",
            "poll": f"{base}/poll?token={view.page_token}",
            "hello": f"{base}/hello?token={view.page_token}",
            "close": f"{base}/close?token={view.page_token}",
            "proxy": f"{self.sandbox_origin}{self.prefix}/sandbox/{view.id}?token={view.sandbox_token}",
            "sandboxOrigin": self.sandbox_origin,
            "allow": allow_attribute(bridge.granted),
            "permissions": sorted(bridge.granted),
            "csp": bridge.csp,
            "border": bridge.resource.ui.prefers_border is not False,
        }
        title = f"{bridge.tool.title or bridge.tool.name} ({bridge.client.server_info.name})"
        page = _PAGE.format(title=_escape(title), config=_json_in_html(config), script=f"{self.prefix}/host.js")
        policy = (
            f"default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; "
            f"frame-src {self.sandbox_origin}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        return _html(page, policy)

    def _proxy(self, view: AppView) -> _Response:
        config = {
            "hostOrigin": self.page_origin,
            "app": f"{self.prefix}/sandbox/{view.id}/app?token={view.sandbox_token}",
        }
        page = _PROXY.format(config=_json_in_html(config), script=f"{self.prefix}/sandbox.js")
        policy = (
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; frame-src 'self'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors {self.page_origin}"
        )
        return _html(page, policy)

    def _app(self, view: AppView) -> _Response:
        resource = view.bridge.resource
        policy = content_security_policy(view.bridge.csp)
        # Only the two frames above it may hold the app.
        policy += f"; frame-ancestors {self.sandbox_origin} {self.page_origin}"
        log.info("app %s served with CSP: %s", resource.uri, policy)
        return _html(resource.html, policy)

    def _channel(self, view: AppView, action: str, environ: WSGIEnvironment, sent: list[_Sent]) -> _Response:
        if action == "poll":
            # Once the page heard that the view closed, a late poll learns it again at once.
            items = [{"closed": "closed"}] if view.delivered else view.poll(POLL_WAIT)
            sent.append(lambda: view.sent(items))
            return "200 OK", [("Content-Type", "application/json")], json.dumps(items).encode()
        if action == "close":
            view.gone()
            return "204 No Content", [], b""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            return _refused("413 Content Too Large")
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"null")
        except ValueError:
            return _refused("400 Bad Request")
        if action == "send":
            view.bridge.receive(body)
        elif action == "hello" and isinstance(body, Mapping):
            view.bridge.update_context(body)
        else:
            return _refused("404 Not Found")
        return "204 No Content", [], b""


class _Body(list[bytes]):
    """A response body whose ``close()``, called by the server once it has written it, runs ``sent``."""

    def __init__(self, body: bytes, sent: list[_Sent]) -> None:
        super().__init__((body,))
        self._sent = sent

    def close(self) -> None:
        for callback in self._sent:
            callback()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) origin: {url!r}")
    return f"{parts.scheme}://{parts.netloc}"


def _refused(status: str) -> _Response:
    return status, [("Content-Type", "text/plain; charset=utf-8")], status.encode()


def _html(page: str, policy: str) -> _Response:
    return "200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Security-Policy", policy)], page.encode()


def _script(name: str) -> _Response:
    body = package_files.files(__package__).joinpath("static", name).read_bytes()
    return "200 OK", [("Content-Type", "text/javascript; charset=utf-8")], body


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _json_in_html(value: Any) -> str:
    # Inside a <script type="application/json">: no "</script>" (nor "<!--") can end it early.
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 0; padding: 1rem; background: #f6f6f6; }}
main {{ max-width: 960px; margin: 0 auto; }}
h1 {{ font-size: 1rem; font-weight: 600; margin: 0 0 .5rem; }}
#status {{ color: #666; font-size: .85rem; margin: .5rem 0; }}
iframe {{ width: 100%; height: 320px; border: 0; display: block; background: #fff; }}
iframe.border {{ border: 1px solid #ccc; border-radius: 6px; }}
</style></head>
<body><main><h1>{title}</h1><div id="frame"></div><p id="status">loading the app</p></main>
<script type="application/json" id="mcp-app-config">{config}</script>
<script src="{script}"></script></body></html>
"""

_PROXY = """<!doctype html>
<html><head><meta charset="utf-8"><title>sandbox</title>
<style>html, body {{ margin: 0; height: 100%; overflow: hidden; }} iframe {{ border: 0; width: 100%; height: 100%; }}
</style></head>
<body><script type="application/json" id="mcp-sandbox-config">{config}</script>
<script src="{script}"></script></body></html>
"""
