"""Signed JWTs for client OAuth (``mcp_sync.client.auth.jose``), and the flows that use them, against real servers.

The JWTs are checked by decoding them with joserfc and the public key
alone: a DPoP proof's header and claims (RFC 9449 section 4.2, ``ath``
against the RFC's own example), a client assertion's claims (RFC 7523).
The flows run against an MCP server, an authorization server and an
identity provider that are real HTTP servers on 127.0.0.1
(``tests/servers/scripted_auth.py``, each answering as the test scripts
it): what each request carried is read back from what they received. The conformance harness runs
the same flows against its servers (``tests/interop/test_conformance_auth_extensions.py``);
these tests reach the refusals and options it does not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey
from requests.structures import CaseInsensitiveDict
from servers.scripted_auth import Received, Reply, ScriptedServer

from mcp_sync.client.auth import (
    ClientCredentials,
    DPoP,
    EnterpriseAuthorization,
    OAuth,
    SigningKey,
    WorkloadIdentity,
)
from mcp_sync.client.auth.grants import ID_JAG_TYPE, JWT_BEARER, TOKEN_EXCHANGE
from mcp_sync.client.auth.jose import (
    CLIENT_ASSERTION_TYPE,
    JWT_EXTRA,
    access_token_hash,
    client_assertion,
    dpop_proof,
)
from mcp_sync.errors import MCPError

pytestmark = pytest.mark.filterwarnings(
    "ignore:EdDSA is deprecated"
)  # joserfc's note on RFC 9864; still the usual name

ALGORITHMS = ["ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"]


def decode(token: str, key: SigningKey | Mapping[str, Any]) -> jwt.Token:
    """Verify ``token`` with the public half of ``key`` (or a public JWK) only, and decode it."""
    public = key.public_jwk if isinstance(key, SigningKey) else dict(key)
    assert "d" not in public
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    kind = {"EC": ECKey, "RSA": RSAKey, "OKP": OKPKey}[public["kty"]]
    return jwt.decode(token, kind.import_key(public), algorithms=[header["alg"]])


# ---------------------------------------------------------------- DPoP proofs


def test_a_dpop_proof_verifies_with_the_public_key_and_has_the_claims() -> None:
    key = SigningKey.generate()
    before = int(time.time())
    proof = dpop_proof(key, "post", "https://MCP.example/mcp?x=1#frag", access_token="tok", nonce="n-1")
    token = decode(proof, key)
    assert token.header["typ"] == "dpop+jwt"
    assert token.header["alg"] == "ES256"
    assert token.header["jwk"] == key.public_jwk  # the public key only
    assert "d" not in token.header["jwk"]
    claims = token.claims
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://mcp.example/mcp"  # no query, no fragment
    assert before <= claims["iat"] <= int(time.time())
    assert claims["ath"] == access_token_hash("tok")
    assert claims["nonce"] == "n-1"
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16
    again = decode(dpop_proof(key, "GET", "https://mcp.example"), key).claims
    assert again["jti"] != claims["jti"]  # a fresh proof each time
    assert "ath" not in again and "nonce" not in again
    assert again["htu"] == "https://mcp.example/"


def test_ath_is_the_base64url_sha256_of_the_token() -> None:
    # RFC 9449 section 7.1's example.
    assert (
        access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU")
        == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
    )
    token = "eyJhbGciOi.some.token"
    digest = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
    assert access_token_hash(token) == digest
    assert "=" not in digest and "+" not in digest and "/" not in digest


def test_dpop_keeps_each_origins_nonce_and_says_when_to_send_again() -> None:
    dpop = DPoP()
    assert "DPoP" in repr(dpop) and dpop.key.thumbprint()[:8] in repr(dpop)

    def response(status: int, headers: dict[str, str], body: bytes = b"") -> requests.Response:
        made = requests.Response()
        made.status_code, made.headers, made._content = status, CaseInsensitiveDict(headers), body
        made.url = "https://auth.example/token"
        return made

    use_nonce = json.dumps({"error": "use_dpop_nonce"}).encode()
    assert dpop.observe(response(400, {}, use_nonce)) is False  # no nonce given: nothing to send again with
    assert dpop.observe(response(200, {"DPoP-Nonce": "n1"})) is False  # kept, but nothing to do again
    assert decode(dpop.proof("POST", "https://auth.example/token"), dpop.key).claims["nonce"] == "n1"
    assert "nonce" not in decode(dpop.proof("POST", "https://other.example/"), dpop.key).claims
    assert dpop.observe(response(400, {"DPoP-Nonce": "n2"}, use_nonce)) is True
    assert decode(dpop.proof("POST", "https://auth.example/token"), dpop.key).claims["nonce"] == "n2"
    assert dpop.observe(response(400, {"DPoP-Nonce": "n3"}, b"not json")) is False
    assert dpop.observe(response(400, {"DPoP-Nonce": "n3"}, b'{"error": "invalid_grant"}')) is False
    assert dpop.observe(response(400, {"DPoP-Nonce": "n3"}, b"[]")) is False
    challenge = 'DPoP error="use_dpop_nonce", error_description="Resource server requires nonce"'
    assert dpop.observe(response(401, {"DPoP-Nonce": "n4", "WWW-Authenticate": challenge})) is True
    assert dpop.observe(response(401, {"DPoP-Nonce": "n5", "WWW-Authenticate": 'DPoP error="invalid_token"'})) is False
    assert dpop.observe(response(401, {"DPoP-Nonce": "n5"})) is False
    assert dpop.observe(response(500, {"DPoP-Nonce": "n6"})) is False


def test_dpop_takes_a_key_of_its_own() -> None:
    key = SigningKey.generate("ES384")
    assert DPoP(key).key is key
    assert DPoP(_private_jwk("P-256")).key.algorithm == "ES256"
    assert DPoP(algorithm="EdDSA").key.algorithm == "EdDSA"


# ------------------------------------------------------- client assertions


def test_a_client_assertion_has_the_claims_of_rfc_7523() -> None:
    key = SigningKey.generate()
    before = int(time.time())
    token = decode(client_assertion(key, "my-client", "https://auth.example"), key)
    claims = token.claims
    assert token.header == {"alg": "ES256", "typ": "JWT"}
    assert claims["iss"] == claims["sub"] == "my-client"
    assert claims["aud"] == "https://auth.example"
    assert claims["exp"] - claims["iat"] == 60
    assert before <= claims["iat"] <= int(time.time())
    other = decode(client_assertion(key, "my-client", ["a", "b"], lifetime=5), key).claims
    assert other["jti"] != claims["jti"]
    assert other["aud"] == ["a", "b"] and other["exp"] - other["iat"] == 5


def _private_jwk(curve: str, **extra: str) -> dict[str, Any]:
    return {**ECKey.generate_key(curve).as_dict(private=True), **extra}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_generated_key_signs_what_its_public_key_verifies(algorithm: str) -> None:
    key = SigningKey.generate(algorithm)
    assert key.algorithm == algorithm
    assert decode(key.sign({"x": 1}), key).claims == {"x": 1}


def test_keys_are_read_from_pem_and_jwk_with_their_usual_algorithm() -> None:
    ec = ECKey.generate_key("P-256")
    pem = ec.as_pem(private=True)
    assert SigningKey(pem.decode()).algorithm == "ES256"  # str
    assert SigningKey(pem).thumbprint() == ec.thumbprint()  # bytes
    locked = ec.as_pem(private=True, password="pw")
    assert SigningKey(locked, password="pw").thumbprint() == ec.thumbprint()
    assert SigningKey(ECKey.generate_key("P-521").as_pem(private=True)).algorithm == "ES512"
    assert SigningKey(RSAKey.generate_key(2048).as_pem(private=True)).algorithm == "RS256"
    assert SigningKey(RSAKey.generate_key(2048).as_pem(private=True), "PS256").algorithm == "PS256"
    assert SigningKey(OKPKey.generate_key("Ed25519").as_pem(private=True)).algorithm == "EdDSA"
    assert SigningKey(_private_jwk("P-384")).algorithm == "ES384"
    named = SigningKey(_private_jwk("P-256", alg="ES256", kid="key-1"))
    assert named.kid == "key-1"
    token = decode(client_assertion(named, "c", "https://auth.example"), named)
    assert token.header["kid"] == "key-1"


def test_what_is_not_a_signing_key_is_refused_without_showing_it() -> None:
    private = _private_jwk("P-256")
    with pytest.raises(ValueError, match="private key, not a public one"):
        SigningKey({key: value for key, value in private.items() if key != "d"})
    with pytest.raises(ValueError, match="not a private key that can sign JWTs") as refused:
        SigningKey("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    assert "not a key" not in str(refused.value)
    with pytest.raises(ValueError, match="not a private key that can sign JWTs"):
        SigningKey({"kty": "oct", "k": "c2VjcmV0"})
    with pytest.raises(ValueError, match="not a private key"):
        SigningKey(ECKey.generate_key("P-256").as_pem(private=True, password="pw"))  # no password given
    with pytest.raises(ValueError, match="X25519 key cannot sign"):
        SigningKey(OKPKey.generate_key("X25519").as_dict(private=True))
    with pytest.raises(ValueError, match="cannot generate a key for the algorithm 'HS256'"):
        SigningKey.generate("HS256")
    key = SigningKey(private)
    assert private["d"] not in repr(key) and repr(key).startswith("<SigningKey ES256 ")


# ------------------------------------------------------------- without joserfc


def test_without_joserfc_what_needs_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pem = ECKey.generate_key("P-256").as_pem(private=True)
    monkeypatch.setitem(sys.modules, "joserfc", None)  # ``import joserfc`` now fails
    for needs_it in (
        lambda: SigningKey.generate(),
        lambda: SigningKey(pem),
        lambda: DPoP(),
        lambda: OAuth(interaction=None, dpop=True),
        lambda: OAuth(interaction=None, client_id="c", client_key=pem),
        lambda: ClientCredentials("c", client_key=pem),
    ):
        with pytest.raises(ImportError, match="need joserfc") as missing:
            needs_it()
        assert JWT_EXTRA in str(missing.value) and 'pip install "mcp-sync-py[jwt]"' in str(missing.value)
        assert missing.value.name == "joserfc"
    # What does not need it works without it.
    assert OAuth(interaction=None).dpop is None
    assert ClientCredentials("c", "secret").client_key is None
    assert WorkloadIdentity("a.b.c").assertion == "a.b.c"


def test_importing_the_auth_package_does_not_import_joserfc() -> None:
    code = "import sys, mcp_sync.client.auth; print('joserfc' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


# ------------------------------------------------------------------ the servers

TIMEOUT = 10.0
PING: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"

Handler = Callable[[Received], Reply]


def default_tokens(request: Received) -> Reply:
    return Reply(json={"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600})


class World:
    """An MCP server, its authorization server and an identity provider: three :class:`ScriptedServer` on 127.0.0.1.

    The MCP server (``POST /mcp``) answers a ping with a token the
    authorization server issued, and otherwise 401 naming its
    protected-resource metadata (:attr:`resource_metadata`, which names the
    authorization server). The authorization server publishes
    :attr:`metadata` and answers ``POST /token`` with :attr:`token_answer`
    (an access token ``at-1`` by default). The identity provider answers
    nothing until :meth:`identity_provider` scripts it. Each server records
    what every request carried.
    """

    def __init__(self) -> None:
        with ExitStack() as opening:
            self.mcp = opening.enter_context(ScriptedServer())
            self.authz = opening.enter_context(ScriptedServer())
            self.idp = opening.enter_context(ScriptedServer())
            self._servers = opening.pop_all()
        self.resource = self.mcp.url + "/mcp"
        self.prm = self.mcp.url + PRM_PATH
        self.issuer = self.authz.url
        self.token_endpoint = self.authz.url + "/token"
        self.idp_issuer = self.idp.url
        self.idp_token_endpoint = self.idp.url + "/oauth2/token"
        self.resource_metadata: dict[str, Any] = {"resource": self.resource, "authorization_servers": [self.issuer]}
        self.metadata: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.token_endpoint,
            "code_challenge_methods_supported": ["S256"],
        }
        self.token_answer: Handler = default_tokens
        self.issued: set[str] = set()
        self.mcp.on("POST", "/mcp", self._serve_mcp)
        self.mcp.on("GET", PRM_PATH, lambda request: Reply(json=self.resource_metadata))
        self.authz.on("GET", "/.well-known/oauth-authorization-server", lambda request: Reply(json=self.metadata))
        self.authz.on("POST", "/token", self._issue)

    def identity_provider(self, exchange: Reply | Handler, *, metadata: bool = True) -> None:
        """Script the identity provider: its metadata (where it has some) and its token endpoint's answer."""
        if metadata:
            document = {"issuer": self.idp_issuer, "token_endpoint": self.idp_token_endpoint}
            self.idp.on("GET", "/.well-known/openid-configuration", Reply(json=document))
        self.idp.on("POST", "/oauth2/token", exchange)

    def _serve_mcp(self, request: Received) -> Reply:
        _, _, presented = request.headers.get("authorization", "").partition(" ")
        if presented in self.issued:
            return Reply(json={"jsonrpc": "2.0", "id": 1, "result": {}})
        challenge = f'Bearer resource_metadata="{self.prm}"'
        return Reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": challenge})

    def _issue(self, request: Received) -> Reply:
        reply = self.token_answer(request)
        if reply.status == 200 and isinstance(reply.json, dict) and "access_token" in reply.json:
            self.issued.add(reply.json["access_token"])
        return reply

    def close(self) -> None:
        self._servers.close()

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@pytest.fixture
def world() -> Iterator[World]:
    with World() as made:
        yield made


