"""CORS for the MCP HTTP app: off by default, on with an allow-list of origins.

Raw requests (what a browser sends: a preflight ``OPTIONS``, then the actual
request with ``Origin``) against a real embedded server (:func:`start_http`)
and against the app under waitress in a subprocess. A real browser engine
(headless Chromium) drives the same server in ``test_cors_browser.py``.
"""

from __future__ import annotations

import collections
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcp_sync import MCPServer
from mcp_sync.server import start_http
from mcp_sync.server.http.cors import ALLOWED_HEADERS, CORSPolicy

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).parent.parent.parent
TIMEOUT = 10.0
INSPECTOR = "https://inspector.example"
EVIL = "https://evil.example"
BOTH = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cors", "version": "1"}},
}
PREFLIGHT = {
    "Origin": INSPECTOR,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type, authorization, mcp-protocol-version",
}
EXPOSED = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"
METADATA = {"authorization_servers": ["https://auth.example"], "scopes_supported": ["mcp", "admin"]}


def cors_headers(response: requests.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name.lower().startswith("access-control-")}


def post(url: str, origin: str | None = INSPECTOR, **headers: str) -> requests.Response:
    headers = {"Accept": BOTH, "Content-Type": "application/json", **headers}
    if origin is not None:
        headers["Origin"] = origin
    return requests.post(url, json=INITIALIZE, headers=headers, timeout=TIMEOUT)


def check_actual(response: requests.Response, origin: str = INSPECTOR) -> None:
    """An answer a page at ``origin`` may read: its origin echoed, the MCP headers exposed."""
    assert cors_headers(response) == {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": EXPOSED,
    }
    assert response.headers["Vary"] == "Origin"


def tokens(token: str) -> dict[str, Any] | None:
    return {"good": {"sub": "alice", "scope": "mcp"}, "admin": {"sub": "bob", "scope": "mcp admin"}}.get(token)


# ------------------------------------------------------------------ the policy


def test_credentials_are_never_allowed_with_any_origin() -> None:
    with pytest.raises(ValueError, match="credentials"):
        CORSPolicy(["*"], allow_credentials=True)
    with pytest.raises(ValueError, match="credentials"):
        CORSPolicy([INSPECTOR, "*"], allow_credentials=True)


@pytest.mark.parametrize("origin", ["https://inspector.example/", "inspector.example", "https://a.example/mcp", ""])
def test_an_origin_is_a_scheme_and_a_host(origin: str) -> None:
    with pytest.raises(ValueError, match="not a CORS origin"):
        CORSPolicy([origin])


def test_bad_settings_are_refused() -> None:
    with pytest.raises(TypeError, match="list of origins"):
        CORSPolicy(INSPECTOR)
    with pytest.raises(ValueError, match="max_age"):
        CORSPolicy([INSPECTOR], max_age=-1)


def test_origins_match_like_allowed_origins() -> None:
    policy = CORSPolicy([INSPECTOR, "http://localhost:*", "null"])
    assert policy.allows("https://INSPECTOR.example")
    assert policy.allows("http://localhost:6274") and policy.allows("http://localhost")
    assert policy.allows("null")
    assert not policy.allows("http://localhost.evil.example:80")
    assert not policy.allows("http://inspector.example")  # another scheme is another origin
    assert not policy.allows(None)
    assert policy.response_headers(EVIL) == []
    assert policy.response_headers(None) == []


def test_preflight_allows_the_param_headers_asked_for() -> None:
    policy = CORSPolicy([INSPECTOR], max_age=120)
    asked = "content-type, mcp-param-region,Mcp-Param-Region , mcp-param-bad name, x-custom, mcp-param-Tier"
    headers = dict(policy.preflight_headers(INSPECTOR, asked))
    assert headers == {
        "Access-Control-Allow-Origin": INSPECTOR,
        "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
        "Access-Control-Allow-Headers": ", ".join(
            [*ALLOWED_HEADERS, "mcp-param-region", "Mcp-Param-Region", "mcp-param-Tier"]
        ),
        "Access-Control-Max-Age": "120",
    }
    assert dict(policy.preflight_headers(INSPECTOR, None))["Access-Control-Allow-Headers"] == (
        "Content-Type, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID"
    )


def test_apply_adds_vary_once_and_keeps_a_preflights_headers() -> None:
    policy = CORSPolicy([INSPECTOR])
    assert policy.apply([("Vary", "Accept")], None) == [("Vary", "Accept, Origin")]
    assert policy.apply([("vary", "accept, origin")], None) == [("vary", "accept, origin")]
    preflight = policy.preflight_headers(INSPECTOR, None)
    assert policy.apply(preflight, INSPECTOR) == [*preflight, ("Vary", "Origin")]
    anyone = CORSPolicy(["*"])
    assert anyone.apply([], EVIL) == [
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", EXPOSED),
    ]


