"""The HTTP client's own sessions: what the environment and the server set still applies.

A transport that made its own :class:`requests.Session` works out the proxy,
CA-bundle and netrc settings once per URL and prepares each request itself
(``mcp_sync.transports.http._common.Sender``). These tests check, against a
real server on 127.0.0.1, that nothing ``Session.request`` would have done
is lost: a proxy from the environment, netrc credentials, cookies the server
sets, on both client transports.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import requests.auth

from mcp_sync import MCPServer
from mcp_sync.client import http_client
from mcp_sync.server import StreamableHTTPApp
from mcp_sync.server.http.wsgi import WSGIServer

WSGIEnviron = dict[str, Any]


class Recorder:
    """A WSGI wrapper that notes what each request carried and may set a cookie on every answer."""

    def __init__(self, app: Callable[[WSGIEnviron, Any], Iterable[bytes]], cookie: str | None = None) -> None:
        self.app = app
        self.cookie = cookie
        self.seen: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, environ: WSGIEnviron, start_response: Any) -> Iterable[bytes]:
        with self._lock:
            self.seen.append(
                {
                    "method": environ["REQUEST_METHOD"],
                    "target": environ["REQUEST_URI"],
                    "cookie": environ.get("HTTP_COOKIE", ""),
                    "authorization": environ.get("HTTP_AUTHORIZATION", ""),
                }
            )

        def with_cookie(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if self.cookie is not None:
                headers = [*headers, ("Set-Cookie", f"{self.cookie}; Path=/")]
            return start_response(status, headers, exc_info)

        return self.app(environ, with_cookie)


def echo_server() -> MCPServer:
    server = MCPServer("sender-test")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[tuple[WSGIServer, StreamableHTTPApp]] = []

    def start(cookie: str | None = None, **options: Any) -> tuple[Recorder, str]:
        app = StreamableHTTPApp(echo_server(), **options)
        recorder = Recorder(app, cookie)
        server = WSGIServer(recorder).start()
        started.append((server, app))
        return recorder, server.url

    yield start
    for server, app in started:
        server.close()
        app.close()


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_cookie_the_server_sets_is_sent_back(serve: Any, era: str) -> None:
    recorder, base = serve(cookie="lb=worker-2")
    with http_client(f"{base}/mcp", era=era) as client:
        for n in range(3):
            assert client.call_tool("echo", {"text": str(n)}).content[0].text == str(n)  # type: ignore[union-attr]
    posts = [seen for seen in recorder.seen if seen["method"] == "POST"]
    assert posts[0]["cookie"] == ""  # nothing set yet
    assert all(seen["cookie"] == "lb=worker-2" for seen in posts[1:])
    assert len(posts) >= 4


class Moved:
    """A WSGI wrapper that sends every request for ``/old`` on to ``/mcp`` with a 307 (method and body kept)."""

    def __init__(self, app: Callable[[WSGIEnviron, Any], Iterable[bytes]]) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnviron, start_response: Any) -> Iterable[bytes]:
        if environ["PATH_INFO"] != "/old":
            return self.app(environ, start_response)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("307 Temporary Redirect", [("Location", "/mcp"), ("Content-Length", "0")])
        return [b""]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_request_the_server_redirects_is_sent_where_it_says(serve: Any, era: str) -> None:
    recorder, base = serve()
    recorder.app = Moved(recorder.app)
    with http_client(f"{base}/old", era=era) as client:
        for n in range(3):
            assert client.call_tool("echo", {"text": str(n)}).content[0].text == str(n)  # type: ignore[union-attr]
    posts = [seen["target"] for seen in recorder.seen if seen["method"] == "POST"]
    assert posts[:2] == ["/old", "/mcp"] and posts.count("/old") == posts.count("/mcp") >= 4


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_a_proxy_from_the_environment_carries_every_request(
    serve: Any, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    # The "proxy" is the MCP server itself: it serves absolute-form targets. The URL the client
    # is given names a port nothing listens on, so a call can only succeed through the proxy.
    recorder, base = serve()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", base)
    monkeypatch.setenv("http_proxy", base)
    unreachable = "http://127.0.0.1:9"
    path = "/mcp" if transport == "streamable" else "/sse"
    with http_client(f"{unreachable}{path}", transport=transport) as client:
        assert client.call_tool("echo", {"text": "via proxy"}).content[0].text == "via proxy"  # type: ignore[union-attr]
    assert recorder.seen
    assert all(seen["target"].startswith(f"{unreachable}/") for seen in recorder.seen)
    expected = {"GET", "POST"} if transport == "sse" else {"POST"}  # the legacy transport's stream is a GET
    assert expected <= {seen["method"] for seen in recorder.seen}


def test_netrc_credentials_are_sent_when_no_auth_is_given(
    serve: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recorder, base = serve()
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login ada password lovelace\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with http_client(f"{base}/mcp", era="handshake") as client:
        assert client.call_tool("echo", {"text": "x"}).content[0].text == "x"  # type: ignore[union-attr]
    expected = "Basic " + base64.b64encode(b"ada:lovelace").decode()
    assert recorder.seen and all(seen["authorization"] == expected for seen in recorder.seen)


class DigestGate:
    """A WSGI wrapper that refuses every request without a Digest ``Authorization`` with a 401 and a challenge."""

    def __init__(self, app: Callable[[WSGIEnviron, Any], Iterable[bytes]]) -> None:
        self.app = app
        self.refused = 0

    def __call__(self, environ: WSGIEnviron, start_response: Any) -> Iterable[bytes]:
        if environ.get("HTTP_AUTHORIZATION", "").startswith("Digest "):
            return self.app(environ, start_response)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        self.refused += 1
        challenge = 'Digest realm="mcp", nonce="n0nce", qop="auth", algorithm=MD5'
        start_response("401 Unauthorized", [("WWW-Authenticate", challenge), ("Content-Length", "0")])
        return [b""]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_an_auth_that_answers_a_challenge_gets_through(serve: Any, era: str) -> None:
    # requests' digest auth reads the refused request's cookie jar as it sends it again with its answer.
    recorder, base = serve()
    gate = DigestGate(recorder.app)
    recorder.app = gate
    auth = requests.auth.HTTPDigestAuth("ada", "lovelace")
    with http_client(f"{base}/mcp", era=era, auth=auth) as client:
        assert client.call_tool("echo", {"text": "in"}).content[0].text == "in"  # type: ignore[union-attr]
    assert gate.refused >= 1
    answered = [seen for seen in recorder.seen if seen["authorization"].startswith("Digest ")]
    assert answered and 'username="ada"' in answered[-1]["authorization"]