def basic_of(request: Received) -> tuple[str, str]:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    assert scheme == "Basic"
    client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
    return client_id, secret


def proof_claims(request: Received, dpop: DPoP, url: str) -> dict[str, Any]:
    """The claims of the DPoP proof a request to ``url`` carried, verified with the public key alone.

    Its ``htm`` is the request's method and its ``htu`` exactly ``url``.
    """
    claims = decode(request.headers["dpop"], dpop.key).claims
    assert (claims["htm"], claims["htu"]) == (request.method, url)
    return claims


class Approve:
    """A person who approves at once: the redirect carries a code and the state."""

    redirect_uri = "http://127.0.0.1:9/callback"

    def authorize(self, url: str, timeout: float) -> str:
        state = parse_qs(urlsplit(url).query)["state"][0]
        return f"{self.redirect_uri}?code=the-code&state={state}"


def refused(reason: str) -> Callable[[MCPError], bool]:
    return lambda error: error.context.get("reason") == reason


# -------------------------------------------------------- private_key_jwt, DPoP


@pytest.mark.parametrize("audience", ["issuer", "token_endpoint"])
def test_the_code_flow_authenticates_with_private_key_jwt(world: World, audience: str) -> None:
    key = SigningKey.generate()
    auth = OAuth(client_id="web-app", client_key=key, assertion_audience=audience, interaction=Approve())
    tokens = auth.login(world.resource)
    assert tokens is not None and tokens.access_token == "at-1"
    [request] = world.authz.received("/token")
    form = request.form
    assert form["grant_type"] == "authorization_code" and form["code"] == "the-code"
    assert form["client_id"] == "web-app"
    assert form["client_assertion_type"] == CLIENT_ASSERTION_TYPE
    claims = decode(form["client_assertion"], key).claims
    assert claims["iss"] == claims["sub"] == "web-app"
    assert claims["aud"] == getattr(world, audience)  # the issuer URL, or the token endpoint URL
    assert "authorization" not in request.headers and "client_secret" not in form


