"""The official Python SDK's OAuth client against our protected server, with a real authorization server.

``examples/protected_server.py``'s server (its ``whoami`` and ``admin_reset``,
with the options its ``main`` gives :func:`start_http`, every request needing
``mcp:read``) runs here on 127.0.0.1 behind a :class:`JWTVerifier` for
oidc-provider (``tests/authserver.py``), the verifier wrapped so that the test
sees each token it accepted. ``tests/servers/sdk_oauth_client.py`` runs under
the SDK's python (``tests/peers.py``) and connects with the SDK's
``OAuthClientProvider``: everything between the SDK and the two servers
(discovery, registration, the code flow with PKCE, the token request) is
theirs, over HTTP. Only the person at the browser is this test:
:meth:`AuthServer.approve` logs in and consents, and the URL oidc-provider
redirects to goes back to the script.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import peers
import pytest
import requests
from authserver import REDIRECT_URI, USERNAME, AuthServer, running_authorization_server
from helpers import free_port

from mcp_sync.server import start_http
from mcp_sync.server.authorization.verifiers import JWTVerifier

pytestmark = pytest.mark.timeout(180)  # the first run installs the peers

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "protected_server.py"
SCRIPT = ROOT / "tests" / "servers" / "sdk_oauth_client.py"
LINE_TIMEOUT = 30.0
"""The longest the script may take to say its next line (seconds)."""
STOP_TIMEOUT = 10.0


def load_example() -> ModuleType:
    """A fresh copy of the example's module (its own server and counter)."""
    spec = importlib.util.spec_from_file_location("protected_server_for_sdk_test", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recording:
    """A token verifier that remembers the claims of every token the wrapped one accepted."""

    def __init__(self, inner: JWTVerifier) -> None:
        self.inner = inner
        self.accepted: list[dict[str, Any]] = []

    def __call__(self, token: str) -> dict[str, Any] | None:
        claims = self.inner(token)
        if claims is not None:
            self.accepted.append(dict(claims))
        return claims


@contextlib.contextmanager
def protected_server() -> Iterator[tuple[str, AuthServer, Recording]]:
    """The example's server for oidc-provider's JWTs, as its ``main`` starts it."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with running_authorization_server(resource) as authserver:
        example = load_example()
        verifier = Recording(JWTVerifier(authserver.issuer, resource, jwks_url=authserver.metadata["jwks_uri"]))
        with start_http(
            example.server,
            port=port,
            token_verifier=verifier,
            required_scopes=["mcp:read"],
            resource_metadata={"authorization_servers": [authserver.issuer], "resource": resource},
        ) as running:
            assert running.url == resource
            yield resource, authserver, verifier


class Script:
    """The SDK's script, one JSON object a line each way; every read bounded by :data:`LINE_TIMEOUT`."""

    def __init__(self, url: str, client_id: str | None = None) -> None:
        self.process = subprocess.Popen(
            [peers.peer_python(), str(SCRIPT), url, REDIRECT_URI, *([client_id] if client_id else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=peers.peer_environment(),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def next(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=LINE_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"the SDK's script said nothing for {LINE_TIMEOUT:.0f}s") from None
        if line is None:
            code = self.process.wait(STOP_TIMEOUT)
            raise AssertionError(f"the SDK's script exited ({code}):\n{''.join(self.stderr)[-4000:]}")
        message: dict[str, Any] = json.loads(line)
        return message

    def answer(self, redirect: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(redirect + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(STOP_TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def call_admin_reset(url: str, token: str) -> requests.Response:
    """``admin_reset`` with ``token``, as one 2026-07-28 request: what our server answers that token."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "admin_reset", "arguments": {}, "_meta": meta}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "admin_reset",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return requests.post(url, json=body, headers=headers, timeout=LINE_TIMEOUT)


def sign_in(script: Script, authserver: AuthServer, url: str) -> dict[str, str]:
    """The SDK's first authorization request, approved by alice; its parameters."""
    first = script.next()["authorize"]
    assert first.startswith(f"{authserver.metadata['authorization_endpoint']}?")
    asked = query(first)
    assert asked["resource"] == url  # RFC 8707, from our RFC 9728 metadata
    assert asked["code_challenge_method"] == "S256" and asked["code_challenge"]
    assert asked["scope"] == "mcp:read offline_access"  # our 401's scope, plus refresh tokens
    assert asked["redirect_uri"] == REDIRECT_URI
    callback = authserver.approve(first)
    assert "code" in query(callback)
    script.answer(callback)
    return asked


def check_whoami(report: dict[str, Any], authserver: AuthServer, verifier: Recording, url: str) -> None:
    """whoami ran for the account approved at oidc-provider, with a token oidc-provider issued and we verified."""
    client_id = report["client"]["client_id"]
    whoami = report["whoami"]
    assert whoami["isError"] is False
    assert whoami["structuredContent"] == {"subject": USERNAME, "client_id": client_id, "scopes": ["mcp:read"]}
    assert report["authorizations_before_admin"] == 1
    assert report["scope_before_admin"] == "mcp:read"  # oidc-provider grants offline_access as a refresh token
    first = verifier.accepted[0]
    assert first["iss"] == authserver.issuer and first["aud"] == url and first["sub"] == USERNAME
    assert first["client_id"] == client_id
    assert authserver.verify(report["tokens"]["access_token"])["client_id"] == client_id


def test_the_sdk_signs_in_calls_whoami_and_its_step_up_is_refused_by_the_registered_scope() -> None:
    with protected_server() as (url, authserver, verifier):
        script = Script(url)
        try:
            asked = sign_in(script, authserver, url)
            # admin_reset: our 403 insufficient_scope makes the SDK sign in again, adding admin (step-up) ...
            second = script.next()["authorize"]
            assert query(second)["client_id"] == asked["client_id"]  # the registration made at the first 401
            assert query(second)["scope"] == "mcp:read offline_access admin"
            # ... which oidc-provider refuses: the SDK registered the scope it first asked for, and a
            # registered scope is an allow-list there.
            refusal = authserver.approve(second)
            assert query(refusal)["error"] == "invalid_scope"
            script.answer(refusal)
            report = script.next()["report"]
            assert script.process.wait(STOP_TIMEOUT) == 0, "".join(script.stderr)
        finally:
            script.close()
        assert report["initialize"]["serverInfo"]["name"] == "protected"
        assert report["client"]["client_id"] == asked["client_id"]
        assert report["client"]["scope"] == "mcp:read offline_access"
        check_whoami(report, authserver, verifier, url)
        # What the SDK was answered: the token it holds gets 403 insufficient_scope naming admin.
        refused = call_admin_reset(url, report["tokens"]["access_token"])
        assert refused.status_code == 403
        assert 'error="insufficient_scope"' in refused.headers["WWW-Authenticate"]
        assert 'scope="admin mcp:read"' in refused.headers["WWW-Authenticate"]
    # The failed step-up does not fail the call alone: the SDK's transport ends the whole session with it.
    assert "admin_reset" not in report and "admin_reset_error" not in report
    assert report["session_error"]["type"] == "ExceptionGroup"
    (member,) = report["session_error"]["members"]
    assert member["type"] == "OAuthFlowError"
    assert "'error': 'invalid_scope'" in member["message"]
    assert verifier.accepted and {claims["scope"] for claims in verifier.accepted} == {"mcp:read"}


def test_with_a_client_registered_without_a_scope_the_sdk_steps_up_and_admin_reset_runs() -> None:
    with protected_server() as (url, authserver, verifier):
        registered = authserver.register()  # no scope: every supported scope may be asked for
        script = Script(url, registered["client_id"])
        try:
            asked = sign_in(script, authserver, url)
            assert asked["client_id"] == registered["client_id"]
            second = script.next()["authorize"]
            assert query(second)["scope"] == "mcp:read offline_access admin"
            script.answer(authserver.approve(second))
            report = script.next()["report"]
            assert script.process.wait(STOP_TIMEOUT) == 0, "".join(script.stderr)
        finally:
            script.close()
        assert report["client"]["client_id"] == registered["client_id"]
        check_whoami(report, authserver, verifier, url)
    admin_reset = report["admin_reset"]
    assert admin_reset["isError"] is False
    assert admin_reset["content"] == [{"type": "text", "text": "reset number 1, by alice"}]
    assert len(report["authorizations"]) == 2
    assert report["tokens"]["scope"] == "mcp:read admin"
    last = verifier.accepted[-1]
    assert set(last["scope"].split()) == {"mcp:read", "admin"} and last["sub"] == USERNAME
    assert "session_error" not in report
