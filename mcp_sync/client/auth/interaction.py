"""How a person completes a sign-in: the authorization URL goes to them, the redirect comes back.

An *interaction* has a ``redirect_uri`` (where the authorization server
sends the browser back) and ``authorize(url, timeout)``, which shows or
opens ``url`` and returns the full URL the browser was sent back to (with
``code``, ``state`` and ``iss``, or ``error``). Two are provided:

- :class:`LoopbackInteraction`: a listener on 127.0.0.1 catches the
  redirect (one request, then it closes). It opens the browser in a
  terminal, shows a link in a notebook, and prints the URL otherwise.
- :class:`PasteInteraction`: prints the URL and reads the redirect URL
  pasted back (for machines without a browser).

For a web app, where the person's browser comes back to the app itself,
use :meth:`OAuth.begin <mcp_sync.client.auth.oauth.OAuth.begin>` and
:meth:`OAuth.complete <mcp_sync.client.auth.oauth.OAuth.complete>` instead.
"""

from __future__ import annotations

import html
import importlib
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from ...runtime.deadline import Deadline
from .discovery import auth_error

__all__ = ["Interaction", "LoopbackInteraction", "PasteInteraction", "default_interaction"]


class Interaction(Protocol):
    """Takes a person to the authorization URL and brings back where they were redirected."""

    @property
    def redirect_uri(self) -> str:
        """The redirect URI to register and send."""
        ...

    def authorize(self, url: str, timeout: float) -> str:
        """Show or open ``url``; return the full redirect URL, within ``timeout`` seconds."""
        ...


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


class LoopbackInteraction:
    """Catch the redirect on ``http://127.0.0.1:<port>/callback`` (RFC 8252 section 7.3).

    The port is chosen once (``port=0``: a free one) so that the redirect URI
    stays the same for the registration; the listener runs only while a
    sign-in waits, answers the redirect that carries the sign-in's ``state``
    (any other gets 400, and the wait goes on), and closes. ``open_browser``:
    ``True`` opens it, ``False`` only shows the URL, ``None`` (the default)
    opens it when this looks like a desktop terminal. ``browser`` replaces
    all of that: it is called with the URL (a test's robot, a kiosk's
    browser control) while the listener waits.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        path: str = "/callback",
        open_browser: bool | None = None,
        browser: Callable[[str], object] | None = None,
    ) -> None:
        self.host = host
        self.port = port or _free_port(host)
        self.path = path
        self.open_browser = open_browser
        self.browser = browser

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    def authorize(self, url: str, timeout: float) -> str:
        caught: list[str] = []
        arrived = threading.Event()
        expected_path = self.path
        # Only the redirect of this sign-in ends the wait: any page the person has open can send the
        # browser here first, with a state of its own (or none), and would otherwise cut the sign-in short.
        expected_state = parse_qs(urlsplit(url).query).get("state", [None])[0]

        class Handler(BaseHTTPRequestHandler):
            timeout = 2.0  # a connection that says nothing is dropped, not waited on while the redirect queues

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                if path != expected_path:
                    self.send_error(404)
                    return
                if expected_state is not None and parse_qs(query).get("state", [None])[0] != expected_state:
                    self.send_error(400, "This is not the redirect of the sign-in under way")
                    return
                caught.append(self.path)
                arrived.set()
                body = b"<!doctype html><title>Signed in</title><p>You may close this window and return.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the query holds the authorization code: never logged

        try:
            listener = HTTPServer((self.host, self.port), Handler)
        except OSError as exc:
            raise auth_error(
                "listener_unavailable", f"cannot listen for the redirect on {self.redirect_uri}: {exc.strerror}"
            ) from None
        listener.timeout = 0.2
        server = threading.Thread(
            target=self._serve, args=(listener, arrived), name="mcp-sync-oauth-callback", daemon=True
        )
        server.start()
        try:
            if self.browser is not None:
                self.browser(url)
            else:
                show(url, self.open_browser)
            if not arrived.wait(timeout):
                raise auth_error("timeout", f"no redirect reached {self.redirect_uri} within {timeout:g} s")
        finally:
            arrived.set()
            server.join(5)
            listener.server_close()
        return f"http://{self.host}:{self.port}{caught[0]}"

    @staticmethod
    def _serve(listener: HTTPServer, done: threading.Event) -> None:
        while not done.is_set():
            listener.handle_request()


class PasteInteraction:
    """Print the URL; read back the URL the browser ended on (for a machine without a browser).

    ``redirect_uri`` is what the authorization server sends the browser to;
    nothing needs to listen there: the person copies the address bar.
    """

    def __init__(self, redirect_uri: str = "http://127.0.0.1:8976/callback") -> None:
        self._redirect_uri = redirect_uri

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    def authorize(self, url: str, timeout: float) -> str:
        show(url, False)
        deadline = Deadline.after(timeout, clock=time.monotonic)  # this module's clock, which tests replace
        try:
            answer = input("Paste the address your browser was sent to: ").strip()
        except (EOFError, KeyboardInterrupt):
            raise auth_error("cancelled", "the sign-in was cancelled") from None
        if deadline.expired:
            raise auth_error("timeout", f"the sign-in took longer than {timeout:g} s")
        return answer


def _is_terminal(stream: object) -> bool:
    """Whether a standard stream is a terminal (``None`` under pythonw and some services: not one)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if isatty is not None else False


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


class _Link:
    """The authorization URL as a notebook shows it: a link that opens a new tab."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _repr_html_(self) -> str:
        link = html.escape(self.url, quote=True)
        return f'<p>Sign in to continue: <a href="{link}" target="_blank" rel="noopener">{link}</a></p>'

    def __repr__(self) -> str:
        return f"Sign in to continue: {self.url}"


def show(url: str, open_browser: bool | None) -> None:
    """Put the authorization URL in front of the person: a link in a notebook, the browser or a printed line."""
    if _in_notebook():
        display: Callable[[object], None] = importlib.import_module("IPython.display").display
        display(_Link(url))
        return
    if open_browser is None:
        open_browser = _is_terminal(sys.stdin) and _is_terminal(sys.stderr)
    if open_browser and webbrowser.open(url):
        print(f"Opened the browser to sign in. If it did not open, visit:\n{url}", file=sys.stderr)
        return
    print(f"Sign in by visiting:\n{url}", file=sys.stderr)


def default_interaction() -> Interaction | None:
    """What fits where this runs: the loopback listener in a notebook or a terminal, nothing elsewhere.

    A terminal with no browser to open (a server over ssh) gets
    :class:`PasteInteraction`: the redirect would never reach this machine's
    listener. Without a person at hand (a web worker, a script without a
    terminal, CI), there is no default: the flow then raises
    ``reason="authorization_required"``, and the app signs in with
    :meth:`~mcp_sync.client.auth.oauth.OAuth.begin`/``complete``.
    """
    if _in_notebook():
        return LoopbackInteraction()
    if not _is_terminal(sys.stdin):
        return None
    try:
        webbrowser.get()
    except webbrowser.Error:
        return PasteInteraction()
    return LoopbackInteraction()
