"""``examples/protected_server.py`` end to end, with a real authorization server (oidc-provider).

The example runs in its own process on 127.0.0.1; ``tests/authserver.py``
runs oidc-provider for its URL and issues its tokens (JWTs checked against
the provider's JWKS, or opaque tokens the example introspects).

- With tokens from a code flow: ``whoami`` answers with the token's subject
  and scopes; ``admin_reset`` gets 403 ``insufficient_scope`` naming
  ``admin`` (and ``mcp:read``, which every request needs) until the token has
  ``admin``; the metadata names the provider.
- Through our OAuth client, signing in with a robot for a browser: ``whoami``
  works after the first sign-in; ``admin_reset`` makes the client sign in
  again asking for ``admin`` too (step-up), and the call succeeds.
"""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from authserver import AuthServer, running_authorization_server
from helpers import free_port

import mcp_sync
from mcp_sync.client.auth import LoopbackInteraction, OAuth

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
TIMEOUT = 20.0

pytestmark = pytest.mark.timeout(120)


@contextlib.contextmanager
def example(port: int, *options: str) -> Iterator[str]:
    """The example serving on ``port`` until the block ends; its endpoint's URL once it listens."""
    argv = [sys.executable, str(ROOT / "examples" / "protected_server.py"), "--port", str(port), *options]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True)
    reader.start()
    try:
        try:
            line = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            process.kill()
            raise AssertionError(f"the example did not start: {process.communicate()[1]}") from None
        assert line.startswith("serving MCP on "), line
        yield line.removeprefix("serving MCP on ").strip()
    finally:
        process.terminate()
        try:
            assert process.wait(TIMEOUT) == 0
        finally:
            process.kill()
            process.communicate()


@contextlib.contextmanager
def protected_example() -> Iterator[tuple[str, AuthServer]]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with running_authorization_server(resource) as authserver:
        options = ("--issuer", authserver.issuer, "--audience", resource)
        with example(port, *options, "--jwks-url", authserver.metadata["jwks_uri"]) as url:
            assert url == resource
            yield url, authserver


def bearer(tokens: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}


def call(url: str, token: dict[str, Any], name: str) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body["params"]["_meta"] = meta  # type: ignore[index]
    headers = {
        **bearer(token),
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return requests.post(url, json=body, headers=headers, timeout=TIMEOUT)


@pytest.mark.interop
def test_whoami_and_a_scope_refused_until_the_token_has_it() -> None:
    with protected_example() as (url, authserver):
        reader = authserver.issue_tokens(url, scope="mcp:read")
        with mcp_sync.connect(url, headers=bearer(reader), timeout=TIMEOUT) as client:
            me = client.call_tool("whoami").structured_content
        assert me is not None and me["subject"] == "alice" and me["scopes"] == ["mcp:read"]
        assert me["client_id"]
        refused = call(url, reader, "admin_reset")
        assert refused.status_code == 403
        challenge = refused.headers["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="admin mcp:read"' in challenge
        metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        assert f'resource_metadata="{metadata_url}"' in challenge
        metadata = requests.get(metadata_url, timeout=TIMEOUT).json()
        assert metadata == {
            "authorization_servers": [authserver.issuer],
            "resource": url,
            "scopes_supported": ["admin", "mcp:read"],
        }
        root = requests.get(url.replace("/mcp", "/.well-known/oauth-protected-resource"), timeout=TIMEOUT).json()
        assert root == metadata
        admin = authserver.issue_tokens(url, scope="mcp:read admin")
        done = call(url, admin, "admin_reset")
        assert done.status_code == 200
        assert done.json()["result"]["content"][0]["text"] == "reset number 1, by alice"
        unsigned = call(url, {"access_token": "not-a-token"}, "whoami")
        assert unsigned.status_code == 401


@pytest.mark.interop
def test_our_oauth_client_steps_up_for_admin_reset() -> None:
    with protected_example() as (url, authserver):
        visited: list[str] = []

        def robot(authorization_url: str) -> None:
            visited.append(authorization_url)
            requests.get(authserver.approve(authorization_url), timeout=TIMEOUT)  # the browser reaches the listener

        auth = OAuth(interaction=LoopbackInteraction(browser=robot), interaction_timeout=TIMEOUT)
        with mcp_sync.connect(url, auth=auth, timeout=TIMEOUT) as client:
            me = client.call_tool("whoami").structured_content
            assert me is not None and "admin" not in me["scopes"] and "mcp:read" in me["scopes"]
            assert len(visited) == 1
            assert client.call_tool("admin_reset").text == "reset number 1, by alice"
            assert len(visited) == 2
            me = client.call_tool("whoami").structured_content
            assert me is not None and {"admin", "mcp:read"} <= set(me["scopes"])


@pytest.mark.interop
def test_opaque_tokens_introspected() -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with running_authorization_server(f"http://127.0.0.1:{free_port()}/unused", opaque_resources=[resource]) as authz:
        introspector = authz.register(token_endpoint_auth_method="client_secret_basic")
        options = (
            "--issuer",
            authz.issuer,
            "--audience",
            resource,
            "--introspection-url",
            authz.metadata["introspection_endpoint"],
            # name=value: generated ids and secrets may start with "-", which argparse would take for an option
            f"--client-id={introspector['client_id']}",
            f"--client-secret={introspector['client_secret']}",
        )
        with example(port, *options) as url:
            tokens = authz.issue_tokens(url, scope="mcp:read")
            assert tokens["access_token"].count(".") != 2  # opaque
            with mcp_sync.connect(url, headers=bearer(tokens), timeout=TIMEOUT) as client:
                me = client.call_tool("whoami").structured_content
            assert me is not None and me["subject"] == "alice" and me["scopes"] == ["mcp:read"]
            assert call(url, tokens, "admin_reset").status_code == 403


def test_introspection_needs_its_credentials() -> None:
    argv = [sys.executable, str(ROOT / "examples" / "protected_server.py"), "--issuer", "https://as.example"]
    argv += ["--audience", "http://127.0.0.1:1/mcp", "--introspection-url", "https://as.example/introspect"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=START_TIMEOUT, cwd=ROOT)
    assert done.returncode != 0 and "--client-id and --client-secret" in done.stderr
