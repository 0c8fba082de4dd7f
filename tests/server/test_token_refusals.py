"""How the HTTP app answers what a token verifier decides: 401, 403 with the scope to step up to, 503.

The verifiers (``mcp_sync.server.authorization.verifiers``) raise ``InvalidToken``,
``InsufficientScope`` or ``VerifierUnavailable``; any callable verifier may
too. A real oidc-provider issues the tokens of the last test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import authserver
import conformance
import pytest
import requests

from mcp_sync import MCPServer
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.authorization.tokens import InsufficientScope, InvalidToken, VerifierUnavailable
from mcp_sync.server.authorization.verifiers import JWTVerifier

TIMEOUT = 30.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture
def serve() -> Iterator[Callable[..., RunningHTTPServer]]:
    running: list[RunningHTTPServer] = []

    def start(**options: Any) -> RunningHTTPServer:
        server = MCPServer("guarded")
        metadata = {"authorization_servers": ["https://as.example"]}
        running.append(start_http(server, resource_metadata=metadata, **options))
        return running[-1]

    yield start
    for each in running:
        each.close()


def post(url: str, token: str) -> requests.Response:
    return requests.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"}, timeout=TIMEOUT)


def test_an_invalid_token_gets_401_with_the_verifiers_reason(serve: Callable[..., RunningHTTPServer]) -> None:
    def verify(token: str) -> dict[str, Any]:
        raise InvalidToken("the token expired 3 s ago")

    refused = post(serve(token_verifier=verify).url, "t")
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="the token expired 3 s ago"')
    assert "resource_metadata=" in challenge
    assert refused.json() == {"error": "invalid_token", "error_description": "the token expired 3 s ago"}


def test_a_token_without_the_scope_gets_403_naming_every_scope_needed(
    serve: Callable[..., RunningHTTPServer],
) -> None:
    def verify(token: str) -> dict[str, Any]:
        raise InsufficientScope(["files:write"], ["files:read"])

    refused = post(serve(token_verifier=verify, required_scopes=["files:read"]).url, "t")
    assert refused.status_code == 403
    challenge = refused.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="files:read files:write"' in challenge


def test_a_verifier_that_cannot_reach_its_server_gets_503_without_a_challenge(
    serve: Callable[..., RunningHTTPServer], caplog: pytest.LogCaptureFixture
) -> None:
    def verify(token: str) -> dict[str, Any]:
        raise VerifierUnavailable("the JWKS at https://as.example/jwks cannot be reached", retry_after=2.5)

    answer = post(serve(token_verifier=verify).url, "secret-token-value")
    assert answer.status_code == 503 and "WWW-Authenticate" not in answer.headers
    assert answer.headers["Retry-After"] == "3"
    assert answer.json()["error"] == "temporarily_unavailable"
    assert "as.example" not in answer.text  # where the verifier looks stays in the log
    assert "cannot be reached" in caplog.text and "secret-token-value" not in caplog.text


@pytest.mark.interop
def test_real_tokens_through_a_jwt_verifier() -> None:
    port = conformance.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with authserver.running_authorization_server(url, extra_resources=["http://127.0.0.1:1/other"]) as issuer:
        verifier = JWTVerifier(issuer.issuer, url)
        metadata = {"authorization_servers": [issuer.issuer]}
        running = start_http(MCPServer("guarded"), port=port, token_verifier=verifier, resource_metadata=metadata)
        try:
            good = issuer.issue_tokens(url)["access_token"]
            accepted = post(url, good)
            assert accepted.status_code == 200 and accepted.headers["Mcp-Session-Id"]
            other = issuer.issue_tokens("http://127.0.0.1:1/other")["access_token"]
            refused = post(url, other)
            assert refused.status_code == 401 and "audience" in refused.json()["error_description"]
            assert post(url, good[:-4] + "AAAA").status_code == 401
        finally:
            running.close()
            verifier.close()
