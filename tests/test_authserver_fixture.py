"""The authorization server fixture (``tests/authserver.py``) works, driven with plain ``requests``.

One ``oidc-provider`` runs for the module, with 2-second access tokens. The
main test walks what an MCP client will do: discovery, Dynamic Client
Registration of a native public client, an authorization request with PKCE
S256, ``state``, ``resource`` and ``offline_access``, the code exchange, the
token's expiry and a refresh. It is the scaffolding the client OAuth tests
reuse. The other tests pin the server's refusals that those tests rely on.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from authserver import AuthServer, InvalidToken, running_authorization_server

RESOURCE = "http://127.0.0.1:8931/mcp"
"""The MCP server the tokens are for (nothing listens there: only the authorization server sees the URL)."""
ACCESS_TTL = 2
REGISTERED_REDIRECT = "http://127.0.0.1:50123/callback"
REDIRECT = "http://127.0.0.1:50987/callback"
"""A native client's loopback redirect URI may use another port than the registered one (RFC 8252 7.3)."""
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[AuthServer]:
    with running_authorization_server(RESOURCE, access_ttl=ACCESS_TTL) as running:
        yield running
    assert running.process.poll() is not None, "the server outlived its block"


@dataclass
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii"))


def register(server: AuthServer, **metadata: Any) -> dict[str, Any]:
    """Dynamic Client Registration of a native public client with the code and refresh grants."""
    body = {
        "application_type": "native",
        "client_name": "mcp-sync fixture test",
        "redirect_uris": [REGISTERED_REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    response = requests.post(server.metadata["registration_endpoint"], json=body, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    client: dict[str, Any] = response.json()
    return client


def authorization_url(server: AuthServer, client_id: str, pkce: Pkce | None, state: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "openid offline_access mcp:read",
        "prompt": "consent",  # OpenID Connect drops offline_access without it, and with it the refresh token
        "state": state,
        "resource": RESOURCE,
        **({"code_challenge": pkce.challenge, "code_challenge_method": "S256"} if pkce else {}),
        **extra,
    }
    return f"{server.metadata['authorization_endpoint']}?{urlencode(params)}"


def callback_params(server: AuthServer, url: str) -> dict[str, str]:
    """The query of a redirect back to :data:`REDIRECT`, which must carry the RFC 9207 ``iss``."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == REDIRECT, url
    params = {name: values[0] for name, values in parse_qs(parts.query).items()}
    assert params.get("iss") == server.issuer, url
    return params


def token_request(server: AuthServer, **form: str) -> requests.Response:
    return requests.post(server.metadata["token_endpoint"], data=form, timeout=TIMEOUT)


@pytest.mark.interop
def test_discovery_registration_code_flow_expiry_and_refresh(server: AuthServer) -> None:
    oauth = server.metadata
    openid = requests.get(f"{server.issuer}/.well-known/openid-configuration", timeout=TIMEOUT).json()
    for document in (oauth, openid):
        assert document["issuer"] == server.issuer
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["authorization_response_iss_parameter_supported"] is True
        assert {"openid", "offline_access", "mcp:read", "mcp:write"} <= set(document["scopes_supported"])
        assert "none" in document["token_endpoint_auth_methods_supported"]
        assert document["registration_endpoint"] == f"{server.issuer}/reg"
    assert openid["token_endpoint"] == oauth["token_endpoint"]

    client = register(server)
    assert "client_secret" not in client
    assert client["redirect_uris"] == [REGISTERED_REDIRECT]

    pkce, state = Pkce.new(), secrets.token_urlsafe(16)
    callback = server.approve(authorization_url(server, client["client_id"], pkce, state))
    params = callback_params(server, callback)
    assert params["state"] == state and "error" not in params, callback

    exchanged = token_request(
        server,
        grant_type="authorization_code",
        code=params["code"],
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=pkce.verifier,
        resource=RESOURCE,
    )
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == ACCESS_TTL
    assert tokens["refresh_token"]
    claims = server.verify(tokens["access_token"])
    assert claims["aud"] == RESOURCE and claims["iss"] == server.issuer
    assert claims["scope"].split() == ["mcp:read"]
    assert claims["sub"] == "alice" and claims["client_id"] == client["client_id"]
    assert claims["exp"] - claims["iat"] == ACCESS_TTL
    assert server.verify_at_server(tokens["access_token"]) == claims  # the JavaScript check agrees

    time.sleep(max(0.0, claims["exp"] - time.time() + 0.05))
    for check in (server.verify, server.verify_at_server):
        with pytest.raises(InvalidToken, match="exp"):
            check(tokens["access_token"])

    refreshed = token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=client["client_id"],
        resource=RESOURCE,
    )
    assert refreshed.status_code == 200, refreshed.text
    renewed = refreshed.json()
    assert renewed["refresh_token"] != tokens["refresh_token"]  # a public client's refresh token rotates
    new_claims = server.verify(renewed["access_token"])
    assert new_claims["aud"] == RESOURCE and new_claims["scope"].split() == ["mcp:read"]
    assert new_claims["sub"] == "alice" and new_claims["exp"] > claims["exp"]


@pytest.mark.interop
def test_pkce_is_required_and_unknown_resources_are_refused(server: AuthServer) -> None:
    client = register(server)
    no_pkce = callback_params(server, server.approve(authorization_url(server, client["client_id"], None, "s1")))
    assert no_pkce["error"] == "invalid_request" and "PKCE" in no_pkce["error_description"]
    assert no_pkce["state"] == "s1"

    elsewhere = authorization_url(server, client["client_id"], Pkce.new(), "s2", resource="http://127.0.0.1:1/other")
    refused = callback_params(server, server.approve(elsewhere))
    assert refused["error"] == "invalid_target" and refused["state"] == "s2"


@pytest.mark.interop
def test_a_user_who_cancels_sends_access_denied(server: AuthServer) -> None:
    client = register(server)
    denied = server.approve(authorization_url(server, client["client_id"], Pkce.new(), "s3"), deny=True)
    params = callback_params(server, denied)
    assert params["error"] == "access_denied" and params["state"] == "s3"


@pytest.mark.interop
def test_a_token_for_the_userinfo_endpoint_is_not_one_for_the_mcp_server(server: AuthServer) -> None:
    """Without ``resource`` in the token request, oidc-provider issues an opaque token that the MCP server refuses."""
    client = register(server)
    pkce = Pkce.new()
    params = callback_params(server, server.approve(authorization_url(server, client["client_id"], pkce, "s4")))
    exchanged = token_request(
        server,
        grant_type="authorization_code",
        code=params["code"],
        redirect_uri=REDIRECT,
        client_id=client["client_id"],
        code_verifier=pkce.verifier,
    )
    assert exchanged.status_code == 200, exchanged.text
    with pytest.raises(InvalidToken):
        server.verify(exchanged.json()["access_token"])
