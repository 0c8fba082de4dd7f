"""The sandbox, from inside a hostile app: each way out it tries fails, in headless Chromium.

The app (``hostile_app.html``, ours) is served by an in-process MCPServer and
shown by an :class:`AppHost` on two loopback ports. It tries to read the host
page, to post to the host page past its proxy, to forge the host's message to
the proxy, to call a tool whose visibility lacks ``"app"``, to fetch an origin
it did not declare (and the host page's own), and to open a ``javascript:``
link; it writes what happened into its page, which the test reads. A
recording HTTP server on another port sees every request that gets out.
The same app with that server's origin declared does reach it: the CSP is the
resource's own.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browsing import WAIT, browser, served_host, until

from mcp_sync import MCPServer, connect
from mcp_sync.apps.policy import APP_MIME_TYPE
from mcp_sync.types import CallToolResult, TextContent

pytestmark = pytest.mark.timeout(120)

HOSTILE = (Path(__file__).parent / "hostile_app.html").read_text()


@contextlib.contextmanager
def recorder() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that answers everything and records each path asked; its origin and the paths."""
    hits: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=httpd.serve_forever, name="recorder", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


def hostile_server(declared: list[str]) -> tuple[MCPServer, list[str]]:
    """The hostile app's server: ``probe`` shows it, ``count`` (app-visible) and ``secret`` (model only) record."""
    server = MCPServer("hostile", "1.0")
    calls: list[str] = []

    def count(arguments: dict[str, Any], ctx: Any) -> CallToolResult:
        calls.append(f"count via {arguments.get('via')}")
        return CallToolResult(content=[TextContent(text="counted")], structured_content={"counted": len(calls)})

    def secret(arguments: dict[str, Any], ctx: Any) -> str:
        calls.append("secret")
        return "the secret"

    ui = {"ui": {"resourceUri": "ui://hostile/app.html"}}
    server.register_tool("probe", lambda arguments, ctx: "probing", meta=ui)
    server.register_tool("count", count, meta={"ui": {"resourceUri": "ui://hostile/app.html", "visibility": ["app"]}})
    server.register_tool(
        "secret", secret, meta={"ui": {"resourceUri": "ui://hostile/app.html", "visibility": ["model"]}}
    )
    meta = {
        "ui": {
            "permissions": {"camera": {}, "microphone": {}},
            "csp": {"connectDomains": declared, "resourceDomains": declared},
        }
    }
    server.register_resource("ui://hostile/app.html", lambda uri, ctx: HOSTILE, mime_type=APP_MIME_TYPE, meta=meta)
    return server, calls


def run_hostile_app(declared_recorder: bool) -> tuple[dict[str, Any], list[str], list[str], dict[str, Any]]:
    """Show the hostile app; what it found, the server's calls, the recorder's hits, and what the frames hold."""
    with recorder() as (origin, hits), served_host(permissions=["camera"]) as host:
        server, calls = hostile_server([origin] if declared_recorder else [])
        with connect(server) as client, browser() as chromium:
            page_origin = host.page_origin
            view = host.show(client, "probe", {"recorder": origin, "host": f"{page_origin}/host.js"})
            view.bridge.deliver_result(client.call_tool("probe"))
            context = chromium.new_context()
            page = context.new_page()
            page.goto(view.url, timeout=WAIT * 1000)
            app = until(lambda: next((f for f in page.frames if "/app?" in f.url), None), "the app's frame", page)
            text = until(
                lambda: (out := app.locator("#out").inner_text()) != "running" and out, "the app's report", page
            )
            proxy = app.parent_frame
            assert proxy is not None
            frames = {
                "page_allow": page.locator("iframe").get_attribute("allow"),
                "app_allow": proxy.locator("iframe").get_attribute("allow"),
                "proxy_iframes": proxy.locator("iframe").count(),
                "pages": len(context.pages),
            }
            view.close()
            context.close()
    return json.loads(text), calls, hits, frames


def test_every_way_out_of_the_sandbox_fails() -> None:
    found, calls, hits, frames = run_hostile_app(declared_recorder=False)
    assert found["done"] is True
    # Nothing of the host page is reachable (another origin).
    assert found["top_document"] == "blocked: SecurityError"
    assert found["top_location"] == "blocked: SecurityError"
    assert found["top_storage"] == "blocked: SecurityError"
    # Posting past the proxy is dropped by the host page; the forged host message is dropped by the proxy.
    assert found["direct_to_host"] == "no answer"
    assert frames["proxy_iframes"] == 1
    # An app-invisible tool is refused, and the server never sees the call; the visible one goes through.
    assert found["secret"] == -32000
    assert found["count"] == {"counted": 1}
    assert calls == ["count via proxy"]
    # No connection to an origin it did not declare, nor to the host page's: nothing reached the recorder.
    assert found["fetch_recorder"] == "blocked: TypeError"
    assert found["fetch_host"] == "blocked: TypeError"
    assert found["image"] == "failed"
    assert hits == []
    assert any(violation.startswith("connect-src") for violation in found["violations"])
    # A javascript: link is refused by the host, and the frame may not open windows itself.
    assert found["javascript_link"] == -32000
    assert found["window_open"] == "blocked"
    assert frames["pages"] == 1
    # Only the granted permission reaches the frames' allow (the app asked for camera and microphone).
    assert frames["page_allow"] == frames["app_allow"] == "camera"
    # And the app has a real origin: storage works.
    assert found["storage"] == "v"


def test_a_declared_origin_is_reachable() -> None:
    found, _, hits, _ = run_hostile_app(declared_recorder=True)
    assert found["fetch_recorder"] == "fetched"
    assert found["fetch_host"] == "blocked: TypeError"  # still undeclared
    assert sorted(hits) == ["/fetch", "/image.png"]  # (the empty answer is no image: the app saw it fail)