def test_an_explicit_audience_url_is_used_as_it_is(world: World) -> None:
    key = SigningKey.generate()
    auth = ClientCredentials("svc", client_key=key, assertion_audience="https://aud.example")
    auth.login(world.resource)
    [request] = world.authz.received("/token")
    assert decode(request.form["client_assertion"], key).claims["aud"] == "https://aud.example"


def test_a_token_endpoint_asking_for_a_nonce_again_is_refused_after_one_retry(world: World) -> None:
    def token(request: Received) -> Reply:
        count = len(world.authz.received("/token"))
        return Reply(400, {"error": "use_dpop_nonce"}, headers={"DPoP-Nonce": f"n{count}"})

    world.token_answer = token
    auth = ClientCredentials("svc", "secret", dpop=True)
    assert auth.dpop is not None
    with pytest.raises(MCPError, match="400 use_dpop_nonce") as failure:
        auth.login(world.resource)
    assert refused("token_request_failed")(failure.value)
    first, second = world.authz.received("/token")
    assert "nonce" not in proof_claims(first, auth.dpop, world.token_endpoint)
    assert proof_claims(second, auth.dpop, world.token_endpoint)["nonce"] == "n1"
    assert basic_of(second) == ("svc", "secret")  # the client authenticates on each attempt


def test_with_dpop_a_bearer_token_is_still_presented_as_bearer(world: World) -> None:
    dpop = DPoP()
    # This authorization server ignores DPoP: its token is a Bearer token.
    auth = ClientCredentials("svc", "secret", dpop=dpop)
    assert auth.dpop is dpop
    response = requests.post(world.resource, json=PING, auth=auth, timeout=TIMEOUT)
    assert response.status_code == 200
    sent = world.mcp.received("/mcp")[-1]
    assert sent.headers["authorization"] == "Bearer at-1"
    assert "dpop" not in sent.headers
    [token_request] = world.authz.received("/token")
    proof_claims(token_request, dpop, world.token_endpoint)  # a proof was offered all the same


