"""Client OAuth (mcp_sync.client.auth): the flow's decisions and its error paths, against scripted servers.

The authorization server and the protected resource are
``tests/servers/scripted_auth.py`` (real sockets on 127.0.0.1, answers each
test scripts); the person who signs in is a :class:`Robot` interaction that
approves at once. The interactions themselves (loopback listener, paste,
notebook link) and the HTTP transports' side (a real mcp_sync server with a
token verifier) are tested at the end. The hooks that private_key_jwt and
DPoP have in oauth.py are pinned here too; grants.py and jose.py have tests of
their own, and end-to-end tests against a real authorization server are in
``test_oauth_e2e.py``.
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import logging
import os
import socket
import sys
import threading
import time
import types
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from servers.scripted_auth import Received, Reply, ScriptedAuth, ScriptedServer, dead_url, s256

import mcp_sync
from mcp_sync import MCPClient, MCPError, MCPServer
from mcp_sync.client.auth import (
    ClientRegistration,
    FileTokenStore,
    LoopbackInteraction,
    MemoryTokenStore,
    OAuth,
    PasteInteraction,
    SigningKey,
    Tokens,
    default_interaction,
)
from mcp_sync.client.auth import interaction as interaction_module
from mcp_sync.client.auth import oauth as oauth_module
from mcp_sync.client.auth.discovery import authorization_server_metadata, protected_resource_metadata
from mcp_sync.client.auth.interaction import show
from mcp_sync.client.auth.jose import access_token_hash
from mcp_sync.client.auth.models import ProtectedResourceMetadata
from mcp_sync.client.auth.stores import default_store_directory
from mcp_sync.client.factories import open_url
from mcp_sync.protocol.oauth import Challenge
from mcp_sync.server import StreamableHTTPApp, start_http
from mcp_sync.server.http.wsgi import WSGIServer

TIMEOUT = 10.0
REDIRECT = "http://127.0.0.1:8976/callback"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


# ------------------------------------------------------------------ helpers


class Robot:
    """A person who signs in at once: returns the redirect ``answer`` makes of the URL (default: approval)."""

    def __init__(
        self, auth: ScriptedAuth, answer: Callable[[str], str] | None = None, redirect_uri: str = REDIRECT
    ) -> None:
        self.auth = auth
        self.answer = answer
        self.redirect_uri = redirect_uri
        self.urls: list[str] = []
        self.timeouts: list[float] = []

    def authorize(self, url: str, timeout: float) -> str:
        self.urls.append(url)
        self.timeouts.append(timeout)
        return self.answer(url) if self.answer is not None else self.auth.approve(url)

    @property
    def queries(self) -> list[dict[str, str]]:
        return [query(url) for url in self.urls]


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def reason(error: pytest.ExceptionInfo[MCPError]) -> str:
    data = error.value.data
    assert isinstance(data, dict), data
    return str(data["reason"])


def fetch(url: str) -> requests.Response:
    return requests.get(url, timeout=TIMEOUT)


def ping(oauth: OAuth, url: str) -> requests.Response:
    """An MCP ping POSTed through ``oauth``, as the HTTP transports send it."""
    return requests.post(url, json=PING, auth=oauth, timeout=TIMEOUT)


def bearer(request: Received) -> str | None:
    value = request.headers.get("authorization")
    return value.removeprefix("Bearer ") if value is not None else None


def token_grants(auth: ScriptedServer) -> list[str]:
    return [r.form["grant_type"] for r in auth.received("/token")]


@pytest.fixture
def auth() -> Iterator[ScriptedAuth]:
    server = ScriptedAuth()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def other() -> Iterator[ScriptedAuth]:
    server = ScriptedAuth()
    try:
        yield server
    finally:
        server.close()


def signed_in(auth: ScriptedAuth, **options: Any) -> tuple[OAuth, Robot]:
    """An OAuth that has signed in to ``auth``'s resource once (one ping answered)."""
    robot = Robot(auth)
    oauth = OAuth(interaction=robot, **options)
    assert ping(oauth, auth.resource).status_code == 200
    assert len(robot.urls) == 1
    return oauth, robot


def expire(oauth: OAuth, url: str, seconds_left: float = 1.0) -> Tokens:
    """Make the kept tokens for ``url`` about to expire; the tokens as they were."""
    tokens = oauth.tokens(url)
    assert tokens is not None
    oauth.store.save(
        f"tokens {url}", {**tokens.model_dump(exclude_none=True), "expires_at": time.time() + seconds_left}
    )
    return tokens


# ------------------------------------------------------------------ the challenge


def test_challenge_bearer_with_quoted_values_and_escapes() -> None:
    header = (
        r'Bearer realm="say \"hi\" \\ bye", error="invalid_token", scope="files:read files:write", '
        'resource_metadata="https://api.example/.well-known/oauth-protected-resource/mcp", Max_Age=60'
    )
    challenge = Challenge.parse(header)
    assert challenge.scheme == "Bearer"
    assert challenge.params == {
        "realm": 'say "hi" \\ bye',
        "error": "invalid_token",
        "scope": "files:read files:write",
        "resource_metadata": "https://api.example/.well-known/oauth-protected-resource/mcp",
        "max_age": "60",
    }
    assert challenge.error == "invalid_token"
    assert challenge.scope == "files:read files:write"
    assert challenge.resource_metadata == "https://api.example/.well-known/oauth-protected-resource/mcp"


def test_challenge_dpop_scheme_and_bare_values() -> None:
    challenge = Challenge.parse('DPoP algs="ES256 PS256", error=use_dpop_nonce')
    assert challenge.scheme == "DPoP"
    assert challenge.params == {"algs": "ES256 PS256", "error": "use_dpop_nonce"}
    assert challenge.scope is None and challenge.resource_metadata is None
    assert Challenge.parse("bearer scope=x").scheme == "bearer"  # scheme names are case-insensitive


def test_challenge_several_in_one_header() -> None:
    header = 'Basic realm="files", Bearer scope="a b", resource_metadata="https://r.example/prm", DPoP algs="ES256"'
    challenge = Challenge.parse(header)
    assert challenge.scheme == "Bearer"
    assert challenge.params == {"scope": "a b", "resource_metadata": "https://r.example/prm"}
    # The first of Bearer and DPoP is read; a parameter said twice counts once, as first said.
    assert Challenge.parse('DPoP algs="ES256", Bearer scope="x"').params == {"algs": "ES256"}
    assert Challenge.parse('Bearer scope="first", scope="second"').scope == "first"
    assert Challenge.parse("Bearer scope=x, Basic realm=y").params == {"scope": "x"}


@pytest.mark.parametrize("header", [None, "", 'Basic realm="files"', "Negotiate abc123"])
def test_challenge_without_a_bearer_one_is_empty(header: str | None) -> None:
    challenge = Challenge.parse(header)
    assert challenge == Challenge()
    assert (challenge.scheme, challenge.params, challenge.error, challenge.scope) == (None, {}, None, None)
    assert challenge.resource_metadata is None


def test_challenge_empty_values_count_as_absent() -> None:
    challenge = Challenge.parse('Bearer scope="", resource_metadata=""')
    assert challenge.scheme == "Bearer"
    assert challenge.scope is None and challenge.resource_metadata is None


# --------------------------------------------------- protected-resource metadata


def test_protected_resource_metadata_lookup_order() -> None:
    with ScriptedServer() as server:
        server_url = server.url + "/v1/mcp"
        challenge = Challenge.parse(f'Bearer resource_metadata="{server.url}/meta/prm.json"')
        assert protected_resource_metadata(fetch, server_url, challenge) is None
        assert server.paths() == [
            "/meta/prm.json",
            "/.well-known/oauth-protected-resource/v1/mcp",
            "/.well-known/oauth-protected-resource",
        ]
        # A server at the root of its origin: only the root well-known URL.
        assert protected_resource_metadata(fetch, server.url + "/", Challenge()) is None
        assert server.paths()[3:] == ["/.well-known/oauth-protected-resource"]

        root = {"resource": server_url, "authorization_servers": ["https://root.example"]}
        server.on("GET", "/.well-known/oauth-protected-resource", Reply(json=root))
        found = protected_resource_metadata(fetch, server_url, Challenge())
        assert found is not None and found.authorization_servers == ["https://root.example"]
        assert server.paths()[4:] == [
            "/.well-known/oauth-protected-resource/v1/mcp",
            "/.well-known/oauth-protected-resource",
        ]

        path_based = {"resource": server_url, "authorization_servers": ["https://path.example"]}
        server.on("GET", "/.well-known/oauth-protected-resource/v1/mcp", Reply(json=path_based))
        found = protected_resource_metadata(fetch, server_url, Challenge())
        assert found is not None and found.authorization_servers == ["https://path.example"]
        assert server.paths()[6:] == ["/.well-known/oauth-protected-resource/v1/mcp"]

        named = {"resource": server_url, "authorization_servers": ["https://header.example"]}
        server.on("GET", "/meta/prm.json", Reply(json=named))
        found = protected_resource_metadata(fetch, server_url, challenge)
        assert found is not None and found.authorization_servers == ["https://header.example"]
        assert server.paths()[7:] == ["/meta/prm.json"]


def test_protected_resource_metadata_for_another_resource_refuses_the_flow() -> None:
    with ScriptedServer() as server:
        server_url = server.url + "/v1/mcp"
        for resource in (server.url + "/v1/mcp2", server.url + "/other", "http://evil.example/v1/mcp"):
            server.on("GET", "/.well-known/oauth-protected-resource/v1/mcp", Reply(json={"resource": resource}))
            with pytest.raises(MCPError) as refused:
                protected_resource_metadata(fetch, server_url, Challenge())
            assert reason(refused) == "resource_mismatch"
            assert refused.value.code == mcp_sync.MCP_CODES.UNAUTHORIZED
            assert refused.value.context["url"] == server.url + "/.well-known/oauth-protected-resource/v1/mcp"
            assert resource in refused.value.message


