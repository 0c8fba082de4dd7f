"""CORS with a real browser engine: headless Chromium runs a page whose script calls our server from another origin.

A page is served by a plain ``http.server`` on one port of 127.0.0.1; two MCP
servers (the embedded server, :class:`RunningHTTPServer`) listen on two
others. One lists the page's origin in ``cors_origins``; the other lists
only another origin. Chromium (``--headless --dump-dom``) loads the page;
its script makes the calls with ``fetch()`` and writes what it saw into the
page, which Chromium prints once the page has settled and the test reads:

- to the listed server: ``initialize`` with ``Content-Type:
  application/json``, ``Accept``, ``MCP-Protocol-Version`` and
  ``Authorization`` (headers that make the browser send a preflight first),
  the ``Mcp-Session-Id`` response header read by the script (so exposed),
  then ``notifications/initialized`` and
  ``tools/call`` with that session id, and a call without a token whose 401
  ``WWW-Authenticate`` the script reads;
- to the other server: the same ``initialize``, which the browser must block
  (``fetch`` rejects).

The servers record every request they got, so the test also sees that the
preflights really arrived, and what they were answered: without the CORS
headers the browser would not have sent the calls.

Page and servers are all on 127.0.0.1, in the same (loopback) address space,
so Chromium's Private Network Access rules do not apply; the origins differ
by port only. Chromium needs no display (``--headless``), runs without its
sandbox (``--no-sandbox``: it runs as root in CI containers), with a fresh
profile in a temporary directory and its background networking off, so it
makes no request beyond the loopback. It runs in its own process group, which
is killed at the end, so none of its helper processes outlives the test.
Without Chromium the test skips, except where nothing may skip
(``peers.required()``): there it fails.
"""

from __future__ import annotations

import contextlib
import html
import http.server
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import peers
import pytest

from mcp_sync import Context, MCPServer
from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp
from mcp_sync.server.http.wire import StartResponse, WSGIEnviron

pytestmark = pytest.mark.timeout(60)

BROWSER_TIMEOUT = 30.0
"""The longest Chromium may take to load the page, run its script and print the page (seconds)."""
VIRTUAL_TIME_BUDGET_MS = 10_000
"""Chromium's virtual time for the page (it stands still while a fetch is pending): the page is printed after it."""
STOP_TIMEOUT = 10.0
OTHER_ORIGIN = "https://inspector.example"
TOKEN = "browser-token"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>cross-origin MCP</title></head>
<body><pre id="outcome">pending</pre>
<script>
const params = new URLSearchParams(location.search);
const BASE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                      "MCP-Protocol-Version": "2025-11-25"};
const INITIALIZE = {jsonrpc: "2.0", id: 1, method: "initialize", params: {
  protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {name: "browser", version: "1"}}};