# ------------------------------------------------------------ client credentials


def test_client_credentials_need_a_secret_or_a_key() -> None:
    with pytest.raises(ValueError, match="needs client_secret or client_key"):
        ClientCredentials("svc")


def test_client_credentials_ask_for_no_refresh_token(world: World) -> None:
    world.resource_metadata["scopes_supported"] = ["mcp:read"]
    world.metadata["scopes_supported"] = ["mcp:read", "offline_access"]
    auth = ClientCredentials("svc", "secret")
    auth.login(world.resource)
    [request] = world.authz.received("/token")
    assert request.form == {"grant_type": "client_credentials", "resource": world.resource, "scope": "mcp:read"}
    assert basic_of(request) == ("svc", "secret")


# ---------------------------------------------------------- enterprise-managed


def id_jag(request: Received) -> Reply:
    return Reply(json={"access_token": "the-id-jag", "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"})


def test_enterprise_authorization_exchanges_the_id_token_then_presents_the_id_jag(world: World) -> None:
    world.resource_metadata["scopes_supported"] = ["mcp:read"]
    world.identity_provider(id_jag)
    ids = iter(["id-token-1", "id-token-2"])
    auth = EnterpriseAuthorization(
        "mcp-client",
        "mcp-secret",
        id_token=lambda: next(ids),
        idp_issuer=world.idp_issuer,
        idp_client_id="at-idp",
        idp_client_secret="idp-secret",
    )
    tokens = auth.login(world.resource)
    assert tokens is not None and tokens.access_token == "at-1"
    [exchange] = world.idp.received("/oauth2/token")
    assert exchange.form == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TYPE,
        "audience": world.issuer,
        "resource": world.resource,
        "subject_token": "id-token-1",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "scope": "mcp:read",
    }
    assert basic_of(exchange) == ("at-idp", "idp-secret")
    [grant] = world.authz.received("/token")
    assert grant.form == {
        "grant_type": JWT_BEARER,
        "assertion": "the-id-jag",
        "resource": world.resource,
        "scope": "mcp:read",
    }
    assert basic_of(grant) == ("mcp-client", "mcp-secret")