# ------------------------------------------------------------ the embedded server


@pytest.fixture
def url() -> Iterator[str]:
    with start_http(MCPServer("cors"), cors_origins=[INSPECTOR, "http://localhost:*"]) as running:
        yield running.url


def test_a_preflight_is_answered(url: str) -> None:
    response = requests.options(url, headers=PREFLIGHT, timeout=TIMEOUT)
    assert response.status_code == 204
    assert response.content == b""
    assert cors_headers(response) == {
        "Access-Control-Allow-Origin": INSPECTOR,
        "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
        "Access-Control-Allow-Headers": ", ".join(ALLOWED_HEADERS),
        "Access-Control-Max-Age": "600",
    }
    assert response.headers["Vary"] == "Origin"


def test_a_preflight_allows_the_mcp_param_headers_it_asks_for(url: str) -> None:
    asked = {**PREFLIGHT, "Access-Control-Request-Headers": "mcp-method, mcp-name, mcp-param-region"}
    response = requests.options(url, headers=asked, timeout=TIMEOUT)
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Headers"].endswith(", Last-Event-ID, mcp-param-region")


def test_an_actual_request_is_readable_cross_origin(url: str) -> None:
    response = post(url)
    assert response.status_code == 200
    check_actual(response)
    assert response.headers["Mcp-Session-Id"]
    local = post(url, "http://localhost:6274")  # a pattern of the list: the page's exact origin is echoed
    check_actual(local, "http://localhost:6274")


def test_errors_carry_the_cors_headers(url: str) -> None:
    base = url.removesuffix("/mcp")
    missing = requests.get(base + "/nothing", headers={"Origin": INSPECTOR}, timeout=TIMEOUT)
    assert missing.status_code == 404
    check_actual(missing)
    no_session = requests.get(url, headers={"Origin": INSPECTOR, "Accept": "text/event-stream"}, timeout=TIMEOUT)
    assert no_session.status_code == 400
    check_actual(no_session)
    not_a_preflight = requests.options(url, headers={"Origin": INSPECTOR}, timeout=TIMEOUT)
    assert not_a_preflight.status_code == 405
    check_actual(not_a_preflight)


def test_an_origin_not_listed_gets_no_cors_headers(url: str) -> None:
    # Allowed by the Origin check (a loopback page) but not listed for CORS: served, not readable by the page.
    loopback = "http://127.0.0.1:9"
    assert post(url, loopback).status_code == 200
    assert cors_headers(post(url, loopback)) == {}
    refused = requests.options(url, headers={**PREFLIGHT, "Origin": loopback}, timeout=TIMEOUT)
    assert refused.status_code == 405
    assert cors_headers(refused) == {}
    # Neither: refused by the Origin check, without CORS headers.
    for response in (post(url, EVIL), requests.options(url, headers={**PREFLIGHT, "Origin": EVIL}, timeout=TIMEOUT)):
        assert response.status_code == 403
        assert cors_headers(response) == {}
        assert response.headers["Vary"] == "Origin"
    assert cors_headers(post(url, None)) == {}
    assert post(url, None).headers["Vary"] == "Origin"


def test_the_legacy_sse_endpoints(url: str) -> None:
    base = url.removesuffix("/mcp")
    preflight = requests.options(base + "/messages/?session_id=x", headers=PREFLIGHT, timeout=TIMEOUT)
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == INSPECTOR
    with requests.get(
        base + "/sse", headers={"Origin": INSPECTOR, "Accept": "text/event-stream"}, stream=True, timeout=TIMEOUT
    ) as stream:
        assert stream.status_code == 200
        check_actual(stream)
        endpoint = next(stream.iter_lines(decode_unicode=True, delimiter="\n\n"))
        path = endpoint.split("data: ", 1)[1]
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        accepted = requests.post(base + path, json=notification, headers={"Origin": INSPECTOR}, timeout=TIMEOUT)
        assert accepted.status_code == 202
        check_actual(accepted)
    unknown = requests.post(
        base + "/messages/?session_id=nope", json=notification, headers={"Origin": INSPECTOR}, timeout=TIMEOUT
    )
    assert unknown.status_code == 404
    check_actual(unknown)


def test_cors_is_off_by_default() -> None:
    with start_http(MCPServer("no-cors")) as running:
        preflight = requests.options(
            running.url, headers={**PREFLIGHT, "Origin": "http://localhost:1"}, timeout=TIMEOUT
        )
        assert preflight.status_code == 405
        assert cors_headers(preflight) == {}
        assert "Vary" not in preflight.headers
        # And a listed-nowhere origin is still refused by the Origin check.
        assert post(running.url, INSPECTOR).status_code == 403


