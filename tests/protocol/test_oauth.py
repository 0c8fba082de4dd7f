"""The OAuth rules both roles share: well-known URLs, challenges read and written, bearer credentials, loopback."""

from __future__ import annotations

import time

import pytest

from mcp_sync.protocol.oauth import (
    Challenge,
    authorization_server_urls,
    bearer_challenge,
    bearer_token,
    is_loopback,
    join_scopes,
    protected_resource_metadata_url,
    protected_resource_urls,
    redirect_registered,
    secure_url,
    split_scopes,
    well_formed,
)


def test_the_well_known_urls_of_a_resource() -> None:
    assert protected_resource_metadata_url("HTTPS://Api.Example:8443/v1/mcp?x=1") == (
        "https://api.example:8443/.well-known/oauth-protected-resource/v1/mcp"
    )
    assert protected_resource_metadata_url("https://api.example") == (
        "https://api.example/.well-known/oauth-protected-resource"
    )
    named = "https://api.example/.well-known/oauth-protected-resource/custom"
    assert protected_resource_urls("https://api.example/", named) == [
        named,
        "https://api.example/.well-known/oauth-protected-resource",
    ]


def test_the_well_known_urls_of_an_issuer() -> None:
    assert authorization_server_urls("https://auth.example/") == [
        "https://auth.example/.well-known/oauth-authorization-server",
        "https://auth.example/.well-known/openid-configuration",
    ]


def test_what_the_server_writes_the_client_reads() -> None:
    written = bearer_challenge(
        error="insufficient_scope",
        scope="files:read files:write",
        resource_metadata=protected_resource_metadata_url("https://api.example/mcp"),
        error_description='needs "files:write", DPoP x=1',
        realm=None,
    )
    read = Challenge.parse(written)
    assert read.scheme == "Bearer" and read.error == "insufficient_scope"
    assert split_scopes(read.scope) == {"files:read", "files:write"}
    assert read.resource_metadata == "https://api.example/.well-known/oauth-protected-resource/mcp"
    assert read.params["error_description"] == 'needs "files:write", DPoP x=1'


@pytest.mark.parametrize(
    ("header", "scheme", "params"),
    [
        (None, None, {}),
        ("", None, {}),
        ('Basic realm="x"', None, {}),
        ('Basic realm="Bearer error=x"', None, {}),  # a scheme name inside a quoted string is not one
        ("bearer", "bearer", {}),
        ('Basic realm="a", Bearer error="invalid_token", Foo b=1', "Bearer", {"error": "invalid_token"}),
        ('DPoP algs="ES256 PS256", error=use_dpop_nonce', "DPoP", {"algs": "ES256 PS256", "error": "use_dpop_nonce"}),
        ('Bearer scope="", error=""', "Bearer", {"scope": "", "error": ""}),
    ],
)
def test_challenges_read(header: str | None, scheme: str | None, params: dict[str, str]) -> None:
    challenge = Challenge.parse(header)
    assert (challenge.scheme, challenge.params) == (scheme, params)
    assert challenge.scope is None or challenge.scope


def test_a_challenge_of_a_chosen_scheme() -> None:
    header = 'Bearer error="invalid_token", DPoP error="use_dpop_nonce"'
    assert Challenge.parse(header).error == "invalid_token"
    assert Challenge.parse(header, ("DPoP",)).error == "use_dpop_nonce"
    assert Challenge.parse("Bearer x=1", ("DPoP",)).scheme is None


def test_a_hostile_challenge_reads_in_linear_time() -> None:
    started = time.perf_counter()
    Challenge.parse("Bearer " + ", a b" * 20_000)
    Challenge.parse("Bearer " + "a" * 100_000)
    Challenge.parse('Bearer x="' + "Bearer " * 20_000)
    assert time.perf_counter() - started < 2.0


def test_bearer_credentials() -> None:
    assert bearer_token(None) is None and bearer_token("Bearer   ") is None and bearer_token("Token abc") is None
    assert bearer_token("  BEARER abc  ") == "abc"
    assert well_formed("abc.def-ghi_~+/=") and not well_formed("a,Bearer b") and not well_formed("t\u00e9")


def test_scopes() -> None:
    assert split_scopes("") == frozenset() and join_scopes([]) == ""
    assert join_scopes(split_scopes("b a  b")) == "a b"


@pytest.mark.parametrize(
    ("url", "secure"),
    [
        ("https://auth.example/", True),
        ("HTTPS://auth.example/", True),
        ("http://localhost:9/", True),
        ("http://[::1]:9/", True),
        ("http://127.1.2.3/", True),
        ("http://localhost.evil.example/", False),
        ("http://10.0.0.1/", False),
        ("ftp://auth.example/", False),
        ("https:///nohost", False),
    ],
)
def test_secure_urls(url: str, secure: bool) -> None:
    assert secure_url(url) is secure


def test_loopback_hosts_and_redirects() -> None:
    assert is_loopback("127.0.0.1") and not is_loopback("example.com") and not is_loopback("")
    registered = ["http://localhost/callback", "https://app.example/cb"]
    assert redirect_registered("https://app.example/cb", registered)
    assert redirect_registered("http://localhost:1234/callback", iter(registered))
    assert not redirect_registered("http://localhost:1234/elsewhere", registered)
    assert not redirect_registered("http://127.0.0.1:1234/callback", registered)  # another host, though loopback
    assert not redirect_registered("http://evil.example:1234/callback", ["http://evil.example/callback"])