@pytest.mark.parametrize(
    ("exchange", "message"),
    [
        (Reply(400, {"error": "invalid_grant", "error_description": "bad"}), "400 invalid_grant bad"),
        (Reply(200, body=b"<html>"), "sent no identity assertion grant"),
        (Reply(json={"access_token": "x", "issued_token_type": "other"}), "sent no identity"),
        (Reply(json={"issued_token_type": ID_JAG_TYPE}), "sent no identity assertion grant"),
    ],
)
def test_a_token_exchange_the_identity_provider_refuses_ends_the_sign_in(
    world: World, exchange: Reply, message: str
) -> None:
    world.identity_provider(exchange)
    auth = EnterpriseAuthorization(
        "mcp-client",
        "mcp-secret",
        id_token="id-token",
        idp_issuer=world.idp_issuer,
        idp_token_endpoint=world.idp_token_endpoint,
    )
    with pytest.raises(MCPError, match=message) as failure:
        auth.login(world.resource)
    assert refused("token_exchange_failed")(failure.value)
    [exchange_request] = world.idp.received("/oauth2/token")
    assert "authorization" not in exchange_request.headers and "client_id" not in exchange_request.form
    assert not world.authz.received("/token")
    assert world.idp.paths() == ["/oauth2/token"]  # the endpoint was given: no metadata looked up