def test_any_origin_without_credentials() -> None:
    with start_http(MCPServer("anyone"), cors_origins=["*"]) as running:
        preflight = requests.options(running.url, headers={**PREFLIGHT, "Origin": EVIL}, timeout=TIMEOUT)
        assert preflight.status_code == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == "*"
        assert "Access-Control-Allow-Credentials" not in preflight.headers
        response = post(running.url, EVIL)
        assert response.status_code == 200
        assert cors_headers(response) == {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": EXPOSED}
        assert "Vary" not in response.headers
    with pytest.raises(ValueError, match="credentials"):
        start_http(MCPServer("refused"), cors_origins=["*"], cors_allow_credentials=True)


def test_credentials_when_configured() -> None:
    with start_http(
        MCPServer("creds"), cors_origins=[INSPECTOR], cors_allow_credentials=True, cors_max_age=60
    ) as running:
        preflight = requests.options(running.url, headers=PREFLIGHT, timeout=TIMEOUT)
        assert preflight.headers["Access-Control-Allow-Credentials"] == "true"
        assert preflight.headers["Access-Control-Max-Age"] == "60"
        response = post(running.url)
        assert response.status_code == 200
        assert response.headers["Access-Control-Allow-Credentials"] == "true"
        assert response.headers["Access-Control-Allow-Origin"] == INSPECTOR


def test_auth_refusals_and_metadata_are_readable_cross_origin() -> None:
    options: dict[str, Any] = {"token_verifier": tokens, "resource_metadata": METADATA, "cors_origins": [INSPECTOR]}
    with start_http(MCPServer("protected"), **options) as running:
        base = running.url.removesuffix("/mcp")
        # A preflight carries no token: answered before authentication.
        assert requests.options(running.url, headers=PREFLIGHT, timeout=TIMEOUT).status_code == 204
        unauthorized = post(running.url)
        assert unauthorized.status_code == 401
        check_actual(unauthorized)
        assert "resource_metadata=" in unauthorized.headers["WWW-Authenticate"]
        assert post(running.url, Authorization="Bearer good").status_code == 200
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            preflight = requests.options(
                base + path, headers={"Origin": INSPECTOR, "Access-Control-Request-Method": "GET"}, timeout=TIMEOUT
            )
            assert preflight.status_code == 204
            metadata = requests.get(base + path, headers={"Origin": INSPECTOR}, timeout=TIMEOUT)
            assert metadata.status_code == 200
            check_actual(metadata)
    scoped = {**options, "required_scopes": ["admin"]}
    with start_http(MCPServer("admin-only"), **scoped) as running:
        forbidden = post(running.url, Authorization="Bearer good")
        assert forbidden.status_code == 403
        check_actual(forbidden)
        assert 'error="insufficient_scope"' in forbidden.headers["WWW-Authenticate"]


# ------------------------------------------------------------------ waitress

APP = f"""
from mcp_sync import MCPServer
from mcp_sync.server import StreamableHTTPApp

application = StreamableHTTPApp(
    MCPServer("cors-waitress"), cors_origins=[{INSPECTOR!r}], token_verifier={{"good": {{"sub": "a"}}}}.get
)
"""


@pytest.fixture(scope="module")
def waitress_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("cors")
    (folder / "cors_app.py").write_text(APP)
    argv = [sys.executable, "-u", "-m", "waitress", "--listen=127.0.0.1:0", "--threads=4", "cors_app:application"]
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}
    process = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(
        target=functools.partial(collections.deque, map(lines.put, process.stdout), 0), daemon=True
    ).start()
    try:
        output = []
        while True:
            try:
                line = lines.get(timeout=TIMEOUT)  # waitress says where it listens once it does
            except queue.Empty:
                pytest.fail(f"waitress did not start:\n{''.join(output)}")
            output.append(line)
            if "Serving on " in line:  # "INFO:waitress:Serving on http://127.0.0.1:PORT"
                yield line.split("Serving on ", 1)[1].strip() + "/mcp"
                break
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:  # waitress ignored SIGTERM: it must not outlive the test
            process.kill()
            process.wait(TIMEOUT)


def test_under_waitress(waitress_url: str) -> None:
    preflight = requests.options(waitress_url, headers=PREFLIGHT, timeout=TIMEOUT)
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == INSPECTOR
    assert preflight.headers["Access-Control-Allow-Headers"] == ", ".join(ALLOWED_HEADERS)
    unauthorized = post(waitress_url)
    assert unauthorized.status_code == 401
    check_actual(unauthorized)
    response = post(waitress_url, Authorization="Bearer good")
    assert response.status_code == 200
    check_actual(response)
    assert cors_headers(post(waitress_url, EVIL)) == {}