def test_protected_resource_metadata_naming_a_parent_path_is_accepted() -> None:
    with ScriptedServer() as server:
        server_url = server.url + "/v1/mcp"
        for resource in (server.url + "/", server.url + "/v1", server.url + "/v1/mcp/", server.url.upper() + "/v1"):
            document = {"resource": resource, "authorization_servers": ["https://as.example"]}
            server.on("GET", "/.well-known/oauth-protected-resource/v1/mcp", Reply(json=document))
            found = protected_resource_metadata(fetch, server_url, Challenge())
            assert found is not None and found.resource == resource


def test_protected_resource_documents_that_are_not_metadata_are_skipped() -> None:
    with ScriptedServer() as server:
        server_url = server.url + "/v1/mcp"
        header = Challenge.parse(f'Bearer resource_metadata="{server.url}/prm"')
        server.on("GET", "/prm", Reply(body="<html>not JSON</html>"))
        server.on("GET", "/.well-known/oauth-protected-resource/v1/mcp", Reply(json=["a", "list"]))
        server.on("GET", "/.well-known/oauth-protected-resource", Reply(json={"authorization_servers": "one"}))
        assert protected_resource_metadata(fetch, server_url, header) is None
        assert len(server.received()) == 3
        # An error status is no document, whatever its body.
        server.on("GET", "/prm", Reply(500, {"authorization_servers": ["https://as.example"]}))
        assert protected_resource_metadata(fetch, server_url, header) is None
        # A document that names no resource is taken as this server's.
        server.on("GET", "/.well-known/oauth-protected-resource", Reply(json={"authorization_servers": ["https://x"]}))
        found = protected_resource_metadata(fetch, server_url, header)
        assert found == ProtectedResourceMetadata(authorization_servers=["https://x"])


# ------------------------------------------------- authorization-server metadata


def test_authorization_server_metadata_lookup_order() -> None:
    with ScriptedServer() as server:
        assert authorization_server_metadata(fetch, server.url + "/tenant1") is None
        assert server.paths() == [
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
            "/tenant1/.well-known/openid-configuration",
        ]
        assert authorization_server_metadata(fetch, server.url) is None
        assert server.paths()[3:] == ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]

        document = {"issuer": server.url + "/tenant1", "token_endpoint": server.url + "/tenant1/token"}
        server.on("GET", "/tenant1/.well-known/openid-configuration", Reply(json=document))
        found = authorization_server_metadata(fetch, server.url + "/tenant1")
        assert found is not None and found.token_endpoint == server.url + "/tenant1/token"
        server.on("GET", "/.well-known/oauth-authorization-server/tenant1", Reply(json=document))
        before = len(server.received())
        assert authorization_server_metadata(fetch, server.url + "/tenant1") == found
        assert server.paths()[before:] == ["/.well-known/oauth-authorization-server/tenant1"]


def test_authorization_server_metadata_naming_another_issuer_refuses_the_flow() -> None:
    with ScriptedServer() as server:
        # RFC 8414 3.3: compared exactly, so a trailing slash is another issuer.
        for issuer in (server.url + "/", "https://evil.example"):
            server.on(
                "GET",
                "/.well-known/oauth-authorization-server",
                Reply(json={"issuer": issuer, "token_endpoint": "https://x/token"}),
            )
            with pytest.raises(MCPError) as refused:
                authorization_server_metadata(fetch, server.url)
            assert reason(refused) == "issuer_mismatch"
            assert refused.value.context["url"] == server.url + "/.well-known/oauth-authorization-server"


def test_invalid_authorization_server_metadata_refuses_the_flow() -> None:
    with ScriptedServer() as server:
        server.on("GET", "/.well-known/oauth-authorization-server", Reply(json={"issuer": server.url}))
        with pytest.raises(MCPError) as refused:
            authorization_server_metadata(fetch, server.url)
        assert reason(refused) == "metadata_invalid"
        assert "token_endpoint" in refused.value.message


def test_an_issuer_listed_by_the_resource_without_metadata(auth: ScriptedAuth, other: ScriptedAuth) -> None:
    auth.resource_metadata["authorization_servers"] = [other.url + "/nowhere", other.issuer]
    oauth = OAuth(interaction=Robot(auth))
    with pytest.raises(MCPError) as refused:
        oauth.begin(auth.resource)
    assert reason(refused) == "metadata_unavailable"
    assert other.url + "/nowhere" in refused.value.message
    assert "/.well-known/openid-configuration/nowhere" in other.paths()


def test_discovery_follows_the_challenge_and_takes_the_first_authorization_server(
    auth: ScriptedAuth, other: ScriptedAuth
) -> None:
    auth.off("GET", "/.well-known/oauth-protected-resource/mcp")
    auth.on("GET", "/custom/prm", Reply(json={"resource": auth.resource, "authorization_servers": [other.issuer]}))
    url = OAuth(interaction=Robot(auth)).begin(auth.resource, f'Bearer resource_metadata="{auth.url}/custom/prm"')
    assert url.startswith(other.url + "/authorize?")
    assert query(url)["resource"] == auth.resource
    assert len(other.received("/register")) == 1 and not auth.received("/register")


def test_without_resource_metadata_the_origin_is_the_authorization_server(auth: ScriptedAuth) -> None:
    """2025-03-26: no protected-resource metadata; the origin's own metadata names the endpoints."""
    auth.off("GET", "/.well-known/oauth-protected-resource/mcp")
    auth.metadata["authorization_endpoint"] = auth.url + "/oauth/authorize?tenant=1"
    oauth = OAuth(interaction=Robot(auth))
    url = oauth.begin(auth.resource)
    assert url.startswith(auth.url + "/oauth/authorize?tenant=1&response_type=code&")
    assert query(url)["resource"] == auth.resource
    tokens = oauth.complete(auth.approve(url))
    assert tokens.issuer == auth.url
    assert auth.access[tokens.access_token]["resource"] == auth.resource
    # Protected-resource metadata that lists no authorization server is as good as none.
    auth.on("GET", "/.well-known/oauth-protected-resource/mcp", Reply(json={"resource": auth.resource}))
    assert oauth.begin(auth.resource).startswith(auth.url + "/oauth/authorize?")


def test_the_origin_metadata_of_a_2025_03_26_server_is_not_held_to_an_issuer(auth: ScriptedAuth) -> None:
    """The origin only stands in for an issuer: its metadata may name another; iss is checked against that one."""
    auth.off("GET", "/.well-known/oauth-protected-resource/mcp")
    auth.metadata["issuer"] = auth.url + "/"
    oauth = OAuth(interaction=Robot(auth))
    tokens = oauth.complete(auth.approve(oauth.begin(auth.resource), iss=auth.url + "/"))
    assert tokens.issuer == auth.url and tokens.access_token in auth.access
    with pytest.raises(MCPError) as refused:
        oauth.complete(auth.approve(oauth.begin(auth.resource), iss=auth.url))
    assert reason(refused) == "iss_mismatch"
    # Listed in protected-resource metadata, the same document is refused.
    auth.on("GET", "/.well-known/oauth-protected-resource/mcp", Reply(json=auth.resource_metadata))
    with pytest.raises(MCPError) as refused:
        oauth.begin(auth.resource)
    assert reason(refused) == "issuer_mismatch"


def test_without_any_metadata_the_default_endpoints_are_used(auth: ScriptedAuth) -> None:
    auth.off("GET", "/.well-known/oauth-protected-resource/mcp")
    auth.off("GET", "/.well-known/oauth-authorization-server")
    oauth = OAuth(interaction=Robot(auth))
    url = oauth.begin(auth.resource + "?ignored=1#fragment")
    assert url.startswith(auth.url + "/authorize?")
    assert query(url)["resource"] == auth.resource
    tokens = oauth.complete(auth.approve(url))
    assert oauth.tokens(auth.resource) == tokens
    assert [r.path for r in auth.received(method="POST")] == ["/register", "/token"]
    assert "/.well-known/openid-configuration" in auth.paths()


def test_an_unreachable_authorization_server(auth: ScriptedAuth) -> None:
    dead = dead_url()
    auth.metadata["registration_endpoint"] = dead + "/register"
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(auth.resource)
    assert reason(refused) == "unreachable"
    assert refused.value.message == f"could not reach {dead}: ConnectionError"
    assert refused.value.context["url"] == dead + "/register"
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    auth.metadata["registration_endpoint"] = auth.url + "/register"
    auth.metadata["token_endpoint"] = dead + "/token"
    oauth = OAuth(interaction=Robot(auth))
    with pytest.raises(MCPError) as refused:
        ping(oauth, auth.resource)
    assert reason(refused) == "unreachable" and "Traceback" not in refused.value.message
    with pytest.raises(MCPError) as refused:
        oauth.login(dead + "/mcp")
    assert reason(refused) == "unreachable"


def test_an_authorization_server_that_cannot_be_reached_is_not_taken_for_one_without_metadata(
    auth: ScriptedAuth,
) -> None:
    dead = dead_url()
    auth.resource_metadata["authorization_servers"] = [dead]
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(auth.resource)
    assert reason(refused) == "unreachable"
    assert refused.value.message == f"the authorization server {dead} cannot be reached"