def test_an_identity_provider_without_metadata_or_secret(world: World) -> None:
    world.identity_provider(id_jag, metadata=False)
    auth = EnterpriseAuthorization("c", "s", id_token="t", idp_issuer=world.idp_issuer, idp_client_id="public-at-idp")
    with pytest.raises(MCPError, match="publishes no metadata") as failure:
        auth.login(world.resource)
    assert refused("metadata_unavailable")(failure.value)
    assert not world.idp.received("/oauth2/token")
    auth.idp_token_endpoint = world.idp_token_endpoint
    auth.login(world.resource)
    [exchange] = world.idp.received("/oauth2/token")
    assert exchange.form["client_id"] == "public-at-idp" and "authorization" not in exchange.headers


# ------------------------------------------------------------ workload identity


def test_a_workload_without_a_client_id_sends_the_assertion_alone(world: World) -> None:
    auth = WorkloadIdentity("workload.jwt")
    auth.login(world.resource)
    [request] = world.authz.received("/token")
    assert request.form == {"grant_type": JWT_BEARER, "assertion": "workload.jwt", "resource": world.resource}
    assert "authorization" not in request.headers


def test_a_workload_with_a_client_secret_authenticates(world: World) -> None:
    WorkloadIdentity("workload.jwt", client_id="w", client_secret="s").login(world.resource)
    [request] = world.authz.received("/token")
    assert basic_of(request) == ("w", "s")


def test_a_refused_assertion_is_not_sent_again(world: World) -> None:
    def token(request: Received) -> Reply:
        if request.form["assertion"] == "expired.jwt":
            return Reply(400, {"error": "invalid_grant", "error_description": "JWT assertion is expired"})
        return Reply(json={"access_token": "at-2", "token_type": "Bearer"})

    world.token_answer = token
    current = ["expired.jwt"]
    auth = WorkloadIdentity(lambda: current[0], client_id="w")
    with pytest.raises(MCPError, match="400 invalid_grant JWT assertion is expired") as first:
        auth.login(world.resource)
    with pytest.raises(MCPError) as second:
        auth.login(world.resource)
    assert second.value is first.value
    assert len(world.authz.received("/token")) == 1  # the refused assertion went once
    current[0] = "fresh.jwt"  # the platform rotated it
    tokens = auth.login(world.resource)
    assert tokens is not None and tokens.access_token == "at-2"
    assert [request.form["assertion"] for request in world.authz.received("/token")] == ["expired.jwt", "fresh.jwt"]
    assert world.authz.received("/token")[0].form["client_id"] == "w"


def test_an_unreachable_authorization_server_is_tried_again(world: World) -> None:
    # No protected-resource metadata: the MCP server's origin is its authorization server (2025-03-26),
    # with no metadata either, so the default token endpoint, which drops the connection.
    world.mcp.off("GET", PRM_PATH)
    world.mcp.on("POST", "/token", Reply(hang_up=True))
    auth = WorkloadIdentity("w.jwt")
    for _ in range(2):
        with pytest.raises(MCPError, match="could not reach") as failure:
            auth.login(world.resource)
        assert refused("unreachable")(failure.value)
        assert failure.value.message == f"could not reach {world.mcp.url}: ConnectionError"
    assert len(world.mcp.received("/token")) == 2  # not a refusal of the assertion: sent again
    assert world.authz.paths() == []