function message(text) {  // a JSON body, or the last message of an SSE stream
  if (!text) return null;
  if (text.trimStart().startsWith("{")) return JSON.parse(text);
  const data = text.split("\\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim());
  return JSON.parse(data.filter((line) => line).pop());
}

async function post(url, body, headers) {
  const response = await fetch(url, {method: "POST", headers: {...BASE_HEADERS, ...headers},
                                     body: JSON.stringify(body)});
  return {status: response.status, session: response.headers.get("Mcp-Session-Id"),
          challenge: response.headers.get("WWW-Authenticate"), body: message(await response.text())};
}

async function attempt(outcome, name, action) {
  try { outcome[name] = await action(); }
  catch (error) { outcome[name] = {rejected: `${error.name}: ${error.message}`}; }
}

(async () => {
  const outcome = {};
  const listed = params.get("listed"), unlisted = params.get("unlisted");
  const bearer = {"Authorization": `Bearer ${params.get("token")}`};
  await attempt(outcome, "initialize", () => post(listed, INITIALIZE, bearer));
  const session = {...bearer, "Mcp-Session-Id": outcome.initialize.session};
  await attempt(outcome, "initialized", () => post(listed, {jsonrpc: "2.0", method: "notifications/initialized"},
                                                     session));
  await attempt(outcome, "whoami", () => post(listed, {jsonrpc: "2.0", id: 2, method: "tools/call",
                                                        params: {name: "whoami", arguments: {}}}, session));
  await attempt(outcome, "no_token", () => post(listed, INITIALIZE, {}));
  await attempt(outcome, "unlisted", () => post(unlisted, INITIALIZE, bearer));
  outcome.done = true;
  document.getElementById("outcome").textContent = JSON.stringify(outcome);
})();
</script></body></html>
"""

server = MCPServer("browser-cors", "1.0")


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """The caller's subject, as the bearer token said."""
    return {"subject": ctx.auth.subject if ctx.auth is not None else None}


def tokens(token: str) -> dict[str, Any] | None:
    return {"sub": "browser-user", "scope": "mcp"} if token == TOKEN else None


@dataclass
class Seen:
    """One request an MCP server got, and what it answered."""

    method: str
    origin: str | None
    headers: dict[str, str]
    status: int = 0
    answer: dict[str, str] = field(default_factory=dict)


class RecordingApp(StreamableHTTPApp):
    """The MCP app, remembering every request and the status and headers of its answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[Seen] = []

    def __call__(self, environ: WSGIEnviron, start_response: StartResponse) -> Iterable[bytes]:
        headers = {name[5:].replace("_", "-").lower(): value for name, value in environ.items() if name[:5] == "HTTP_"}
        seen = Seen(environ["REQUEST_METHOD"], environ.get("HTTP_ORIGIN"), headers)
        self.seen.append(seen)

        def recording(status: str, response_headers: list[tuple[str, str]], *exc_info: Any) -> Any:
            seen.status = int(status.split(" ", 1)[0])
            seen.answer = {name.lower(): value for name, value in response_headers}
            return start_response(status, response_headers, *exc_info)

        return super().__call__(environ, recording)


@contextlib.contextmanager
def page_server() -> Iterator[str]:
    """A plain HTTP server for :data:`PAGE` at ``/`` on 127.0.0.1; its origin."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.encode() if self.path.startswith("/?") else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, name="cors-page", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(STOP_TIMEOUT)


def run_page(browser: str, url: str, profile: Path) -> dict[str, Any]:
    """Load ``url`` in headless Chromium; the outcome its script wrote into the page."""
    argv = [
        browser,
        "--headless",
        *peers.chromium_flags(),
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
        "--dump-dom",
        url,
    ]
    env = {**os.environ, "HOME": str(profile)}  # nothing of the user's own profile or caches
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    try:
        dom, log = process.communicate(timeout=BROWSER_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        dom, log = process.communicate(timeout=STOP_TIMEOUT)
        problem = f"Chromium did not print the page within {BROWSER_TIMEOUT:.0f}s:\n{log[-3000:]!r}"
        raise AssertionError(problem) from None
    finally:
        with contextlib.suppress(ProcessLookupError):  # its helpers (zygote, GPU, network service), if any are left
            os.killpg(process.pid, signal.SIGKILL)
    found = re.search(rb'<pre id="outcome">(.*?)</pre>', dom, re.S)
    assert process.returncode == 0 and found is not None, f"Chromium ({process.returncode}) printed:\n{dom[-3000:]!r}"
    text = html.unescape(found.group(1).decode())
    assert text != "pending", f"the page's script did not finish:\n{log[-3000:]!r}"
    outcome: dict[str, Any] = json.loads(text)
    return outcome


def answered(outcome: dict[str, Any], name: str) -> dict[str, Any]:
    """What the page read of the answer to its call ``name``; AssertionError when the browser blocked the call."""
    result: dict[str, Any] = outcome[name]
    assert "rejected" not in result, f"the browser blocked {name}: {result['rejected']}"
    return result


def preflight_of(seen: Seen) -> set[str]:
    """The request headers a preflight asked for, lowercased."""
    return {name.strip().lower() for name in seen.headers["access-control-request-headers"].split(",")}


def test_a_page_on_another_origin_calls_the_listed_server_and_is_blocked_by_the_other(tmp_path: Path) -> None:
    browser = peers.chromium()
    with page_server() as origin:
        options: dict[str, Any] = {"token_verifier": tokens, "resource_metadata": {"authorization_servers": []}}
        listed = RecordingApp(server, cors_origins=[origin], **options)
        unlisted = RecordingApp(server, cors_origins=[OTHER_ORIGIN], **options)
        with RunningHTTPServer(listed, "127.0.0.1", 0) as one, RunningHTTPServer(unlisted, "127.0.0.1", 0) as other:
            query = urlencode({"listed": one.url, "unlisted": other.url, "token": TOKEN})
            outcome = run_page(browser, f"{origin}/?{query}", tmp_path / "profile")

    # What the page's script saw.
    assert outcome["done"] is True
    initialize = answered(outcome, "initialize")
    assert initialize["status"] == 200
    assert initialize["session"]  # Mcp-Session-Id, readable because exposed
    assert initialize["body"]["result"]["serverInfo"]["name"] == "browser-cors"
    assert initialize["body"]["result"]["protocolVersion"] == "2025-11-25"
    assert answered(outcome, "initialized")["status"] == 202
    whoami = answered(outcome, "whoami")
    assert whoami["status"] == 200
    assert whoami["body"]["result"]["structuredContent"] == {"subject": "browser-user"}
    no_token = answered(outcome, "no_token")
    assert no_token["status"] == 401
    assert no_token["challenge"].startswith("Bearer ") and "resource_metadata=" in no_token["challenge"]
    assert outcome["unlisted"] == {"rejected": "TypeError: Failed to fetch"}

    # What the listed server got: a preflight first, from the page's origin, approved ...
    first = listed.seen[0]
    assert first.method == "OPTIONS" and first.origin == origin
    assert first.headers["access-control-request-method"] == "POST"
    assert {"authorization", "content-type", "mcp-protocol-version"} <= preflight_of(first)
    assert first.status == 204
    assert first.answer["access-control-allow-origin"] == origin
    assert "Authorization" in first.answer["access-control-allow-headers"]
    # ... then the calls, with their headers, each answered with the page's origin and the exposed headers.
    posts = [seen for seen in listed.seen if seen.method == "POST"]
    assert len(posts) == 4
    assert [seen.headers.get("authorization") for seen in posts] == [f"Bearer {TOKEN}"] * 3 + [None]
    assert initialize["session"] == posts[0].answer["mcp-session-id"]
    assert posts[1].headers["mcp-session-id"] == posts[2].headers["mcp-session-id"] == initialize["session"]
    assert no_token["challenge"] == posts[3].answer["www-authenticate"]
    assert [seen.status for seen in posts] == [200, 202, 200, 401]
    for seen in posts:
        assert seen.origin == origin
        assert seen.answer["access-control-allow-origin"] == origin
        assert "Mcp-Session-Id" in seen.answer["access-control-expose-headers"]
    # Every preflight the listed server got came from the page and was approved.
    assert all(seen.status == 204 for seen in listed.seen if seen.method == "OPTIONS")

    # The other server got the preflight only, answered without CORS headers: the browser sent no call.
    assert [seen.method for seen in unlisted.seen] == ["OPTIONS"]
    (refused,) = unlisted.seen
    assert refused.origin == origin and "authorization" in preflight_of(refused)
    assert refused.status == 405
    assert not any(name.startswith("access-control-") for name in refused.answer)
