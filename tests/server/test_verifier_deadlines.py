"""Introspection, JWKS and metadata endpoints that send their headers a byte at a time, against the verifiers' deadline.

``requests`` bounds each read, not the whole: a status line and headers
coming one byte every 0.2 s held a token check (and the request carrying
the token) for as long as the endpoint liked. Each exchange now ends once
the verifier's ``timeout`` has passed in all, as :class:`VerifierUnavailable`
(a 503) saying it did not finish, the error of an answer trickled after its
headers. Also here: a body without a length, cut short when the time is
up, is not taken for a whole one; and with a session of the caller's (whose
connections cannot be shut down) a trickled body is still given up on. The
peer is a real socket on 127.0.0.1 (``servers/trickler.py``); each call runs
under :func:`helpers.finish_within`, so that a hang fails at a generous bound.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from helpers import finish_within
from servers.trickler import Trickler

from mcp_sync.server.authorization.tokens import VerifierUnavailable
from mcp_sync.server.authorization.verifiers import IntrospectionVerifier, JWTVerifier

BOUND = 5.0
"""Far more than the 0.5 s deadline; far less than the 14 s the dribbled headers take."""
HEAD_PACE = 0.2
TOKEN = "eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImsxIn0.eyJzdWIiOiJhIn0.c2ln"
RESOURCE = "https://rs.example/mcp"


@pytest.fixture
def trickler() -> Iterator[list[Trickler]]:
    made: list[Trickler] = []
    yield made
    for each in made:
        each.close()


def dribbling(made: list[Trickler], body: bytes) -> Trickler:
    made.append(Trickler(body, head_pace=HEAD_PACE))
    return made[-1]


def test_an_introspection_endpoint_dribbling_its_headers_is_unavailable(trickler: list[Trickler]) -> None:
    slow = dribbling(trickler, b'{"active": true, "sub": "alice"}')
    verifier = IntrospectionVerifier(slow.url + "/introspect", client_id="rs", client_secret="s3cret", timeout=0.5)
    with verifier, pytest.raises(VerifierUnavailable, match=r"introspection endpoint .* did not finish .* 0\.5 s"):
        finish_within(BOUND, lambda: verifier("forged-token"))
    assert slow.requests == 1 and slow.head_sent < len(slow.head)


def test_a_jwks_dribbling_its_headers_makes_the_verifier_unavailable(trickler: list[Trickler]) -> None:
    slow = dribbling(trickler, b'{"keys": []}')
    verifier = JWTVerifier("https://as.example", RESOURCE, jwks_url=slow.url + "/jwks", timeout=0.5)
    with verifier, pytest.raises(VerifierUnavailable, match=r"the JWKS at .* did not finish"):
        finish_within(BOUND, lambda: verifier(TOKEN))
    assert slow.head_sent < len(slow.head)


def test_issuer_metadata_dribbling_its_headers_makes_the_verifier_unavailable(trickler: list[Trickler]) -> None:
    slow = dribbling(trickler, b"{}")
    with JWTVerifier(slow.url, RESOURCE, timeout=0.5) as verifier:
        with pytest.raises(VerifierUnavailable, match=r"the issuer's metadata at .* did not finish"):
            finish_within(BOUND, lambda: verifier(TOKEN))
        assert verifier.jwks_url is None


def test_a_body_without_a_length_cut_short_at_the_deadline_is_not_taken_whole(trickler: list[Trickler]) -> None:
    # Cut short, '{"keys": [] }' reads as no JSON (another error); it must read as not finished.
    slow = Trickler(b'{"keys": []}' + b" " * 400, pace=0.05, length=False)
    trickler.append(slow)
    verifier = JWTVerifier("https://as.example", RESOURCE, jwks_url=slow.url + "/jwks", timeout=0.5)
    with verifier, pytest.raises(VerifierUnavailable, match="did not finish"):
        finish_within(BOUND, lambda: verifier(TOKEN))
    assert slow.sent < len(slow.body)


def test_with_a_session_of_the_callers_a_trickled_body_is_still_given_up_on(trickler: list[Trickler]) -> None:
    slow = Trickler(b'{"active": true}' + b" " * 400, pace=0.05)
    trickler.append(slow)
    with requests.Session() as session:  # plain adapters: the connection cannot be shut down from outside
        verifier = IntrospectionVerifier(
            slow.url + "/introspect", client_id="rs", client_secret="s3cret", timeout=0.5, session=session
        )
        with pytest.raises(VerifierUnavailable, match="did not finish"):
            finish_within(BOUND, lambda: verifier("forged-token"))
    assert slow.sent < len(slow.body)