def test_a_resource_metadata_url_that_cannot_be_reached_is_skipped(
    auth: ScriptedAuth, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mcp_sync")
    dead = dead_url()
    url = OAuth(interaction=Robot(auth)).begin(auth.resource, f'Bearer resource_metadata="{dead}/prm"')
    assert url.startswith(auth.url + "/authorize?")
    assert f"could not fetch {dead}/prm: ConnectionError" in caplog.text
    assert auth.paths()[0] == "/.well-known/oauth-protected-resource/mcp"


def test_metadata_without_an_authorization_endpoint(auth: ScriptedAuth) -> None:
    del auth.metadata["authorization_endpoint"]
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(auth.resource)
    assert reason(refused) == "metadata_invalid"
    assert refused.value.message == f"the authorization server {auth.issuer} has no authorization endpoint"
    assert not auth.received("/register")


# ------------------------------------------------------------------ registration


def test_a_preregistered_public_client_does_not_register(auth: ScriptedAuth) -> None:
    oauth, robot = signed_in(auth, client_id="public-app")
    assert robot.queries[0]["client_id"] == "public-app"
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.client_id == "public-app"
    assert not auth.received("/register")
    token_request = auth.received("/token")[0]
    assert token_request.form["client_id"] == "public-app"
    assert "client_secret" not in token_request.form and "authorization" not in token_request.headers


@pytest.mark.parametrize(
    ("offered", "configured", "expected"),
    [
        (None, None, "client_secret_basic"),
        (["client_secret_basic"], None, "client_secret_basic"),
        (["client_secret_post"], None, "client_secret_post"),
        (["client_secret_post", "client_secret_basic"], None, "client_secret_basic"),
        (["private_key_jwt"], None, "client_secret_basic"),
        (["client_secret_basic"], "client_secret_post", "client_secret_post"),
    ],
)
def test_a_preregistered_confidential_client_authenticates_as_offered(
    auth: ScriptedAuth, offered: list[str] | None, configured: str | None, expected: str
) -> None:
    if offered is not None:
        auth.metadata["token_endpoint_auth_methods_supported"] = offered
    secret = "s3:cr&t=+ é"
    signed_in(auth, client_id="my app", client_secret=secret, token_endpoint_auth_method=configured)
    token_request = auth.received("/token")[0]
    if expected == "client_secret_basic":
        # RFC 6749 2.3.1: each part form-encoded, then joined by a colon.
        pair = base64.b64decode(token_request.headers["authorization"].removeprefix("Basic ")).decode()
        assert pair == "my+app:s3%3Acr%26t%3D%2B+%C3%A9"
        assert "client_id" not in token_request.form and "client_secret" not in token_request.form
    else:
        assert "authorization" not in token_request.headers
        assert token_request.form["client_id"] == "my app"
        assert token_request.form["client_secret"] == secret


def test_basic_without_a_secret_sends_the_client_id_in_the_form(auth: ScriptedAuth) -> None:
    signed_in(auth, client_id="app", token_endpoint_auth_method="client_secret_basic")
    token_request = auth.received("/token")[0]
    assert token_request.form["client_id"] == "app" and "authorization" not in token_request.headers


def test_a_client_metadata_document_is_used_only_where_supported(auth: ScriptedAuth) -> None:
    document = "https://app.example/oauth/client.json"
    oauth = OAuth(interaction=Robot(auth), client_metadata_url=document)
    url = oauth.begin(auth.resource)
    assert len(auth.received("/register")) == 1 and query(url)["client_id"].startswith("client-")
    auth.metadata["client_id_metadata_document_supported"] = True
    url = oauth.begin(auth.resource)
    assert query(url)["client_id"] == document
    assert len(auth.received("/register")) == 1
    oauth.complete(auth.approve(url))
    assert auth.received("/token")[0].form["client_id"] == document


def test_a_kept_registration_is_reused_and_redone_when_the_redirect_changes(auth: ScriptedAuth) -> None:
    store = MemoryTokenStore()

    def client_id(redirect_uri: str = REDIRECT) -> str:
        oauth = OAuth(interaction=Robot(auth, redirect_uri=redirect_uri), token_store=store)
        return query(oauth.begin(auth.resource))["client_id"]

    first = client_id()
    kept = store.load(f"client {auth.issuer}")
    assert kept == {
        "client_id": first,
        "token_endpoint_auth_method": "none",
        "redirect_uris": [REDIRECT],
        "issuer": auth.issuer,
        "client_name": "mcp-sync",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "application_type": "native",
    }
    assert store.load(f"client {auth.issuer} {first}") == kept
    assert client_id() == first
    # RFC 8252 7.3: a loopback redirect URI is the same whatever its port.
    assert client_id("http://127.0.0.1:9999/callback") == first
    assert len(auth.received("/register")) == 1
    second = client_id("http://127.0.0.1:9999/elsewhere")
    third = client_id("https://app.example/callback")
    fourth = client_id("https://app.example:8443/callback")
    assert len({first, second, third, fourth}) == 4 and len(auth.received("/register")) == 4
    assert [r.json["redirect_uris"] for r in auth.received("/register")[1:]] == [
        ["http://127.0.0.1:9999/elsewhere"],
        ["https://app.example/callback"],
        ["https://app.example:8443/callback"],
    ]
    # A kept registration that another authorization server issued is never shown to this one,
    # and what is not a registration at all is as good as none.
    for stale in ({"client_id": "stale", "issuer": "https://old.example", "redirect_uris": [REDIRECT]}, {"x": 1}):
        store.save(f"client {auth.issuer}", stale)
        assert client_id() not in ("stale", first, second, third, fourth)
    assert len(auth.received("/register")) == 6


def test_the_code_is_exchanged_by_the_client_that_asked_for_it(auth: ScriptedAuth) -> None:
    store = MemoryTokenStore()
    url = OAuth(interaction=None, redirect_uri=REDIRECT, token_store=store).begin(auth.resource)
    web = OAuth(interaction=None, redirect_uri="https://app.example/callback", token_store=store)
    assert query(web.begin(auth.resource))["client_id"] != query(url)["client_id"]  # registered since
    tokens = web.complete(auth.approve(url))
    assert auth.received("/token")[0].form["client_id"] == query(url)["client_id"] == tokens.client_id


def test_a_server_that_moves_to_another_authorization_server(auth: ScriptedAuth, other: ScriptedAuth) -> None:
    """Registration per issuer, and tokens from the old one are not refreshed at the new one."""
    other.access = auth.access  # the resource accepts the tokens of both
    robot = Robot(auth, answer=lambda url: (other if url.startswith(other.url) else auth).approve(url))
    oauth = OAuth(interaction=robot)
    assert ping(oauth, auth.resource).status_code == 200
    before = oauth.tokens(auth.resource)
    assert before is not None and before.issuer == auth.issuer and before.refresh_token
    auth.resource_metadata["authorization_servers"] = [other.issuer]
    auth.revoke(before.access_token)
    assert ping(oauth, auth.resource).status_code == 200
    assert robot.urls[1].startswith(other.url + "/authorize?")
    assert len(auth.received("/register")) == 1 and len(other.received("/register")) == 1
    assert token_grants(auth) == ["authorization_code"] and token_grants(other) == ["authorization_code"]
    after = oauth.tokens(auth.resource)
    assert after is not None and after.issuer == other.issuer
    assert oauth.store.load(f"client {auth.issuer}") is not None  # the old registration stays


def test_a_refused_registration(auth: ScriptedAuth) -> None:
    oauth = OAuth(interaction=Robot(auth))
    auth.on("POST", "/register", Reply(400, {"error": "invalid_redirect_uri", "error_description": "not allowed"}))
    with pytest.raises(MCPError) as refused:
        oauth.begin(auth.resource)
    assert reason(refused) == "registration_failed"
    assert refused.value.context["status"] == 400
    assert refused.value.message.endswith("refused the registration: 400 invalid_redirect_uri not allowed")
    auth.on("POST", "/register", Reply(503, body="<html>down</html>"))
    with pytest.raises(MCPError) as refused:
        oauth.begin(auth.resource)
    assert refused.value.context["status"] == 503 and refused.value.message.endswith(": HTTP 503")
    auth.on("POST", "/register", Reply(400, {"error": {"nested": True}}))
    with pytest.raises(MCPError) as refused:
        oauth.begin(auth.resource)
    assert refused.value.message.endswith(": HTTP 400")
    assert not [r for r in auth.received() if r.path == "/authorize"]


@pytest.mark.parametrize(
    "answer", [Reply(201, body="client-7"), Reply(201, {"client_secret": "x"}), Reply(201, ["client-7"])]
)
def test_a_registration_answer_that_is_not_a_client(auth: ScriptedAuth, answer: Reply) -> None:
    auth.on("POST", "/register", answer)
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(auth.resource)
    assert reason(refused) == "registration_failed"
    assert refused.value.message == f"the registration answer of {auth.issuer} is not a client"


def test_no_registration_endpoint(auth: ScriptedAuth) -> None:
    del auth.metadata["registration_endpoint"]
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(auth.resource)
    assert reason(refused) == "registration_failed"
    assert "give client_id" in refused.value.message
    assert not auth.received("/register")


@pytest.mark.parametrize(
    ("redirect_uri", "application_type"),
    [
        ("http://127.0.0.1:8976/callback", "native"),
        ("http://localhost:8976/callback", "native"),
        ("http://[::1]:8976/callback", "native"),
        ("https://app.example/oauth/callback", "web"),
    ],
)
def test_the_application_type_follows_the_redirect(
    auth: ScriptedAuth, redirect_uri: str, application_type: str
) -> None:
    OAuth(interaction=None, redirect_uri=redirect_uri).begin(auth.resource)
    body = auth.received("/register")[0].json
    assert body["application_type"] == application_type
    assert body["redirect_uris"] == [redirect_uri]


@pytest.mark.parametrize(
    ("metadata", "grant_types", "method"),
    [
        ({}, ["authorization_code"], "none"),
        ({"scopes_supported": ["files:read", "offline_access"]}, ["authorization_code", "refresh_token"], "none"),
        (
            {"grant_types_supported": ["authorization_code", "refresh_token"]},
            ["authorization_code", "refresh_token"],
            "none",
        ),
        (
            {"grant_types_supported": ["authorization_code"], "scopes_supported": ["files:read"]},
            ["authorization_code"],
            "none",
        ),
        ({"token_endpoint_auth_methods_supported": ["client_secret_basic", "none"]}, ["authorization_code"], "none"),
        (
            {"token_endpoint_auth_methods_supported": ["private_key_jwt", "client_secret_basic"]},
            ["authorization_code"],
            "client_secret_basic",
        ),
        (
            {"token_endpoint_auth_methods_supported": ["client_secret_post"]},
            ["authorization_code"],
            "client_secret_post",
        ),
    ],
)
def test_what_a_registration_asks_for(
    auth: ScriptedAuth, metadata: dict[str, Any], grant_types: list[str], method: str
) -> None:
    auth.metadata.update(metadata)
    OAuth(interaction=Robot(auth), client_name="Notebook of Ada").begin(auth.resource)
    body = auth.received("/register")[0].json
    assert body["client_name"] == "Notebook of Ada"
    assert body["grant_types"] == grant_types
    assert body["response_types"] == ["code"]
    assert body["token_endpoint_auth_method"] == method
    assert "scope" not in body  # a registered scope would be an allow-list that a step-up exceeds


def test_a_registered_secret_is_used_at_the_token_endpoint(auth: ScriptedAuth) -> None:
    auth.metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    auth.on("POST", "/register", lambda request: Reply(201, {"client_id": "reg-1", "client_secret": "reg-secret"}))
    oauth, _ = signed_in(auth)
    form = auth.received("/token")[0].form
    assert (form["client_id"], form["client_secret"]) == ("reg-1", "reg-secret")
    registration = oauth.store.load(f"client {auth.issuer}")
    assert registration is not None and registration["token_endpoint_auth_method"] == "client_secret_post"
    assert ClientRegistration.model_validate(registration).client_secret == "reg-secret"


# ------------------------------------------------------------------ scopes


def test_the_scope_asked_for(auth: ScriptedAuth) -> None:
    def asked(oauth: OAuth, challenge: str | None = None) -> dict[str, str]:
        return query(oauth.begin(auth.resource, challenge))

    challenge = 'Bearer error="insufficient_scope", scope="files:write"'
    configured = OAuth(interaction=Robot(auth), scopes=["files:read", "mail"])
    assert asked(configured, challenge)["scope"] == "files:write"  # the challenge's first
    assert asked(configured)["scope"] == "files:read mail"  # then those configured
    auth.resource_metadata["scopes_supported"] = ["files:read", "files:write"]
    plain = OAuth(interaction=Robot(auth))
    assert asked(plain)["scope"] == "files:read files:write"  # then those the resource supports
    assert "scope" not in asked(OAuth(interaction=Robot(auth), scopes=[]))
    del auth.resource_metadata["scopes_supported"]
    request = asked(plain)
    assert "scope" not in request and "prompt" not in request  # and none at all
    assert auth.received("/register")[-1].json.keys().isdisjoint({"scope"})


def test_offline_access_is_asked_for_where_offered_with_consent(auth: ScriptedAuth) -> None:
    auth.metadata["scopes_supported"] = ["files:read", "offline_access"]
    oauth = OAuth(interaction=Robot(auth))
    request = query(oauth.begin(auth.resource))
    assert request["scope"] == "offline_access" and request["prompt"] == "consent"
    request = query(oauth.begin(auth.resource, 'Bearer scope="files:read"'))
    assert request["scope"] == "files:read offline_access" and request["prompt"] == "consent"
    request = query(oauth.begin(auth.resource, 'Bearer scope="offline_access files:read"'))
    assert request["scope"] == "offline_access files:read"  # not asked for twice


def test_the_authorization_request(auth: ScriptedAuth) -> None:
    oauth = OAuth(interaction=None, redirect_uri=REDIRECT, scopes=["files:read"])
    url = oauth.begin(auth.resource)
    request = query(url)
    assert set(request) == {
        "response_type",
        "client_id",
        "redirect_uri",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
        "scope",
    }
    assert request["redirect_uri"] == REDIRECT and request["resource"] == auth.resource
    pending = oauth.store.load(f"pending {request['state']}")
    assert pending is not None
    verifier = pending["code_verifier"]
    assert 43 <= len(verifier) <= 128 and request["code_challenge"] == s256(verifier)
    assert pending["scope"] == "files:read" and pending["issuer"] == auth.issuer
    assert pending["client_id"] == request["client_id"]
    assert pending["server_url"] == auth.resource and pending["resource"] == auth.resource
    assert query(oauth.begin(auth.resource))["state"] != request["state"]


def test_step_up_keeps_the_scopes_granted(auth: ScriptedAuth) -> None:
    auth.required = {"files:write"}
    robot = Robot(auth)
    oauth = OAuth(interaction=robot, scopes=["files:read"])
    assert ping(oauth, auth.resource).status_code == 200
    assert [set(q["scope"].split()) for q in robot.queries] == [{"files:read"}, {"files:read", "files:write"}]
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.scopes == {"files:read", "files:write"}


def test_step_up_stops_after_max_step_ups(auth: ScriptedAuth) -> None:
    auth.required = {"admin"}
    auth.grantable = {"files:read"}
    robot = Robot(auth)
    response = ping(OAuth(interaction=robot, scopes=["files:read"]), auth.resource)
    assert response.status_code == 403
    assert Challenge.parse(response.headers["WWW-Authenticate"]).error == "insufficient_scope"
    assert len(robot.urls) == 1 + oauth_module.MAX_STEP_UPS
    assert len(auth.received("/mcp")) == 2 + oauth_module.MAX_STEP_UPS


# ------------------------------------------------------ the authorization response


@pytest.mark.parametrize(
    ("answer", "expected", "message"),
    [
        (
            {"error": "access_denied", "error_description": "The person said no", "code": None},
            "access_denied",
            "the authorization server refused: access_denied The person said no",
        ),
        (
            {"error": "server_error", "code": None},
            "authorization_failed",
            "the authorization server refused: server_error",
        ),
        ({"iss": "https://evil.example"}, "iss_mismatch", "comes from 'https://evil.example'"),
        ({"iss": "{issuer}/"}, "iss_mismatch", "comes from '{issuer}/', not '{issuer}'"),
        ({"code": None}, "authorization_failed", "the authorization response has no code"),
    ],
)
def test_a_refused_or_forged_authorization_response(
    auth: ScriptedAuth, answer: dict[str, str | None], expected: str, message: str
) -> None:
    oauth = OAuth(interaction=Robot(auth))
    url = oauth.begin(auth.resource)
    extra = {k: v.format(issuer=auth.issuer) if v else v for k, v in answer.items()}
    with pytest.raises(MCPError) as refused:
        oauth.complete(auth.approve(url, **extra))  # type: ignore[arg-type]
    assert reason(refused) == expected
    assert message.format(issuer=auth.issuer) in refused.value.message
    if "error" in answer:
        assert refused.value.context["error"] == answer["error"]
    assert not auth.received("/token")


def test_iss_is_required_where_the_server_promises_it(auth: ScriptedAuth) -> None:
    oauth = OAuth(interaction=Robot(auth))
    auth.send_iss = False
    oauth.complete(auth.approve(oauth.begin(auth.resource)))  # not promised: may be absent
    auth.metadata["authorization_response_iss_parameter_supported"] = True
    with pytest.raises(MCPError) as refused:
        oauth.complete(auth.approve(oauth.begin(auth.resource)))
    assert reason(refused) == "iss_mismatch" and "lacks iss" in refused.value.message
    auth.send_iss = True
    assert oauth.complete(auth.approve(oauth.begin(auth.resource))).access_token in auth.access


def test_a_redirect_with_another_state_is_refused(auth: ScriptedAuth) -> None:
    robot = Robot(auth, answer=lambda url: auth.approve(url, state="forged"))
    oauth = OAuth(interaction=robot)
    with pytest.raises(MCPError) as refused:
        ping(oauth, auth.resource)
    assert reason(refused) == "state_mismatch"
    state = robot.queries[0]["state"]
    assert oauth.store.load(f"pending {state}") is None  # the sign-in under way is forgotten
    assert not auth.received("/token") and oauth.tokens(auth.resource) is None


def test_begin_and_complete_on_different_workers(auth: ScriptedAuth) -> None:
    store = MemoryTokenStore()
    url = OAuth(interaction=None, redirect_uri=REDIRECT, token_store=store).begin(auth.resource)
    state = query(url)["state"]
    assert store.load(f"pending {state}") is not None
    worker = OAuth(interaction=None, redirect_uri=REDIRECT, token_store=store)
    callback = auth.approve(url)
    tokens = worker.complete(callback)
    assert tokens.access_token in auth.access and worker.tokens(auth.resource) == tokens
    assert store.load(f"pending {state}") is None
    with pytest.raises(MCPError) as replayed:
        worker.complete(callback)  # a state is good once
    assert reason(replayed) == "state_mismatch"
    for callback in (REDIRECT + "?code=c&state=unknown", REDIRECT + "?code=c", REDIRECT):
        with pytest.raises(MCPError) as unknown:
            worker.complete(callback)
        assert reason(unknown) == "state_mismatch"
    assert len(auth.received("/token")) == 1


def test_complete_after_the_server_moved(auth: ScriptedAuth, other: ScriptedAuth) -> None:
    oauth = OAuth(interaction=Robot(auth))
    url = oauth.begin(auth.resource)
    auth.resource_metadata["authorization_servers"] = [other.issuer]
    with pytest.raises(MCPError) as refused:
        oauth.complete(auth.approve(url, iss=None))  # type: ignore[arg-type]
    assert reason(refused) == "issuer_mismatch"
    assert not auth.received("/token") and not other.received("/token")


# ------------------------------------------------------------------ the token endpoint


def test_a_refused_token_request_says_the_oauth_error_and_never_the_body(auth: ScriptedAuth) -> None:
    secret = "ECHOED-SECRET"
    body = {"error": "invalid_grant", "error_description": "x" * 500, "client_secret": secret}
    auth.on("POST", "/token", Reply(400, body))
    oauth = OAuth(interaction=Robot(auth), client_id="app", client_secret=secret)
    with pytest.raises(MCPError) as refused:
        ping(oauth, auth.resource)
    assert reason(refused) == "token_request_failed"
    assert refused.value.context["status"] == 400
    assert refused.value.message == f"the token endpoint of {auth.issuer} refused: 400 invalid_grant {'x' * 200}"
    assert secret not in str(refused.value) and secret not in repr(refused.value.context)
    auth.on("POST", "/token", Reply(502, body=f"<html>{secret}</html>"))
    with pytest.raises(MCPError) as refused:
        ping(oauth, auth.resource)
    assert refused.value.message.endswith("refused: HTTP 502") and secret not in refused.value.message


@pytest.mark.parametrize(
    "answer", [Reply(200, {"token_type": "Bearer"}), Reply(200, body="access_token=abc"), Reply(200, ["abc"])]
)
def test_a_token_answer_without_tokens(auth: ScriptedAuth, answer: Reply) -> None:
    auth.on("POST", "/token", answer)
    oauth = OAuth(interaction=Robot(auth))
    with pytest.raises(MCPError) as refused:
        ping(oauth, auth.resource)
    assert reason(refused) == "token_request_failed"
    assert refused.value.message == f"the token endpoint of {auth.issuer} sent no tokens"
    assert oauth.tokens(auth.resource) is None


def test_the_token_request_and_the_tokens_kept(auth: ScriptedAuth) -> None:
    auth.metadata["scopes_supported"] = ["files:read"]
    auth.grantable = set()  # grants no scope, and says none: the scope asked for is kept
    oauth, robot = signed_in(auth, scopes=["files:read"])
    form = auth.received("/token")[0].form
    assert form["grant_type"] == "authorization_code"
    assert form["redirect_uri"] == REDIRECT and form["resource"] == auth.resource
    assert form["code"].startswith("code-") and s256(form["code_verifier"]) == robot.queries[0]["code_challenge"]
    assert auth.received("/token")[0].headers["accept"] == "application/json"
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.scope == "files:read" and tokens.issuer == auth.issuer
    assert tokens.expires_at is not None and tokens.expires_in == 3600
    assert bearer(auth.received("/mcp")[-1]) == tokens.access_token


# ------------------------------------------------------------------ tokens and refresh


def test_tokens_expiring_by_the_margin_rule() -> None:
    now = time.time()
    assert not Tokens(access_token="a").expiring()
    long_lived = Tokens(access_token="a", expires_in=3600, expires_at=now + 100)
    assert not long_lived.expiring() and long_lived.expiring(margin=200)
    assert Tokens(access_token="a", expires_in=3600, expires_at=now + 10).expiring()
    # A short lifetime: a tenth of it, when that is shorter than the margin.
    assert not Tokens(access_token="a", expires_in=60, expires_at=now + 20).expiring()
    assert Tokens(access_token="a", expires_in=60, expires_at=now + 3).expiring()
    # No lifetime said: a tenth of the margin.
    assert not Tokens(access_token="a", expires_at=now + 20).expiring()
    assert Tokens(access_token="a", expires_at=now + 1).expiring()
    assert Tokens(access_token="a", expires_at=now - 1).expiring()


def test_tokens_stamped_and_their_scopes() -> None:
    before = time.time()
    stamped = Tokens(access_token="a", expires_in=60).stamped("https://as.example", "files:read mail", "app")
    assert stamped.issuer == "https://as.example" and stamped.scope == "files:read mail"
    assert stamped.client_id == "app"
    assert stamped.expires_at is not None and before + 60 <= stamped.expires_at <= time.time() + 60
    assert stamped.scopes == {"files:read", "mail"}
    kept = Tokens(access_token="a", scope="mail").stamped("https://as.example", "files:read", "app")
    assert kept.scope == "mail" and kept.expires_at is None
    assert Tokens(access_token="a").scopes == set()


def test_tokens_about_to_expire_are_refreshed_before_the_request(auth: ScriptedAuth) -> None:
    oauth, robot = signed_in(auth)
    old = expire(oauth, auth.resource)
    sent = len(auth.received("/mcp"))
    assert ping(oauth, auth.resource).status_code == 200
    assert token_grants(auth) == ["authorization_code", "refresh_token"]
    refresh = auth.received("/token")[1].form
    assert refresh["refresh_token"] == old.refresh_token and refresh["resource"] == auth.resource
    assert refresh["client_id"] == query(robot.urls[0])["client_id"]
    new = oauth.tokens(auth.resource)
    assert new is not None and new.access_token != old.access_token and new.refresh_token != old.refresh_token
    assert [bearer(r) for r in auth.received("/mcp")[sent:]] == [new.access_token]  # no 401 on the way
    assert len(robot.urls) == 1


def test_a_refresh_answer_without_a_refresh_token_keeps_the_old_one(auth: ScriptedAuth) -> None:
    auth.rotate_refresh = False
    oauth, _ = signed_in(auth)
    old = expire(oauth, auth.resource)
    assert ping(oauth, auth.resource).status_code == 200
    new = oauth.tokens(auth.resource)
    assert new is not None and new.access_token != old.access_token
    assert new.refresh_token == old.refresh_token and new.expires_at is not None and not new.expiring()


def test_a_refused_refresh_forgets_the_tokens_and_signs_in_again(
    auth: ScriptedAuth, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "mcp_sync")
    oauth, robot = signed_in(auth)
    old = expire(oauth, auth.resource)
    auth.refresh.clear()
    auth.revoke(old.access_token)
    assert ping(oauth, auth.resource).status_code == 200
    assert len(robot.urls) == 2
    assert token_grants(auth) == ["authorization_code", "refresh_token", "authorization_code"]
    new = oauth.tokens(auth.resource)
    assert new is not None and new.access_token != old.access_token
    assert "could not refresh the tokens" in caplog.text and "invalid_grant" in caplog.text
    assert old.access_token not in caplog.text and str(old.refresh_token) not in caplog.text


def test_a_refresh_token_another_process_used_first(auth: ScriptedAuth) -> None:
    """The refresh is refused because another process sharing the store rotated the token: its tokens are used."""
    oauth, robot = signed_in(auth)
    old = expire(oauth, auth.resource)
    fresh = {"access_token": "theirs", "refresh_token": "their-refresh", "issuer": auth.issuer}
    auth.access["theirs"] = {"scope": set(), "resource": auth.resource}

    def rotated_meanwhile(request: Received) -> Reply:
        oauth.store.save(f"tokens {auth.resource}", fresh)
        return Reply(400, {"error": "invalid_grant"})

    auth.on("POST", "/token", rotated_meanwhile)
    assert ping(oauth, auth.resource).status_code == 200
    assert bearer(auth.received("/mcp")[-1]) == "theirs" and len(robot.urls) == 1
    assert oauth.tokens(auth.resource) == Tokens.model_validate(fresh)
    assert old.refresh_token is not None and old.refresh_token != "their-refresh"


class SavesRecorded(MemoryTokenStore):
    def __init__(self) -> None:
        super().__init__()
        self.saves: list[tuple[str, dict[str, Any] | None]] = []

    def save(self, key: str, value: dict[str, Any] | None) -> None:
        self.saves.append((key, value))
        super().save(key, value)


def test_a_refresh_refused_after_another_process_logged_out(auth: ScriptedAuth) -> None:
    store = SavesRecorded()
    oauth, robot = signed_in(auth, token_store=store)
    old = expire(oauth, auth.resource)
    auth.revoke(old.access_token)
    marks: list[int] = []

    def logged_out_meanwhile(request: Received) -> Reply:
        oauth.logout(auth.resource)
        marks.append(len(store.saves))
        return Reply(400, {"error": "invalid_grant"})

    auth.on("POST", "/token", logged_out_meanwhile, auth._token)
    assert ping(oauth, auth.resource).status_code == 200
    assert len(robot.urls) == 2
    # Nothing forgotten twice: the first thing saved after the refusal is the new sign-in's.
    assert store.saves[marks[0]][0].startswith("pending ")


def test_a_401_refreshes_once_then_signs_in(auth: ScriptedAuth) -> None:
    oauth, robot = signed_in(auth)
    first = oauth.tokens(auth.resource)
    assert first is not None
    auth.revoke(first.access_token)  # not expiring, but the server no longer takes it
    assert ping(oauth, auth.resource).status_code == 200
    assert token_grants(auth) == ["authorization_code", "refresh_token"] and len(robot.urls) == 1
    second = oauth.tokens(auth.resource)
    assert second is not None
    auth.revoke(second.access_token)
    auth.refresh.clear()  # and now the refresh is refused: a sign-in
    assert ping(oauth, auth.resource).status_code == 200
    assert token_grants(auth)[2:] == ["refresh_token", "authorization_code"] and len(robot.urls) == 2


def test_tokens_without_a_refresh_token_sign_in_again_on_a_401(auth: ScriptedAuth) -> None:
    auth.issue_refresh = False
    auth.expires_in = None
    oauth, robot = signed_in(auth)
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.refresh_token is None and tokens.expires_at is None
    auth.revoke(tokens.access_token)
    assert ping(oauth, auth.resource).status_code == 200
    assert len(robot.urls) == 2 and token_grants(auth) == ["authorization_code", "authorization_code"]


def test_expiring_tokens_without_a_refresh_token_are_sent_as_they_are(auth: ScriptedAuth) -> None:
    auth.issue_refresh = False
    oauth, robot = signed_in(auth)
    tokens = expire(oauth, auth.resource)
    assert oauth.login(auth.resource) == oauth.tokens(auth.resource)
    assert ping(oauth, auth.resource).status_code == 200
    assert bearer(auth.received("/mcp")[-1]) == tokens.access_token
    assert token_grants(auth) == ["authorization_code"] and len(robot.urls) == 1


def test_a_refresh_without_a_kept_registration_signs_in_again(auth: ScriptedAuth) -> None:
    oauth, robot = signed_in(auth)
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.client_id is not None
    for key in (f"client {auth.issuer}", f"client {auth.issuer} {tokens.client_id}"):
        oauth.store.save(key, None)  # tokens kept, but the registration lost
    old = expire(oauth, auth.resource)
    auth.revoke(old.access_token)
    assert ping(oauth, auth.resource).status_code == 200
    assert token_grants(auth) == ["authorization_code", "authorization_code"]  # no refresh without a client
    assert len(robot.urls) == 2 and len(auth.received("/register")) == 2


def test_tokens_from_another_issuer_are_not_refreshed(auth: ScriptedAuth) -> None:
    robot = Robot(auth)
    oauth = OAuth(interaction=robot)
    stale = {
        "access_token": "old",
        "refresh_token": "old-refresh",
        "issuer": "https://old.example",
        "expires_in": 3600,
        "expires_at": time.time() + 1,
    }
    oauth.store.save(f"tokens {auth.resource}", stale)
    assert ping(oauth, auth.resource).status_code == 200
    assert token_grants(auth) == ["authorization_code"] and len(robot.urls) == 1
    assert bearer(auth.received("/mcp")[0]) is None  # forgotten, never sent to this server; then a sign-in
    assert oauth.tokens(auth.resource).issuer == auth.issuer  # type: ignore[union-attr]


def test_a_401_for_a_token_another_thread_replaced_just_resends(auth: ScriptedAuth) -> None:
    robot = Robot(auth)
    oauth = OAuth(interaction=robot)
    auth.access["replaced"] = {"scope": set(), "resource": auth.resource}

    def meanwhile(request: Received) -> Reply:
        # Another thread of the client signs in while this request is on its way.
        oauth.store.save(f"tokens {auth.resource}", {"access_token": "replaced", "issuer": auth.issuer})
        return Reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": auth.challenge("invalid_token")})

    for kept in (None, {"access_token": "stale", "issuer": auth.issuer}):
        if kept is not None:
            oauth.store.save(f"tokens {auth.resource}", kept)
        auth.on("POST", "/mcp", meanwhile, auth._serve_resource)
        before = len(auth.received("/mcp"))
        response = ping(oauth, auth.resource)
        assert response.status_code == 200 and len(response.history) == 1
        assert [bearer(r) for r in auth.received("/mcp")[before:]] == [kept and kept["access_token"], "replaced"]
    assert not auth.received("/token") and not robot.urls


def test_a_401_after_a_fresh_sign_in_is_the_answer(auth: ScriptedAuth) -> None:
    robot = Robot(auth)
    oauth = OAuth(interaction=robot)
    auth.on("POST", "/mcp", Reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": auth.challenge()}))
    response = ping(oauth, auth.resource)
    assert response.status_code == 401 and len(robot.urls) == 1
    assert [bearer(r) for r in auth.received("/mcp")] == [None, oauth.tokens(auth.resource).access_token]  # type: ignore[union-attr]
    # Likewise after a refresh: the server refuses tokens just obtained, that is its answer.
    response = ping(oauth, auth.resource)
    assert response.status_code == 401 and len(robot.urls) == 1
    assert token_grants(auth) == ["authorization_code", "refresh_token"]


def test_other_answers_pass_through(auth: ScriptedAuth) -> None:
    oauth, robot = signed_in(auth)
    for answer in (Reply(500, body="boom"), Reply(403, {"error": "forbidden"}, headers={"WWW-Authenticate": "Bearer"})):
        auth.on("POST", "/mcp", answer)
        assert ping(oauth, auth.resource).status_code == answer.status
    assert len(robot.urls) == 1


def test_a_refresh_another_thread_did_meanwhile_is_used(auth: ScriptedAuth) -> None:
    expiring = {"access_token": "a", "refresh_token": "r", "expires_in": 60, "expires_at": time.time() + 1}
    fresh = {"access_token": "b", "refresh_token": "r2", "expires_in": 60, "expires_at": time.time() + 60}

    class Racing(MemoryTokenStore):
        """The first read sees the tokens expiring; by the second, another thread has refreshed them."""

        reads = 0

        def load(self, key: str) -> dict[str, Any] | None:
            self.reads += 1
            return expiring if self.reads == 1 else fresh

    oauth = OAuth(interaction=None, token_store=Racing())
    assert oauth.login(auth.resource) == Tokens.model_validate(fresh)
    assert not auth.received()


# ------------------------------------------------- the hooks of private_key_jwt and DPoP


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and the claims of a compact JWS (unverified)."""

    def decoded(part: str) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        return value

    header, claims, _ = token.split(".")
    return decoded(header), decoded(claims)


@pytest.mark.parametrize(
    ("audience", "expected"),
    [("issuer", "{issuer}"), ("token_endpoint", "{issuer}/token"), ("https://aud.example", "https://aud.example")],
)
def test_a_preregistered_client_with_a_key_authenticates_with_a_signed_assertion(
    auth: ScriptedAuth, audience: str, expected: str
) -> None:
    from joserfc import jwt
    from joserfc.jwk import ECKey

    key = SigningKey.generate("ES256")
    signed_in(auth, client_id="app", client_key=key, assertion_audience=audience)
    token_request = auth.received("/token")[0]
    form = token_request.form
    assert form["client_id"] == "app"
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert "client_secret" not in form and "authorization" not in token_request.headers
    claims = jwt.decode(form["client_assertion"], ECKey.import_key(key.public_jwk)).claims
    assert claims["iss"] == claims["sub"] == "app"
    assert claims["aud"] == expected.format(issuer=auth.issuer)
    assert claims["exp"] > claims["iat"] and claims["jti"]


def test_dpop_bound_tokens_and_the_nonces_servers_ask_for(auth: ScriptedAuth) -> None:
    """A proof on every token request and every MCP request; each server's nonce is obeyed once."""

    def token(request: Received) -> Reply:
        header, proof = jwt_parts(request.headers["dpop"])
        assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
        assert (proof["htm"], proof["htu"]) == ("POST", auth.url + "/token")
        if proof.get("nonce") != "as-nonce":
            return Reply(400, {"error": "use_dpop_nonce"}, headers={"DPoP-Nonce": "as-nonce"})
        reply = auth._token(request)
        reply.json["token_type"] = "DPoP"
        return reply

    def resource(request: Received) -> Reply:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme != "DPoP" or token not in auth.access:
            return Reply(401, headers={"WWW-Authenticate": 'DPoP algs="ES256"'})
        _, proof = jwt_parts(request.headers["dpop"])
        assert proof["ath"] == access_token_hash(token) and proof["htu"] == auth.resource
        if proof.get("nonce") != "rs-nonce":
            return Reply(401, headers={"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "rs-nonce"})
        return Reply(json={"jsonrpc": "2.0", "id": 1, "result": {}})

    auth.on("POST", "/token", token)
    auth.on("POST", "/mcp", resource)
    robot = Robot(auth)
    oauth = OAuth(interaction=robot, dpop=True)
    assert ping(oauth, auth.resource).status_code == 200
    assert len(robot.urls) == 1
    assert [jwt_parts(r.headers["dpop"])[1].get("nonce") for r in auth.received("/token")] == [None, "as-nonce"]
    schemes = [r.headers.get("authorization", " ").split(" ")[0] for r in auth.received("/mcp")]
    assert schemes == ["", "DPoP", "DPoP"]
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.token_type == "DPoP"
    # Bearer tokens are still presented as such.
    plain = OAuth(interaction=Robot(auth), dpop=True)
    plain.store.save(f"tokens {auth.resource}", {"access_token": "bearer-one"})
    ping(plain, auth.resource)
    assert auth.received("/mcp")[3].headers["authorization"] == "Bearer bearer-one"


# ------------------------------------------------------------------ without interaction


def test_a_sign_in_without_interaction_is_authorization_required(auth: ScriptedAuth) -> None:
    with pytest.raises(MCPError) as required:
        ping(OAuth(interaction=None), auth.resource)
    assert reason(required) == "authorization_required"
    assert "no interaction is set: use OAuth.begin() and complete()" in required.value.message
    assert required.value.context["server_url"] == auth.resource
    with pytest.raises(MCPError) as required:
        ping(OAuth(interaction=None, redirect_uri="https://app.example/cb"), auth.resource)
    assert reason(required) == "authorization_required"
    assert "send the person to OAuth.begin()'s URL" in required.value.message
    assert auth.paths() == ["/mcp", "/mcp"]  # nothing discovered, nothing registered


def test_the_redirect_uri(auth: ScriptedAuth) -> None:
    assert OAuth(interaction=None, redirect_uri="https://app.example/cb").redirect_uri == "https://app.example/cb"
    assert OAuth(interaction=Robot(auth)).redirect_uri == REDIRECT
    assert OAuth(interaction=Robot(auth), redirect_uri="https://x/cb").redirect_uri == "https://x/cb"
    bare = OAuth(interaction=None)
    with pytest.raises(MCPError) as required:
        bare.redirect_uri  # noqa: B018
    assert reason(required) == "authorization_required"
    with pytest.raises(MCPError) as required:
        bare.begin(auth.resource)
    assert reason(required) == "authorization_required" and not auth.received("/register")


def test_tokens_and_logout(auth: ScriptedAuth) -> None:
    oauth, _ = signed_in(auth)
    tokens = oauth.tokens(auth.resource + "#x")
    assert tokens is not None and tokens.issuer == auth.issuer
    assert oauth.tokens(auth.url + "/elsewhere") is None
    oauth.logout(auth.resource)
    assert oauth.tokens(auth.resource) is None
    assert oauth.store.load(f"client {auth.issuer}") is not None  # the registration stays
    oauth.store.save(f"tokens {auth.resource}", {"token": "no access_token"})
    assert oauth.tokens(auth.resource) is None


def test_login(auth: ScriptedAuth) -> None:
    robot = Robot(auth)
    oauth = OAuth(interaction=robot)
    tokens = oauth.login(auth.resource)
    assert tokens is not None and tokens == oauth.tokens(auth.resource)
    probe = auth.received("/mcp")[0]
    assert probe.json == {"jsonrpc": "2.0", "id": "mcp-sync-login", "method": "ping"}
    assert probe.headers["accept"] == "application/json, text/event-stream" and bearer(probe) is None
    assert robot.timeouts == [300.0]
    count = len(auth.received())
    assert oauth.login(auth.resource) == tokens  # kept: no request at all
    assert len(auth.received()) == count
    auth.on("POST", "/open", Reply(json={"jsonrpc": "2.0", "id": "mcp-sync-login", "result": {}}))
    assert oauth.login(auth.url + "/open") is None  # no sign-in asked for
    assert len(robot.urls) == 1


def test_the_default_interaction_and_store(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = PasteInteraction()
    monkeypatch.setattr(oauth_module, "default_interaction", lambda: chosen)
    oauth = OAuth()
    assert oauth.interaction is chosen and isinstance(oauth.store, MemoryTokenStore)
    assert oauth.scopes is None and oauth.client_name == "mcp-sync"
    session = requests.Session()
    assert OAuth(session=session, interaction=None, scopes=("a",)).http is session
    assert OAuth(interaction=None, scopes=("a",)).scopes == ["a"]
    session.close()


# ------------------------------------------------------------------ stores


def test_the_memory_store_keeps_copies() -> None:
    store = MemoryTokenStore()
    value = {"access_token": "a", "nested": {"x": 1}}
    store.save("tokens https://x/mcp", value)
    value["nested"]["x"] = 2
    loaded = store.load("tokens https://x/mcp")
    assert loaded == {"access_token": "a", "nested": {"x": 1}}
    assert loaded is not None
    loaded["access_token"] = "changed"
    assert store.load("tokens https://x/mcp") == {"access_token": "a", "nested": {"x": 1}}
    store.save("tokens https://x/mcp", None)
    store.save("never saved", None)
    assert store.load("tokens https://x/mcp") is None


def test_the_file_store(tmp_path: Path) -> None:
    directory = tmp_path / "state" / "oauth"
    store = FileTokenStore(directory)
    assert store.load("tokens https://mcp.example/mcp") is None
    store.save("tokens https://mcp.example/mcp", {"access_token": "secret-token"})
    assert store.load("tokens https://mcp.example/mcp") == {"access_token": "secret-token"}
    [path] = directory.iterdir()
    assert path.suffix == ".json" and "mcp.example" not in path.name
    if os.name == "posix":
        assert directory.stat().st_mode & 0o777 == 0o700
        assert path.stat().st_mode & 0o777 == 0o600
    store.save("tokens https://mcp.example/mcp", {"access_token": "newer"})
    assert FileTokenStore(directory).load("tokens https://mcp.example/mcp") == {"access_token": "newer"}
    assert len(list(directory.iterdir())) == 1
    store.save("tokens https://mcp.example/mcp", None)
    store.save("tokens https://mcp.example/mcp", None)
    assert store.load("tokens https://mcp.example/mcp") is None and not list(directory.iterdir())


def test_a_failed_file_store_write_leaves_the_old_file(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    store.save("client https://as.example", {"client_id": "abc"})
    with pytest.raises(TypeError):
        store.save("client https://as.example", {"client_id": object()})
    assert store.load("client https://as.example") == {"client_id": "abc"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []
    assert len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        json.dumps({"key": "client https://other.example", "value": {"client_id": "x"}}),
        json.dumps({"key": "client https://as.example", "value": "not an object"}),
        json.dumps({"value": {"client_id": "x"}}),
    ],
)
def test_a_corrupt_or_foreign_file_reads_as_nothing(tmp_path: Path, content: str) -> None:
    store = FileTokenStore(tmp_path)
    store.save("client https://as.example", {"client_id": "abc"})
    [path] = tmp_path.iterdir()
    path.write_text(content, encoding="utf-8")
    assert store.load("client https://as.example") is None


def test_the_default_store_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_SYNC_OAUTH_DIR", str(tmp_path / "configured"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_store_directory() == tmp_path / "configured"
    assert FileTokenStore().directory == tmp_path / "configured"
    monkeypatch.setenv("MCP_SYNC_OAUTH_DIR", "")
    assert default_store_directory() == tmp_path / "xdg" / "mcp-sync" / "oauth"
    monkeypatch.delenv("MCP_SYNC_OAUTH_DIR")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_store_directory() == tmp_path / "home" / ".local" / "state" / "mcp-sync" / "oauth"


def test_the_flow_with_a_file_store(auth: ScriptedAuth, tmp_path: Path) -> None:
    oauth, _ = signed_in(auth, token_store=FileTokenStore(tmp_path))
    again = OAuth(interaction=None, token_store=FileTokenStore(tmp_path))
    assert again.tokens(auth.resource) == oauth.tokens(auth.resource)
    assert ping(again, auth.resource).status_code == 200  # another process, the same tokens
    assert len(list(tmp_path.iterdir())) == 3  # the tokens and the registration (twice); no pending sign-in


# ------------------------------------------------------------------ interactions


def get(url: str) -> requests.Response:
    return requests.get(url, timeout=TIMEOUT)


def test_the_loopback_interaction_catches_the_redirect() -> None:
    answers: list[int] = []

    def browser(url: str) -> None:
        answers.append(get(url.replace("/callback", "/favicon.ico")).status_code)  # a wrong path: 404, still waiting
        response = get(url)
        answers.append(response.status_code)
        assert "Signed in" in response.text

    interaction = LoopbackInteraction(browser=browser)
    assert interaction.redirect_uri == f"http://127.0.0.1:{interaction.port}/callback"
    redirect = interaction.redirect_uri + "?code=abc&state=xyz&iss=https%3A%2F%2Fas.example"
    assert interaction.authorize(redirect, TIMEOUT) == redirect
    assert answers == [404, 200]
    # The port stays the same for the next sign-in (the registration's redirect URI).
    assert interaction.authorize(interaction.redirect_uri + "?code=def", TIMEOUT).endswith("/callback?code=def")


def test_the_loopback_interaction_with_a_chosen_port_and_path() -> None:
    port = LoopbackInteraction().port  # a free one
    interaction = LoopbackInteraction(port, path="/oauth/done", browser=lambda url: get(url))
    assert interaction.redirect_uri == f"http://127.0.0.1:{port}/oauth/done"
    assert interaction.authorize(interaction.redirect_uri + "?code=1", TIMEOUT) == interaction.redirect_uri + "?code=1"


def test_a_loopback_port_taken_meanwhile_is_a_clear_error() -> None:
    interaction = LoopbackInteraction(browser=lambda url: None)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", interaction.port))
        squatter.listen()
        with pytest.raises(MCPError) as refused:
            interaction.authorize("https://as.example/authorize", TIMEOUT)
    assert reason(refused) == "listener_unavailable"
    assert refused.value.message.startswith(f"cannot listen for the redirect on {interaction.redirect_uri}: ")


def test_the_loopback_interaction_times_out() -> None:
    opened: list[str] = []
    interaction = LoopbackInteraction(browser=opened.append)
    with pytest.raises(MCPError) as waited:
        interaction.authorize("https://as.example/authorize?x=1", 0.3)
    assert reason(waited) == "timeout"
    assert interaction.redirect_uri in waited.value.message and "0.3 s" in waited.value.message
    assert opened == ["https://as.example/authorize?x=1"]
    # The listener is closed: its port takes connections no more.
    with pytest.raises(requests.ConnectionError):
        get(interaction.redirect_uri)


def test_the_loopback_interaction_in_a_whole_sign_in(auth: ScriptedAuth) -> None:
    def person(url: str) -> None:
        get(auth.approve(url))

    oauth = OAuth(interaction=LoopbackInteraction(browser=person))
    assert ping(oauth, auth.resource).status_code == 200
    assert auth.received("/register")[0].json["application_type"] == "native"


def test_the_loopback_interaction_opens_the_browser(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []

    def open_browser(url: str) -> bool:
        opened.append(url)
        get(url)  # the browser follows the link straight to the redirect
        return True

    monkeypatch.setattr(webbrowser, "open", open_browser)
    interaction = LoopbackInteraction(open_browser=True)
    url = interaction.redirect_uri + "?code=1&state=s"
    assert interaction.authorize(url, TIMEOUT) == url
    assert opened == [url]
    assert capsys.readouterr().err == f"Opened the browser to sign in. If it did not open, visit:\n{url}\n"


@pytest.mark.parametrize(("opens", "printed"), [(False, "Sign in by visiting:"), (True, "Opened the browser")])
def test_show_when_asked_to_open_the_browser(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], opens: bool, printed: str
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or opens)
    show("https://as.example/authorize?a=1", True)
    assert opened == ["https://as.example/authorize?a=1"]
    err = capsys.readouterr().err
    assert err.startswith(printed) and err.endswith("\nhttps://as.example/authorize?a=1\n")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_show_opens_the_browser_only_in_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    show("https://as.example/a", None)
    show("https://as.example/b", False)
    assert opened == []
    assert (
        capsys.readouterr().err
        == "Sign in by visiting:\nhttps://as.example/a\nSign in by visiting:\nhttps://as.example/b\n"
    )
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    show("https://as.example/c", None)
    assert opened == ["https://as.example/c"] and capsys.readouterr().err.startswith("Opened the browser")


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A simulated Jupyter kernel: ``IPython.get_ipython()`` is a ZMQInteractiveShell; what is displayed is kept."""
    shown: list[object] = []
    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    display = types.ModuleType("IPython.display")
    display.display = shown.append  # type: ignore[attr-defined]
    ipython.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    return shown


def test_show_in_a_notebook_displays_a_link(notebook: list[object], capsys: pytest.CaptureFixture[str]) -> None:
    url = 'https://as.example/authorize?a=1&b="2"<'
    show(url, True)
    [link] = notebook
    html = link._repr_html_()  # type: ignore[attr-defined]
    escaped = "https://as.example/authorize?a=1&amp;b=&quot;2&quot;&lt;"
    assert html == f'<p>Sign in to continue: <a href="{escaped}" target="_blank" rel="noopener">{escaped}</a></p>'
    assert repr(link) == f"Sign in to continue: {url}"
    assert capsys.readouterr().err == ""


def test_a_shell_that_is_not_a_notebook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    terminal_ipython = types.ModuleType("IPython")
    terminal_ipython.get_ipython = type("TerminalInteractiveShell", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", terminal_ipython)
    show("https://as.example/a", False)
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))  # no get_ipython
    show("https://as.example/b", False)
    assert capsys.readouterr().err.count("Sign in by visiting:") == 2


def test_the_paste_interaction(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    interaction = PasteInteraction()
    assert interaction.redirect_uri == "http://127.0.0.1:8976/callback"
    assert PasteInteraction("https://app.example/cb").redirect_uri == "https://app.example/cb"
    prompts: list[str] = []

    def pasted(prompt: str) -> str:
        prompts.append(prompt)
        return "  http://127.0.0.1:8976/callback?code=abc&state=s \n"

    monkeypatch.setattr(builtins, "input", pasted)
    assert interaction.authorize("https://as.example/authorize?x=1", TIMEOUT) == (
        "http://127.0.0.1:8976/callback?code=abc&state=s"
    )
    assert prompts == ["Paste the address your browser was sent to: "]
    assert capsys.readouterr().err == "Sign in by visiting:\nhttps://as.example/authorize?x=1\n"


@pytest.mark.parametrize("interruption", [EOFError, KeyboardInterrupt])
def test_the_paste_interaction_cancelled(monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]) -> None:
    def nothing(prompt: str) -> str:
        raise interruption

    monkeypatch.setattr(builtins, "input", nothing)
    with pytest.raises(MCPError) as cancelled:
        PasteInteraction().authorize("https://as.example/authorize", TIMEOUT)
    assert reason(cancelled) == "cancelled"
    assert cancelled.value.__suppress_context__


def test_the_paste_interaction_too_late(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 161.0])
    monkeypatch.setattr(interaction_module, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    monkeypatch.setattr(builtins, "input", lambda prompt: "http://127.0.0.1:8976/callback?code=late")
    with pytest.raises(MCPError) as late:
        PasteInteraction().authorize("https://as.example/authorize", 60)
    assert reason(late) == "timeout" and "60 s" in late.value.message


def test_the_default_interaction(monkeypatch: pytest.MonkeyPatch, notebook: list[object]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert isinstance(default_interaction(), LoopbackInteraction)  # a notebook
    monkeypatch.delitem(sys.modules, "IPython")
    assert default_interaction() is None  # a script without a terminal (a web worker, CI)
    monkeypatch.setattr(sys, "stdin", None)
    assert default_interaction() is None
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(webbrowser, "get", lambda: object())
    assert isinstance(default_interaction(), LoopbackInteraction)  # a terminal with a browser
    assert isinstance(OAuth().interaction, LoopbackInteraction)

    def no_browser() -> object:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "get", no_browser)
    assert isinstance(default_interaction(), PasteInteraction)  # a terminal over ssh: the URL is pasted back


# ------------------------------------------------------------------ the transports' side


def echo_server() -> MCPServer:
    server = MCPServer("protected", "1.0")
    server.register_tool("echo", lambda args, ctx: args.get("text", ""), description="echo")
    return server


def verifier(auth: ScriptedAuth, resource: list[str]) -> Callable[[str], dict[str, Any] | None]:
    """A token verifier that takes the access tokens ``auth`` issued for the resource (their audience)."""

    def verify(token: str) -> dict[str, Any] | None:
        grant = auth.access.get(token)
        if grant is None or grant["resource"] != resource[0]:
            return None
        return {"sub": "alice", "scope": " ".join(grant["scope"])}

    return verify


@pytest.fixture
def protected(auth: ScriptedAuth) -> Iterator[str]:
    """A real mcp_sync server that takes the tokens ``auth`` issues for it; its URL."""
    resource: list[str] = []
    server = echo_server()
    running = start_http(
        server,
        token_verifier=verifier(auth, resource),
        resource_metadata={"authorization_servers": [auth.issuer]},
    )
    resource.append(running.url)
    try:
        yield running.url
    finally:
        running.close()
        server.stop()


def test_a_sign_in_through_the_http_transport(auth: ScriptedAuth, protected: str) -> None:
    robot = Robot(auth)
    with MCPClient.http(protected, auth=OAuth(interaction=robot), connect_timeout=TIMEOUT) as client:
        assert client.call_tool("echo", {"text": "signed in"}).text == "signed in"
    assert len(robot.urls) == 1 and robot.queries[0]["resource"] == protected


def test_a_failed_sign_in_reaches_the_caller_with_its_reason(auth: ScriptedAuth, protected: str) -> None:
    with pytest.raises(MCPError) as refused:
        MCPClient.http(protected, auth=OAuth(interaction=None), connect_timeout=TIMEOUT)
    assert reason(refused) == "authorization_required"
    assert "no interaction is set" in refused.value.message
    auth.on("POST", "/register", Reply(403, {"error": "access_denied"}))
    with pytest.raises(MCPError) as refused:
        MCPClient.http(protected, auth=OAuth(interaction=Robot(auth)), connect_timeout=TIMEOUT, era="handshake")
    assert reason(refused) == "registration_failed"


def test_connect_with_oauth_uses_its_defaults(
    auth: ScriptedAuth, protected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal, even under pytest -s
    with pytest.raises(MCPError) as refused:
        mcp_sync.connect(protected, auth="oauth", connect_timeout=TIMEOUT)
    assert reason(refused) == "authorization_required"  # no person at hand under pytest: no interaction
    robot = Robot(auth)
    monkeypatch.setattr(oauth_module, "default_interaction", lambda: robot)
    with mcp_sync.connect(protected, auth="oauth", connect_timeout=TIMEOUT) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert robot.timeouts == [300.0]


class Awaited(logging.Handler):
    """A log handler that waits for a record saying ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.records: list[logging.LogRecord] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.records.append(record)
            self.seen.set()


def test_a_failed_sign_in_on_the_get_stream_ends_it_with_a_warning(
    auth: ScriptedAuth, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy that drops the token from GETs: the stream's sign-in fails; it logs, stops, and POSTs go on."""
    crashed: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", crashed.append)
    awaited = Awaited("no GET stream")
    logger = logging.getLogger("mcp_sync")
    logger.addHandler(awaited)
    resource: list[str] = []
    server = echo_server()
    app = StreamableHTTPApp(
        server, token_verifier=verifier(auth, resource), resource_metadata={"authorization_servers": [auth.issuer]}
    )

    def proxy(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["REQUEST_METHOD"] == "GET":
            environ.pop("HTTP_AUTHORIZATION", None)
        return app(environ, start_response)

    embedded = WSGIServer(proxy)
    embedded.on_close(app.close)
    embedded.start()
    url = embedded.url + "/mcp"
    resource.append(url)
    auth.access["good"] = {"scope": set(), "resource": url}
    oauth = OAuth(interaction=None)
    oauth.store.save(f"tokens {url}", {"access_token": "good"})
    try:
        with MCPClient.http(
            url, auth=oauth, transport="streamable", era="handshake", connect_timeout=TIMEOUT
        ) as client:
            assert awaited.seen.wait(TIMEOUT)
            for listener in [t for t in threading.enumerate() if t.name == "mcp-sync-http-get"]:
                listener.join(TIMEOUT)
                assert not listener.is_alive()
            assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    finally:
        logger.removeHandler(awaited)
        embedded.close()
        server.stop()
    [warning] = awaited.records
    assert warning.levelno == logging.WARNING and "requires a sign-in" in warning.getMessage()
    assert crashed == []


class Recording:
    """MCPClient.connect, recording the limits each connection got (the handshake's and the era probe's)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[Any, Any, float]] = []
        connect = MCPClient.connect

        def recording(client: MCPClient, transport: Any, **options: Any) -> Any:
            self.calls.append((transport.auth, options.get("timeout"), client.probe_timeout))
            return connect(client, transport, **options)

        monkeypatch.setattr(MCPClient, "connect", recording)


@pytest.mark.parametrize(
    ("person", "tokens", "connect_timeout", "expected", "grace"),
    [
        (True, False, 5.0, 105.0, 100.0),  # a sign-in may come first: its time is added
        (True, True, 5.0, 5.0, 0.0),  # tokens kept: no sign-in expected
        (True, False, None, None, 100.0),  # no limit stays no limit (the probe's grows)
        (False, False, 5.0, 5.0, 0.0),  # nobody to wait for: a sign-in fails at once
    ],
)
def test_open_url_waits_for_the_sign_in_when_there_are_no_tokens(
    auth: ScriptedAuth,
    monkeypatch: pytest.MonkeyPatch,
    person: bool,
    tokens: bool,
    connect_timeout: float | None,
    expected: float | None,
    grace: float,
) -> None:
    recording = Recording(monkeypatch)
    server = echo_server()
    with start_http(server) as running:
        oauth = OAuth(interaction=Robot(auth) if person else None, interaction_timeout=100.0)
        if tokens:
            oauth.store.save(f"tokens {running.url}", {"access_token": "kept"})
        client = MCPClient()
        probe_timeout = client.probe_timeout
        with open_url(client, running.url, auth=oauth, connect_timeout=connect_timeout):
            assert client.probe_timeout == probe_timeout
    server.stop()
    assert recording.calls == [(oauth, expected, probe_timeout + grace)]


def test_open_url_with_oauth_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    recording = Recording(monkeypatch)
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal, even under pytest -s
    server = echo_server()
    with start_http(server) as running, open_url(MCPClient(), running.url, auth="oauth", connect_timeout=5.0):
        pass
    server.stop()
    [(oauth, timeout, _)] = recording.calls
    assert isinstance(oauth, OAuth) and oauth.interaction is None and isinstance(oauth.store, MemoryTokenStore)
    assert timeout == 5.0
