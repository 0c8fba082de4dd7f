"""Forged tokens and hostile authorization servers against the HTTP server's token checks.

Each test is a regression test of a defect found by attacking the server:
an introspection or JWKS endpoint that trickles its answer a byte at a time
(the verifier waited for it as long as it kept coming), one that answers
JSON nested deeper than Python recurses, a verifier whose error quotes the
token (it was logged), and an ``Authorization`` header that holds no bearer
token (two headers joined, a token with spaces: it was handed to the
verifier). The peers are real sockets on 127.0.0.1 (``servers/trickler.py``
answers as slowly as a test says).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from servers.scripted_auth import Reply, ScriptedServer
from servers.trickler import Trickler

from mcp_sync import MCPServer
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.authorization.tokens import InvalidToken, VerifierUnavailable
from mcp_sync.server.authorization.verifiers import IntrospectionVerifier, JWTVerifier

TIMEOUT = 30.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture
def trickler() -> Iterator[list[Trickler]]:
    made: list[Trickler] = []
    yield made
    for each in made:
        each.close()


def introspection(url: str, timeout: float = 0.5) -> IntrospectionVerifier:
    return IntrospectionVerifier(url + "/introspect", client_id="rs", client_secret="s3cret", timeout=timeout)


def test_a_trickled_introspection_answer_fails_closed_within_the_timeout(trickler: list[Trickler]) -> None:
    # 400 bytes at 0.05 s each: 20 s if the verifier waited for the whole of it.
    slow = Trickler(b'{"active": true, "sub": "alice"}' + b" " * 368, pace=0.05)
    trickler.append(slow)
    with introspection(slow.url) as verifier, pytest.raises(VerifierUnavailable, match="did not finish") as refused:
        verifier("forged-token")
    assert slow.sent < len(slow.body)
    assert "forged-token" not in str(refused.value)


def test_a_trickled_jwks_makes_the_jwt_verifier_unavailable_not_stuck(trickler: list[Trickler]) -> None:
    slow = Trickler(b'{"keys": []}' + b" " * 388, pace=0.05)
    trickler.append(slow)
    token = "eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImsxIn0.eyJzdWIiOiJhIn0.c2ln"
    verifier = JWTVerifier("https://as.example", "https://rs.example/mcp", jwks_url=slow.url + "/jwks", timeout=0.5)
    with verifier, pytest.raises(VerifierUnavailable, match="did not finish"):
        verifier(token)
    assert slow.sent < len(slow.body)


def test_an_introspection_endpoint_that_stalls_mid_answer_is_unavailable(trickler: list[Trickler]) -> None:
    stalled = Trickler(b'{"active": true}', stall=True)
    trickler.append(stalled)
    # A stall is the time running out like a trickle: the same error (it was "cannot be reached (ReadTimeout)").
    with introspection(stalled.url, timeout=0.3) as verifier, pytest.raises(VerifierUnavailable, match="not finish"):
        verifier("forged-token")


def test_introspection_answering_json_nested_too_deep_is_unavailable(trickler: list[Trickler]) -> None:
    bomb = Trickler(b"[" * 100_000)  # valid JSON so far; Python's decoder runs out of recursion on it
    trickler.append(bomb)
    with introspection(bomb.url, timeout=5) as verifier, pytest.raises(VerifierUnavailable, match="JSON object"):
        verifier("forged-token")


# ------------------------------------------------------------------- through the app


@pytest.fixture
def guarded() -> Iterator[list[RunningHTTPServer]]:
    running: list[RunningHTTPServer] = []
    yield running
    for each in running:
        each.close()


def serve(running: list[RunningHTTPServer], verifier: Any) -> str:
    metadata = {"authorization_servers": ["https://as.example"]}
    running.append(start_http(MCPServer("guarded"), resource_metadata=metadata, token_verifier=verifier))
    return running[-1].url


def test_a_verifier_error_quoting_the_token_is_logged_without_it(
    guarded: list[RunningHTTPServer], caplog: pytest.LogCaptureFixture
) -> None:
    def verify(token: str) -> dict[str, Any]:
        return {"sub": "x", "exp": int(token)}  # ValueError: invalid literal for int() ... 'the-token'

    secret = "sk-live-0123456789abcdef"
    with caplog.at_level(logging.DEBUG):
        refused = requests.post(
            serve(guarded, verify),
            json=INITIALIZE,
            headers={**HEADERS, "Authorization": f"Bearer {secret}"},
            timeout=TIMEOUT,
        )
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    failures = [r for r in caplog.records if "token verifier failed" in r.getMessage()]
    assert failures and "ValueError" in failures[0].getMessage() and "[the token]" in failures[0].getMessage()
    assert not any(secret in r.getMessage() or (r.exc_text and secret in r.exc_text) for r in caplog.records)
    assert secret not in refused.text + refused.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(["Bearer good", "Bearer other"], id="two-headers"),
        pytest.param(["Bearer good other"], id="a-space-in-the-token"),
        pytest.param(["Bearer good,Bearer other"], id="joined"),
    ],
)
def test_an_authorization_header_without_a_bearer_token_is_400_and_never_verified(
    guarded: list[RunningHTTPServer], authorization: list[str]
) -> None:
    seen: list[str] = []

    def verify(token: str) -> dict[str, Any]:
        seen.append(token)
        return {"sub": "alice", "scope": ""}

    url = serve(guarded, verify)
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    )
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {host}:{port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"Authorization: {value}" for value in authorization),
    ]
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"400", answer
    assert b'WWW-Authenticate: Bearer error="invalid_request"' in rest
    assert seen == []


def test_a_token_in_the_query_string_is_not_taken(guarded: list[RunningHTTPServer]) -> None:
    seen: list[str] = []

    def verify(token: str) -> dict[str, Any]:
        seen.append(token)
        return {"sub": "alice"}

    url = serve(guarded, verify)
    refused = requests.post(url + "?access_token=good", json=INITIALIZE, headers=HEADERS, timeout=TIMEOUT)
    assert refused.status_code == 401 and seen == []
    challenge = refused.headers["WWW-Authenticate"]
    assert "error=" not in challenge.replace("error_description=", "") and "resource_metadata=" in challenge


# ------------------------------------------------------------ numbers too large for a float

HUGE = "1" + "0" * 400  # a JSON integer Python reads, and float() overflows on


def test_an_introspection_exp_too_large_for_a_float_is_far_off_not_a_crash() -> None:
    with ScriptedServer() as authz:
        answer = '{"active": true, "sub": "alice", "exp": ' + HUGE + "}"
        authz.on("POST", "/introspect", Reply(body=answer, headers={"Content-Type": "application/json"}))
        with introspection(authz.url) as verifier:
            for _ in range(2):
                assert verifier("a-token")["sub"] == "alice"
        assert len(authz.received("/introspect")) == 1  # kept for the cache's ttl, as any far-off exp


def test_a_signed_exp_too_large_for_a_float_is_not_a_number() -> None:
    from mcp_sync.server.authorization.verifiers import _number

    with pytest.raises(InvalidToken, match="exp claim is not a number"):
        _number({"exp": int(HUGE)}, "exp")


def test_claims_with_an_exp_too_large_for_a_float_are_served(guarded: list[RunningHTTPServer]) -> None:
    def verify(token: str) -> dict[str, Any]:
        return {"sub": "alice", "exp": int(HUGE)}  # a custom verifier's: far in the future, not a crash

    answer = requests.post(
        serve(guarded, verify), json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer t"}, timeout=TIMEOUT
    )
    assert answer.status_code == 200, answer.text


# ----------------------------------------------------------------- the challenge


def test_a_refusal_in_words_a_header_cannot_carry_is_still_a_401(guarded: list[RunningHTTPServer]) -> None:
    def verify(token: str) -> dict[str, Any]:
        raise InvalidToken("le jeton a expiré\r\nX-Planted: 1")

    refused = requests.post(
        serve(guarded, verify), json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer t"}, timeout=TIMEOUT
    )
    assert refused.status_code == 401  # it was a 500: the server would not send the header
    assert "X-Planted" not in refused.headers
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="le jeton a expir???X-Planted: 1"')
    assert refused.json()["error_description"] == "le jeton a expiré\r\nX-Planted: 1"
