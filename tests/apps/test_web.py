"""AppHost's checks, request by request, called as the WSGI application it is (a real server where it matters).

Every request must name one of the two origins in its ``Host`` header, and the
path must be one of that origin's; a view's URLs need its token (the page's
on the page origin, the sandbox's on the sandbox origin); a POST needs the
page's ``Origin``. The pages carry their Content-Security-Policy.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_sync import MCPServer, connect
from mcp_sync.apps import AppHost, AppView
from mcp_sync.client import MCPClient
from mcp_sync.protocol.apps import APP_MIME_TYPE

PAGE = "http://127.0.0.1:8000"
SANDBOX = "http://127.0.0.1:8001"
HTML = "<!doctype html><p>app</p>"


class Answer:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.code = int(status.split()[0])
        self.headers = {name.lower(): value for name, value in headers}
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    host: AppHost,
    method: str,
    url: str,
    *,
    body: Any = None,
    origin: str | None = None,
    host_header: str | None = None,
    length: str | None = None,
) -> Answer:
    parts = urlsplit(url)
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": parts.path,
        "QUERY_STRING": parts.query,
        "HTTP_HOST": host_header if host_header is not None else parts.netloc,
        "CONTENT_LENGTH": length if length is not None else str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
    }
    if origin is not None:
        environ["HTTP_ORIGIN"] = origin
    answer: list[Any] = []
    body_parts = host(environ, lambda status, headers: answer.extend([status, headers]))  # type: ignore[arg-type]
    body = b"".join(body_parts)
    body_parts.close()  # type: ignore[attr-defined]  # as a WSGI server does once it has written the body
    return Answer(answer[0], answer[1], body)


@pytest.fixture
def client() -> Iterator[MCPClient]:
    server = MCPServer("web-server", "1.0")
    server.register_tool("show", lambda arguments, ctx: "shown", meta={"ui": {"resourceUri": "ui://web/app.html"}})
    meta = {
        "ui": {
            "csp": {"connectDomains": ["https://api.example.com"]},
            "permissions": {"camera": {}},
            "prefersBorder": False,
        }
    }
    server.register_resource("ui://web/app.html", lambda uri, ctx: HTML, mime_type=APP_MIME_TYPE, meta=meta)
    with connect(server) as connected:
        yield connected


@pytest.fixture
def host() -> Iterator[AppHost]:
    host = AppHost(PAGE + "/ignored/path", SANDBOX, prefix="/apps/", permissions=["camera"])
    yield host
    host.close()


@pytest.fixture
def view(host: AppHost, client: MCPClient) -> AppView:
    return host.show(client, "show", {"n": 1})


def page_path(view: AppView, action: str = "") -> str:
    return f"{PAGE}/view/{view.id}{'/' + action if action else ''}?token={view.page_token}"


def sandbox_path(view: AppView, rest: str = "") -> str:
    return f"{SANDBOX}/sandbox/{view.id}{rest}?token={view.sandbox_token}"


def test_the_origins_must_differ_and_be_http() -> None:
    with pytest.raises(ValueError, match="another origin"):
        AppHost("http://127.0.0.1:8000/a", "http://127.0.0.1:8000/b")
    with pytest.raises(ValueError, match="not an http"):
        AppHost("javascript:x", SANDBOX)


def test_the_page_holds_the_config_and_its_policy(host: AppHost, view: AppView) -> None:
    assert view.url == f"{PAGE}/apps/view/{view.id}?token={view.page_token}"
    answer = call(host, "GET", page_path(view))
    assert answer.code == 200 and answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert f"frame-src {SANDBOX};" in policy and "frame-ancestors 'none'" in policy and "script-src 'self';" in policy
    assert answer.headers["referrer-policy"] == "no-referrer" and answer.headers["cache-control"] == "no-store"
    text = answer.body.decode()
    config = json.loads(text.split('id="mcp-app-config">')[1].split("</script>")[0])
    assert config["proxy"] == f"{SANDBOX}/apps/sandbox/{view.id}?token={view.sandbox_token}"
    assert config["send"] == f"/apps/view/{view.id}/send?token={view.page_token}"
    assert config["allow"] == "camera" and config["permissions"] == ["camera"] and config["border"] is False
    assert '<script src="/apps/host.js">' in text
    script = call(host, "GET", f"{PAGE}/host.js")
    assert script.code == 200 and b"sandbox-proxy-ready" in script.body


def test_the_proxy_and_the_app_are_served_on_the_sandbox_origin_only(host: AppHost, view: AppView) -> None:
    proxy = call(host, "GET", sandbox_path(view))
    assert proxy.code == 200 and f"frame-ancestors {PAGE}" in proxy.headers["content-security-policy"]
    assert f"/apps/sandbox/{view.id}/app?token={view.sandbox_token}" in proxy.body.decode()
    assert call(host, "GET", f"{SANDBOX}/sandbox.js").code == 200
    app = call(host, "GET", sandbox_path(view, "/app"))
    assert app.code == 200 and app.body == HTML.encode()
    policy = app.headers["content-security-policy"]
    assert "connect-src https://api.example.com;" in policy and f"frame-ancestors {SANDBOX} {PAGE}" in policy
    # Each origin serves its own paths only, and each needs its own token.
    assert call(host, "GET", f"{PAGE}/sandbox/{view.id}?token={view.sandbox_token}").code == 404
    assert call(host, "GET", f"{SANDBOX}/view/{view.id}?token={view.page_token}").code == 404
    assert call(host, "GET", f"{SANDBOX}/sandbox/{view.id}?token={view.page_token}").code == 404
    assert call(host, "GET", f"{PAGE}/view/{view.id}?token={view.sandbox_token}").code == 404
    assert call(host, "GET", sandbox_path(view, "/other")).code == 404
    assert call(host, "POST", sandbox_path(view), origin=PAGE).code == 404
    assert call(host, "GET", f"{SANDBOX}/sandbox/nope?token=x").code == 404


@pytest.mark.parametrize(
    ("method", "url", "origin", "code"),
    [
        ("GET", "{page}/view/{id}?token=wrong", None, 404),
        ("GET", "{page}/view/{id}", None, 404),
        ("GET", "{page}/view/unknown?token={token}", None, 404),
        ("GET", "{page}/", None, 404),
        ("GET", "{page}/other/x?token={token}", None, 404),
        ("GET", "{page}/view/{id}/send?token={token}", None, 404),
        ("POST", "{page}/view/{id}/send?token={token}", None, 403),
        ("POST", "{page}/view/{id}/send?token={token}", "http://evil.example", 403),
        ("POST", "{page}/view/{id}/send?token={token}", SANDBOX, 403),
        ("POST", "{page}/view/{id}?token={token}", PAGE, 404),
        ("POST", "{page}/view/{id}/other?token={token}", PAGE, 404),
    ],
)
def test_a_request_without_its_token_path_or_origin_is_refused(
    host: AppHost, view: AppView, method: str, url: str, origin: str | None, code: int
) -> None:
    target = url.format(page=PAGE, id=view.id, token=view.page_token)
    assert call(host, method, target, origin=origin, body={}).code == code


def test_another_host_name_is_misdirected(host: AppHost, view: AppView) -> None:
    # A DNS-rebinding page reaches the same socket under its own name: refused whatever the path and token.
    assert call(host, "GET", page_path(view), host_header="evil.example:8000").code == 421
    assert call(host, "GET", page_path(view), host_header="localhost:8000").code == 421


def test_the_channel_carries_messages_both_ways(host: AppHost, view: AppView) -> None:
    hello = {"theme": "dark", "locale": "de-DE", "containerDimensions": {"width": 500}}
    assert call(host, "POST", page_path(view, "hello"), origin=PAGE, body=hello).code == 204
    assert view.bridge.context["theme"] == "dark"
    assert call(host, "POST", page_path(view, "hello"), origin=PAGE, body=[1]).code == 404  # not an object
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}}
    assert call(host, "POST", page_path(view, "send"), origin=PAGE, body=initialize).code == 204
    items = call(host, "POST", page_path(view, "poll"), origin=PAGE, body={}).json()
    assert items[0]["app"]["id"] == 1 and items[0]["app"]["result"]["hostContext"]["locale"] == "de-DE"
    initialized = {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}
    call(host, "POST", page_path(view, "send"), origin=PAGE, body=initialized)
    link = {"jsonrpc": "2.0", "id": 2, "method": "ui/open-link", "params": {"url": "https://example.com/"}}
    call(host, "POST", page_path(view, "send"), origin=PAGE, body=link)
    got: list[dict[str, Any]] = []
    while not any("open" in item for item in got):  # the tool input, the link to open, the answer: in some order
        got += call(host, "POST", page_path(view, "poll"), origin=PAGE, body={}).json()
    assert {"open": "https://example.com/"} in got
    assert {
        "app": {"jsonrpc": "2.0", "method": "ui/notifications/tool-input", "params": {"arguments": {"n": 1}}}
    } in got


def test_bad_bodies_are_refused(host: AppHost, view: AppView) -> None:
    send = page_path(view, "send")
    assert call(host, "POST", send, origin=PAGE, body=b"{not json").code == 400
    assert call(host, "POST", send, origin=PAGE, body=b"", length="many").code == 413
    assert call(host, "POST", send, origin=PAGE, body=b"", length=str(5 << 20)).code == 413


def test_closing_tells_the_page_and_a_closed_page_ends_the_view(host: AppHost, client: MCPClient) -> None:
    view = host.show(client, "show")
    closer = threading.Thread(target=view.close, args=("done",))
    closer.start()  # it waits for the page to fetch the news
    assert call(host, "POST", page_path(view, "poll"), origin=PAGE, body={}).json() == [{"closed": "done"}]
    closer.join(10)
    assert not closer.is_alive() and view.closed.is_set() and view.bridge.closed.is_set()
    # A late poll hears it again at once.
    assert call(host, "POST", page_path(view, "poll"), origin=PAGE, body={}).json() == [{"closed": "closed"}]
    view.close()  # a second close does nothing

    other = host.show(client, "show")
    assert call(host, "POST", page_path(other, "close"), origin=PAGE).code == 204  # the page's beacon
    assert other.closed.is_set() and other.bridge.closed.is_set()


def test_close_returns_once_the_news_is_written_not_when_it_is_taken(host: AppHost, view: AppView) -> None:
    # The CLI stops its HTTP server when close() returns: before the poll's answer is written, the page saw its
    # connection cut ("the host is gone") instead of the reason.
    closer = threading.Thread(target=view.close, args=("done",), kwargs={"wait": 30})
    closer.start()
    url = urlsplit(page_path(view, "poll"))
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": url.path, "QUERY_STRING": url.query, "HTTP_HOST": url.netloc}
    body = host({**environ, "HTTP_ORIGIN": PAGE}, lambda status, headers: None)  # type: ignore[arg-type]
    assert json.loads(b"".join(body)) == [{"closed": "done"}]
    closer.join(0.5)
    assert closer.is_alive()  # taken and joined, not yet written
    body.close()  # type: ignore[attr-defined]
    closer.join(10)
    assert not closer.is_alive()


def test_a_poll_with_nothing_to_say_returns_empty_after_its_wait(view: AppView) -> None:
    assert view.poll(0.01) == []


def test_a_closed_host_shows_nothing_more(host: AppHost, client: MCPClient, view: AppView) -> None:
    host.close()
    assert view.closed.is_set()
    with pytest.raises(RuntimeError, match="closed"):
        host.show(client, "show")


def test_teardown_of_a_view_that_never_initialized_asks_nothing_and_closes(host: AppHost, view: AppView) -> None:
    heard: list[Any] = []
    poller = threading.Thread(
        target=lambda: heard.extend(call(host, "POST", page_path(view, "poll"), origin=PAGE).json())
    )
    poller.start()
    assert view.teardown("bye", timeout=10) is False  # nothing may be sent to an app before it initialized
    poller.join(10)
    assert heard == [{"closed": "bye"}] and view.closed.is_set()


def test_a_page_gone_silent_without_its_beacon_ends_the_view(view: AppView) -> None:
    waiter = threading.Thread(target=view.wait_closed, args=(0.5,))
    waiter.start()
    assert not view.closed.wait(1.0)  # no page has polled yet: the URL may not be opened for a while
    assert view.poll(0) == []  # the page polls, and at once again, for longer than the silence allowed:
    assert view.poll(1.5) == []
    assert not view.closed.is_set()  # a poll that waits is the page still there
    assert view.closed.wait(10)  # then nothing: the page is gone, though no beacon came
    waiter.join(10)
    assert not waiter.is_alive() and view.bridge.closed.is_set()
