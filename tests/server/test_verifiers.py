"""The token verifiers (``mcp_sync.server.authorization.verifiers``), against a real authorization server.

The JWTs are issued by panva's ``oidc-provider`` (``tests/authserver.py``)
through a real code flow, and checked by :class:`JWTVerifier` against its
real JWKS, found directly or by discovery; a second provider is another
issuer; one with 5-second tokens shows expiry. The same provider issues
opaque tokens for a second resource, which :class:`IntrospectionVerifier`
checks at its real introspection endpoint (and revocation shows the
cache's trade-off). What no real server will do on demand (its JWKS
rotating, going down and coming back on the same port, answering 5xx or
oversized documents, signing with EC and EdDSA keys, or with odd claims)
is served by :class:`LocalServer`, a small HTTP server in this file that
counts what it is asked, with tokens signed here by joserfc. Intervals run
on a fake clock; no test sleeps to synchronise, and no test measures time.
"""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import hmac
import json
import logging
import secrets
import socket
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
from authserver import AuthServer, running_authorization_server
from joserfc import jws, jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, Key, OctKey, OKPKey, RSAKey

from mcp_sync.server.authorization.tokens import (
    InsufficientScope,
    InvalidToken,
    VerifierUnavailable,
    token_principal,
    token_scopes,
)
from mcp_sync.server.authorization.verifiers import (
    JWT_EXTRA,
    MAX_DOCUMENT_BYTES,
    MAX_TOKEN_LENGTH,
    PLAIN_JWT_HINT,
    IntrospectionVerifier,
    JWTVerifier,
)

RESOURCE = "http://127.0.0.1:8931/mcp"
"""The MCP server the tokens are for (nothing listens there: only the authorization server and verifiers see it)."""
OTHER = "http://127.0.0.1:8931/other"
"""Another resource of the same authorization server: its tokens are not for :data:`RESOURCE`."""
OPAQUE = "http://127.0.0.1:8931/introspected"
"""A resource whose tokens are opaque, checked by introspection."""
TIMEOUT = 10.0


# ------------------------------------------------------------------------------------------ helpers


@dataclass
class Answer:
    """What :class:`LocalServer` answers on a path: a status and a JSON document (or raw bytes)."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        from urllib.parse import parse_qs

        return {name: values[0] for name, values in parse_qs(self.body.decode()).items()}


class LocalServer:
    """An HTTP server on 127.0.0.1 (on ``port``, or a free one) answering from :attr:`routes`; 404 elsewhere.

    A route's answer is an :class:`Answer` or a function of the request that
    returns one; every request is recorded (:meth:`count`, :attr:`seen`).
    """

    def __init__(self, routes: Mapping[str, Answer | Callable[[Seen], Answer]] | None = None, *, port: int = 0):
        self.routes: dict[str, Answer | Callable[[Seen], Answer]] = dict(routes or {})
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        local = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                with local._lock:
                    local.seen.append(request)
                    route = local.routes.get(self.path)
                answer = route(request) if callable(route) else route or Answer(404, {"error": "not_found"})
                body = answer.body if answer.body is not None else json.dumps(answer.json).encode()
                self.send_response(answer.status)
                for name, value in {"Content-Type": "application/json", **answer.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="local-auth-server")
        self._thread.start()

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for request in self.seen if request.path == path)

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Clock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingSession(requests.Session):
    """A ``requests.Session`` that records every request it makes (method and URL) and whether it was closed."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.closed = False

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.calls.append((str(method), str(url)))
        return super().request(method, url, *args, **kwargs)

    def close(self) -> None:
        self.closed = True
        super().close()


def dead_port() -> int:
    """A port of 127.0.0.1 on which nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def b64(data: bytes | Mapping[str, Any]) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(segment: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def segments(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    header, payload, signature = token.split(".")
    return unb64(header), unb64(payload), signature


def reassembled(token: str, *, header: Mapping[str, Any] | None = None, claims: Mapping[str, Any] | None = None) -> str:
    """The token with its header or claims replaced and its signature kept (so no longer valid)."""
    old_header, old_claims, signature = segments(token)
    header = header if header is not None else old_header
    claims = claims if claims is not None else old_claims
    return f"{b64(header)}.{b64(claims)}.{signature}"


def refused(verify: Callable[[str], Any], token: str, match: str) -> InvalidToken:
    """The InvalidToken ``verify`` raises for ``token``, whose message matches and never holds the token."""
    with pytest.raises(InvalidToken, match=match) as caught:
        verify(token)
    if len(token) > 8:
        assert token not in str(caught.value) and token not in caught.value.description
    assert '"' not in caught.value.description and "\\" not in caught.value.description  # RFC 6750 error_description
    return caught.value


def public_jwks(*keys: Key) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=False) for key in keys]}


def sign(key: Key, claims: Mapping[str, Any], *, alg: str = "ES256", **header: Any) -> str:
    """A JWT signed by ``key`` with ``alg``; ``header`` adds to ``typ: at+jwt`` and the key's ``kid``.

    A header set to ``None`` is left out.
    """
    full = {"alg": alg, "typ": "at+jwt", "kid": key.kid, **header}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)  # joserfc warns that EdDSA is deprecated (RFC 9864)
        return jwt.encode({k: v for k, v in full.items() if v is not None}, dict(claims), key, [alg], default_type=None)


def ec_key(kid: str, curve: str = "P-256") -> ECKey:
    return ECKey.generate_key(curve, {"kid": kid})


# ----------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthServer]:
    with running_authorization_server(RESOURCE, extra_resources=[OTHER], opaque_resources=[OPAQUE]) as running:
        yield running


@pytest.fixture(scope="module")
def token(provider: AuthServer) -> str:
    access_token: str = provider.issue_tokens()["access_token"]
    return access_token


@pytest.fixture(scope="module")
def provider_jwks(provider: AuthServer) -> dict[str, Any]:
    document: dict[str, Any] = requests.get(provider.metadata["jwks_uri"], timeout=TIMEOUT).json()
    return document


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def local() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield server


@pytest.fixture
def signer(local: LocalServer) -> ECKey:
    """An EC key whose public part ``local`` serves at ``/jwks``; ``local.url`` is the issuer of its tokens."""
    key = ec_key("local-1")
    local.routes["/jwks"] = Answer(json=public_jwks(key))
    return key


def claims_for(local: LocalServer, **changes: Any) -> dict[str, Any]:
    """Claims of a good token of ``local`` for :data:`RESOURCE`; ``changes`` replace some (``None`` drops one)."""
    now = int(time.time())
    claims = {"iss": local.url, "aud": RESOURCE, "sub": "bob", "client_id": "app", "scope": "mcp:read"}
    claims |= {"iat": now, "exp": now + 300, "jti": secrets.token_urlsafe(8), **changes}
    return {name: value for name, value in claims.items() if value is not None}


def local_verifier(local: LocalServer, clock: Clock | None = None, **options: Any) -> JWTVerifier:
    return JWTVerifier(local.url, RESOURCE, jwks_url=f"{local.url}/jwks", clock=clock or Clock(), **options)


# ------------------------------------------------------------------------------- JWT: real tokens


@pytest.mark.interop
def test_a_real_token_verifies_against_the_jwks_url_and_the_keys_are_fetched_once(
    provider: AuthServer, token: str
) -> None:
    session = CountingSession()
    with JWTVerifier(provider.issuer, RESOURCE, jwks_url=provider.metadata["jwks_uri"], session=session) as verifier:
        claims = verifier(token)
        for _ in range(5):
            assert verifier(token) == claims
    assert claims["iss"] == provider.issuer and claims["aud"] == RESOURCE
    assert claims["sub"] == "alice" and claims["scope"] == "mcp:read" and claims["exp"] > time.time()
    assert token_scopes(claims) == {"mcp:read"} and token_principal(claims) == "alice"
    assert claims == provider.verify(token)  # the fixture's own check agrees
    assert session.calls == [("GET", provider.metadata["jwks_uri"])]
    assert not session.closed  # a session given is the caller's to close


@pytest.mark.interop
def test_a_real_token_verifies_by_discovery_of_the_issuer(provider: AuthServer, token: str) -> None:
    session = CountingSession()
    verifier = JWTVerifier(provider.issuer, [OTHER, RESOURCE], session=session, required_scopes=["mcp:read"])
    assert verifier(token)["sub"] == "alice"
    assert verifier(token)["client_id"]
    assert verifier.jwks_url == provider.metadata["jwks_uri"]
    assert session.calls == [
        ("GET", f"{provider.issuer}/.well-known/oauth-authorization-server"),
        ("GET", provider.metadata["jwks_uri"]),
    ]
    assert repr(verifier) == f"JWTVerifier(issuer={provider.issuer!r}, audience={[OTHER, RESOURCE]!r})"
    verifier.close()
    assert not session.closed


@pytest.mark.interop
def test_a_verifier_closes_the_session_it_made(
    provider: AuthServer, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(requests, "Session", CountingSession)
    with JWTVerifier(provider.issuer, RESOURCE) as verifier:
        verifier(token)
    assert isinstance(verifier._session, CountingSession) and verifier._session.closed


@pytest.mark.interop
def test_a_real_token_expires(provider: AuthServer) -> None:
    with running_authorization_server(RESOURCE, access_ttl=5, opaque_resources=[OPAQUE]) as short:
        access_token = short.issue_tokens()["access_token"]
        opaque = short.issue_tokens(OPAQUE)["access_token"]
        client = short.register(token_endpoint_auth_method="client_secret_basic")
        introspect = short.metadata["introspection_endpoint"]
        strict = JWTVerifier(short.issuer, RESOURCE, leeway=0)
        lenient = JWTVerifier(short.issuer, RESOURCE, leeway=30)
        claims = strict(access_token)
        assert claims["exp"] - claims["iat"] == 5
        answer = IntrospectionVerifier(
            introspect, client_id=client["client_id"], client_secret=client["client_secret"]
        )(opaque)
        assert answer["active"] is True and answer["exp"] - answer["iat"] == 5
        expiry = max(claims["exp"], answer["exp"])
        while time.time() <= expiry:  # wait for the expiry itself, not for a guessed time
            time.sleep(max(0.01, expiry - time.time() + 0.01))
        refused(strict, access_token, "the token has expired")
        assert lenient(access_token)["sub"] == "alice"  # within the leeway for clock skew
        fresh = IntrospectionVerifier(introspect, client_id=client["client_id"], client_secret=client["client_secret"])
        refused(fresh, opaque, "not active")


@pytest.mark.interop
def test_a_token_for_another_resource_is_refused(provider: AuthServer, token: str) -> None:
    elsewhere = provider.issue_tokens(OTHER)["access_token"]
    assert segments(elsewhere)[1]["aud"] == OTHER
    verifier = JWTVerifier(provider.issuer, RESOURCE)
    refused(verifier, elsewhere, f"not meant for this server: its audience does not include {RESOURCE}")
    assert JWTVerifier(provider.issuer, [RESOURCE, OTHER])(elsewhere)["aud"] == OTHER


@pytest.mark.interop
def test_a_token_of_another_issuer_is_refused(provider: AuthServer, token: str) -> None:
    with running_authorization_server(RESOURCE) as second:
        foreign = second.issue_tokens()["access_token"]
        assert second.verify(foreign)["iss"] == second.issuer
        # Both providers name their key "test-key": the other issuer's token fails on the signature...
        refused(JWTVerifier(provider.issuer, RESOURCE), foreign, "signature does not verify")
        # ... and with the other issuer's keys, on the issuer.
        mixed = JWTVerifier(provider.issuer, RESOURCE, jwks_url=second.metadata["jwks_uri"])
        refused(mixed, foreign, f"issued by '{second.issuer}', not by {provider.issuer}")


@pytest.mark.interop
def test_a_tampered_token_is_refused(provider: AuthServer, token: str) -> None:
    verifier = JWTVerifier(provider.issuer, RESOURCE)
    _, claims, signature = segments(token)
    middle = len(signature) // 2
    flipped = signature[:middle] + ("A" if signature[middle] != "A" else "B") + signature[middle + 1 :]
    refused(verifier, f"{token.rsplit('.', 1)[0]}.{flipped}", "signature does not verify")
    refused(verifier, reassembled(token, claims={**claims, "scope": "mcp:read mcp:write"}), "signature does not")
    refused(verifier, reassembled(token, claims={**claims, "sub": "mallory"}), "signature does not verify")
    refused(verifier, token[:-8], "signature does not verify")  # a truncated signature
    assert verifier(token)["scope"] == "mcp:read"


@pytest.mark.interop
@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_an_unsigned_token_is_refused(provider: AuthServer, token: str, alg: str) -> None:
    header, claims, _ = segments(token)
    unsigned = f"{b64({**header, 'alg': alg})}.{b64(claims)}."
    refused(JWTVerifier(provider.issuer, RESOURCE), unsigned, r"not signed \(alg none\): unsigned tokens are refused")


@pytest.mark.interop
def test_hs256_signed_with_the_public_key_is_refused(
    provider: AuthServer, token: str, provider_jwks: dict[str, Any]
) -> None:
    """The classic key-confusion attack: the public key, as PEM or as JWK, used as the HMAC secret."""
    public = RSAKey.import_key(provider_jwks["keys"][0])
    header, claims, _ = segments(token)
    session = CountingSession()
    verifier = JWTVerifier(provider.issuer, RESOURCE, session=session)
    for secret in (public.as_pem(private=False), json.dumps(provider_jwks["keys"][0]).encode()):
        for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
            signing_input = f"{b64({**header, 'alg': alg})}.{b64(claims)}"
            forged = f"{signing_input}.{b64(hmac.new(secret, signing_input.encode(), digest).digest())}"
            refused(verifier, forged, f"signed with '{alg}', a shared-secret \\(HMAC\\) algorithm: refused")
    assert session.calls == []  # refused before any key is looked at


def test_a_symmetric_key_in_the_jwks_is_never_used(local: LocalServer, clock: Clock) -> None:
    secret = OctKey.generate_key(256, {"kid": "shared"})
    local.routes["/jwks"] = Answer(json={"keys": [secret.as_dict(private=True)]})
    verifier = local_verifier(local, clock)
    token = sign(secret, claims_for(local), alg="HS256")
    refused(verifier, token, "shared-secret")
    with pytest.raises(VerifierUnavailable, match="holds no public signing key"):
        verifier(sign(ec_key("shared"), claims_for(local)))


GARBAGE = [
    ("", "not a JWT"),
    ("garbage", "not a JWT"),
    ("a.b", "not a JWT"),
    ("a.b.c.d", "not a JWT"),
    ("a.b.c.d.e", r"encrypted \(JWE\)"),
    ("ab$.cd.ef", "not a JWT"),
    ("é.b.c", "not a JWT"),
    ("a b.c.d", "not a JWT"),
    ("abc.def.ghi", "not a well-formed JWT"),
    (f"{b64(b'[1, 2]')}.e30.c2ln", "not a well-formed JWT"),
    (f"{b64({'typ': 'at+jwt'})}.e30.c2ln", "not a well-formed JWT"),
    (f"{b64({'alg': 5, 'typ': 'at+jwt'})}.e30.c2ln", "header has no alg string"),
    (b64(b'["alg"]') + ".e30.c2ln", "header has no alg string"),
    (f"{b64({'alg': 'RS256', 'typ': 'at+jwt', 'kid': 7})}.e30.c2ln", "kid header is not a string"),
    (f"{b64({'alg': 'RS256', 'typ': 'at+jwt', 'x': 'y' * 600})}.e30.c2ln", "not a well-formed JWT"),
    (f"{b64({'alg': 'XX999', 'typ': 'at+jwt'})}.e30.c2ln", "algorithm 'XX999' is not accepted"),
    (b64({"alg": "RS256\r\nX: y", "typ": "at+jwt"}) + ".e30.c2ln", r"algorithm \(a value not shown\) is not"),
]


@pytest.mark.interop
@pytest.mark.parametrize(("garbage", "match"), GARBAGE)
def test_garbage_is_refused_without_a_key_fetch(provider: AuthServer, garbage: str, match: str) -> None:
    session = CountingSession()
    refused(JWTVerifier(provider.issuer, RESOURCE, session=session), garbage, match)
    assert session.calls == []


@pytest.mark.interop
def test_an_oversized_token_is_refused_before_it_is_parsed(provider: AuthServer, token: str) -> None:
    header, claims, signature = segments(token)
    padded = f"{b64(header)}.{b64({**claims, 'pad': 'x' * MAX_TOKEN_LENGTH})}.{signature}"
    session = CountingSession()
    verifier = JWTVerifier(provider.issuer, RESOURCE, session=session)
    for oversized in (padded, "a" * (MAX_TOKEN_LENGTH + 1), "é" * (MAX_TOKEN_LENGTH + 1)):
        refused(verifier, oversized, f"longer than {MAX_TOKEN_LENGTH} bytes")
    assert session.calls == []


@pytest.mark.interop
def test_a_flood_of_unknown_kids_costs_one_jwks_fetch_per_interval(
    provider: AuthServer, token: str, provider_jwks: dict[str, Any], clock: Clock
) -> None:
    header = segments(token)[0]
    with LocalServer({"/jwks": Answer(json=provider_jwks)}) as local:
        verifier = JWTVerifier(
            provider.issuer, RESOURCE, jwks_url=f"{local.url}/jwks", refresh_interval=30, clock=clock
        )
        assert verifier(token)["sub"] == "alice"
        assert local.count("/jwks") == 1

        def flood() -> None:
            for _ in range(25):
                forged = reassembled(token, header={**header, "kid": secrets.token_urlsafe(6)})
                refused(verifier, forged, "signed with a key the issuer does not publish")

        for _round in range(3):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for done in [pool.submit(flood) for _ in range(8)]:
                    done.result(TIMEOUT)  # a failed check in a thread fails the test here
            fetches = local.count("/jwks")
            clock.advance(30)
        assert fetches == 1 + 2  # none in the first interval (the keys were just fetched), one in each later one
        assert local.count("/jwks") == 3
        assert verifier(token)["sub"] == "alice"
        assert local.count("/jwks") == 3  # a known kid never fetches


@pytest.mark.interop
def test_concurrent_first_requests_share_one_fetch(
    provider: AuthServer, token: str, provider_jwks: dict[str, Any]
) -> None:
    release = threading.Event()

    def slow_jwks(request: Seen) -> Answer:
        release.wait(TIMEOUT)
        return Answer(json=provider_jwks)

    with LocalServer({"/jwks": slow_jwks}) as local:
        verifier = JWTVerifier(provider.issuer, RESOURCE, jwks_url=f"{local.url}/jwks", clock=Clock())
        refresh, entered = verifier._refresh, Counter[str]()

        def counted(seen: int) -> Any:
            entered["refresh"] += 1
            return refresh(seen)

        verifier._refresh = counted  # type: ignore[method-assign]
        results: list[str] = []
        threads = [threading.Thread(target=lambda: results.append(verifier(token)["sub"])) for _ in range(6)]
        for thread in threads:
            thread.start()
        while entered["refresh"] < 6 or local.count("/jwks") == 0:
            time.sleep(0.01)  # one thread fetches (held at the server), five wait for it
        release.set()
        for thread in threads:
            thread.join(TIMEOUT)
        assert results == ["alice"] * 6
        assert local.count("/jwks") == 1


def test_a_rotated_key_is_picked_up_at_the_next_refresh(local: LocalServer, signer: ECKey, clock: Clock) -> None:
    verifier = local_verifier(local, clock, refresh_interval=60)
    assert verifier(sign(signer, claims_for(local)))["sub"] == "bob"
    rotated = ec_key("local-2")
    local.routes["/jwks"] = Answer(json=public_jwks(signer, rotated))
    new_token = sign(rotated, claims_for(local))
    refused(verifier, new_token, "signed with a key the issuer does not publish \\(kid 'local-2'\\)")
    clock.advance(60)
    assert verifier(new_token)["sub"] == "bob"
    assert verifier(sign(signer, claims_for(local)))["sub"] == "bob"
    assert local.count("/jwks") == 2


def test_tokens_without_a_kid(local: LocalServer, signer: ECKey, clock: Clock) -> None:
    verifier = local_verifier(local, clock)
    assert verifier(sign(signer, claims_for(local), kid=None))["sub"] == "bob"  # the one key for ES256
    rsa = RSAKey.generate_key(2048, {"kid": "rsa-1"})
    refused(
        verifier,
        sign(rsa, claims_for(local), alg="RS256", kid=None),
        "names no key \\(kid\\) and the issuer has no key for RS256",
    )
    local.routes["/jwks"] = Answer(json=public_jwks(signer, ec_key("local-2"), rsa))
    clock.advance(3600)
    refused(
        verifier,
        sign(signer, claims_for(local), kid=None),
        "names no key \\(kid\\) and the issuer has 2 keys for ES256",
    )
    assert verifier(sign(rsa, claims_for(local), alg="RS256", kid=None))["sub"] == "bob"
    assert verifier(sign(signer, claims_for(local)))["sub"] == "bob"  # with its kid, no doubt
    assert local.count("/jwks") == 2


@pytest.mark.parametrize(
    ("alg", "make_key"),
    [
        ("RS256", lambda: RSAKey.generate_key(2048, {"kid": "k"})),
        ("RS512", lambda: RSAKey.generate_key(2048, {"kid": "k"})),
        ("PS256", lambda: RSAKey.generate_key(2048, {"kid": "k"})),
        ("ES256", lambda: ECKey.generate_key("P-256", {"kid": "k"})),
        ("ES384", lambda: ECKey.generate_key("P-384", {"kid": "k"})),
        ("ES512", lambda: ECKey.generate_key("P-521", {"kid": "k"})),
        ("EdDSA", lambda: OKPKey.generate_key("Ed25519", {"kid": "k"})),
        ("Ed25519", lambda: OKPKey.generate_key("Ed25519", {"kid": "k"})),
    ],
)
def test_each_default_algorithm_verifies(local: LocalServer, alg: str, make_key: Callable[[], Key]) -> None:
    key = make_key()
    local.routes["/jwks"] = Answer(json=public_jwks(key))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SecurityWarning per request, even for EdDSA
        assert local_verifier(local)(sign(key, claims_for(local), alg=alg))["sub"] == "bob"


def test_algorithms_and_keys_must_agree(local: LocalServer, clock: Clock) -> None:
    rsa = RSAKey.generate_key(2048, {"kid": "rsa"})
    curve384 = ec_key("p384", "P-384")
    local.routes["/jwks"] = Answer(json={"keys": [{**rsa.as_dict(private=False), "alg": "RS256", "use": "sig"}]})
    local.routes["/jwks"].json["keys"].append(curve384.as_dict(private=False))
    only_es256 = local_verifier(local, clock, algorithms=["ES256"])
    refused(only_es256, sign(rsa, claims_for(local), alg="RS256"), "algorithm 'RS256' is not accepted")
    verifier = local_verifier(local, clock)
    assert verifier(sign(rsa, claims_for(local), alg="RS256"))["sub"] == "bob"
    # The key is declared for RS256: a PS256 signature by it is not looked for, nor a P-384 key for ES256.
    refused(verifier, sign(rsa, claims_for(local), alg="PS256"), "does not publish \\(kid 'rsa'\\)")
    refused(verifier, sign(ec_key("p384"), claims_for(local), alg="ES256"), "does not publish \\(kid 'p384'\\)")
    assert verifier(sign(curve384, claims_for(local), alg="ES384"))["sub"] == "bob"
    assert local.count("/jwks") == 1


def test_keys_the_jwks_must_not_offer_are_skipped(local: LocalServer, clock: Clock) -> None:
    good = ec_key("good")
    private = ec_key("private")
    for_encryption = ec_key("enc")
    verify_not_allowed = ec_key("ops")
    broken = {"kty": "EC", "crv": "P-256", "kid": "broken", "x": "AAAA", "y": "AAAA"}
    agreement = OKPKey.generate_key("X25519", {"kid": "x25519"})
    signing = OKPKey.generate_key("Ed25519", {"kid": "x25519"})
    local.routes["/jwks"] = Answer(
        json={
            "keys": [
                private.as_dict(private=True),
                {**for_encryption.as_dict(private=False), "use": "enc"},
                {**verify_not_allowed.as_dict(private=False), "key_ops": ["encrypt"]},
                {**ec_key("ops-odd").as_dict(private=False), "key_ops": 5},
                agreement.as_dict(private=False),
                {"kty": ["RSA"]},
                broken,
                {"kty": "unknown"},
                "not a key",
                good.as_dict(private=False),
            ]
        }
    )
    verifier = local_verifier(local, clock)
    assert verifier(sign(good, claims_for(local)))["sub"] == "bob"
    for key in (private, for_encryption, verify_not_allowed):
        refused(verifier, sign(key, claims_for(local)), f"does not publish \\(kid '{key.kid}'\\)")
    refused(verifier, sign(ec_key("ops-odd"), claims_for(local)), "does not publish \\(kid 'ops-odd'\\)")
    refused(verifier, sign(signing, claims_for(local), alg="EdDSA"), "does not publish \\(kid 'x25519'\\)")


def test_header_checks(local: LocalServer, signer: ECKey) -> None:
    verifier = local_verifier(local)
    plain = local_verifier(local, allow_plain_jwt=True)
    for typ in ("at+jwt", "AT+JWT", "application/at+jwt"):
        assert verifier(sign(signer, claims_for(local), typ=typ))["sub"] == "bob"
    for typ, shown in (("JWT", "'JWT'"), (None, r"\(a value not shown\)"), ("application/jwt", "'application/jwt'")):
        refused(verifier, sign(signer, claims_for(local), typ=typ), f"type \\(typ header\\) is {shown}, not 'at\\+jwt'")
        assert plain(sign(signer, claims_for(local), typ=typ))["sub"] == "bob"
    for typ in ("dpop+jwt", "id_token+jwt"):
        refused(plain, sign(signer, claims_for(local), typ=typ), "it is no access token")
    good = sign(signer, claims_for(local))
    for odd in (5, ["at+jwt"], {"at+jwt": 1}):
        forged = reassembled(good, header={**segments(good)[0], "typ": odd})
        refused(plain, forged, "typ header\\) is \\(a value not shown")
    for extra in ({"crit": ["exp"], "exp": 1}, {"b64": True}):
        refused(verifier, reassembled(good, header={**segments(good)[0], **extra}), "critical header parameters")
    for extra in ({"jku": 5}, {"x5c": "not a list"}):
        refused(verifier, reassembled(good, header={**segments(good)[0], **extra}), "header is not valid \\(Invalid")
    # Headers that name other keys are ignored: the key is the issuer's.
    stranger = ec_key("local-1")
    embedded = sign(stranger, claims_for(local), jwk=stranger.as_dict(private=False), jku=f"{local.url}/evil")
    refused(verifier, embedded, "signature does not verify")
    assert local.count("/evil") == 0


def test_a_plain_jwt_refused_tells_the_operator_how_to_accept_it_and_the_client_no_more(
    local: LocalServer, signer: ECKey, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = local_verifier(local)
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.server.authorization.verifiers"):
        for typ, shown in (("JWT", "'JWT'"), (None, "(a value not shown)"), ("application/jwt", "'application/jwt'")):
            refusal = refused(verifier, sign(signer, claims_for(local), typ=typ), "allow_plain_jwt=True")
            # What the client is sent (the answer's error_description) is what it was before.
            assert (
                refusal.description == f"the token's type (typ header) is {shown}, not 'at+jwt': it is no access token"
            )
            assert refusal.hint == PLAIN_JWT_HINT and "Keycloak" in str(refusal)
        other = refused(verifier, sign(signer, claims_for(local), typ="dpop+jwt"), "it is no access token")
        assert other.hint is None and str(other) == other.description  # no option would accept that one
    hints = [record for record in caplog.records if "allow_plain_jwt=True" in record.getMessage()]
    assert len(hints) == 1 and hints[0].levelname == "WARNING"  # once per verifier, however many tokens come
    assert "Entra ID" in hints[0].getMessage() and "JWTVerifier(issuer=" in hints[0].getMessage()
    # Through the HTTP app: the 401 says what it said before, not how the server could be made to accept it.
    from mcp_sync import MCPServer
    from mcp_sync.server import start_http

    metadata = {"authorization_servers": [local.url]}
    with start_http(MCPServer("guarded"), token_verifier=verifier, resource_metadata=metadata) as running:
        token = sign(signer, claims_for(local), typ="JWT")
        answer = requests.post(running.url, json={}, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    assert answer.status_code == 401
    challenge = answer.headers["WWW-Authenticate"]
    assert (
        "error_description=\"the token's type (typ header) is 'JWT', not 'at+jwt': it is no access token\"" in challenge
    )
    assert "allow_plain_jwt" not in challenge + answer.text and "Keycloak" not in challenge + answer.text


def test_the_jws_registry_allows_only_the_algorithm_asked_for() -> None:
    """The registry the verifier checks signatures with (its own, to spare EdDSA a warning per request)."""
    from joserfc.errors import UnsupportedAlgorithmError

    from mcp_sync.server.authorization.verifiers import _registry_class

    registry = _registry_class()(algorithms=["EdDSA"])
    assert registry.get_alg("EdDSA").name == "EdDSA"
    for name in ("ES256", "HS256", "none", "nope"):
        with pytest.raises(UnsupportedAlgorithmError):
            registry.get_alg(name)
    with pytest.raises(UnsupportedAlgorithmError):
        _registry_class()().get_alg("RS256")  # no algorithm allowed unless named


def test_payloads_that_are_not_claims(local: LocalServer, signer: ECKey) -> None:
    verifier = local_verifier(local)
    for payload in (b"not json", b"[1, 2]", b'"text"'):
        signed = jws.serialize_compact({"alg": "ES256", "typ": "at+jwt", "kid": "local-1"}, payload, signer)
        refused(verifier, signed, "payload is not a JSON object of claims")


CLAIMS = [
    ({"exp": None}, "has no expiry"),
    ({"exp": "tomorrow"}, "exp claim is not a number"),
    ({"exp": True}, "exp claim is not a number"),
    ({"exp": float("inf")}, "exp claim is not a number"),
    ({"exp": -90}, "has expired"),  # well past the 30 s leeway, whatever second the check falls in
    ({"nbf": 90}, "not valid yet"),
    ({"iat": 90}, "issued in the future"),
    ({"iss": None}, "issued by \\(a value not shown\\), not by"),
    ({"iss": "http://127.0.0.1:1"}, "issued by 'http://127.0.0.1:1', not by"),
    ({"aud": None}, "not meant for this server"),
    ({"aud": [OTHER]}, "not meant for this server"),
    ({"aud": {"url": RESOURCE}}, "not meant for this server"),
    ({"aud": [["nested"], 5]}, "not meant for this server"),
    ({"sub": None, "client_id": None}, "names no subject \\(sub\\) and no client \\(client_id\\)"),
    ({"sub": "", "client_id": None}, "names no subject"),
]


@pytest.mark.parametrize(("changes", "match"), CLAIMS)
def test_claims_that_are_refused(local: LocalServer, signer: ECKey, changes: dict[str, Any], match: str) -> None:
    now = int(time.time())
    relative = {
        name: now + value if name in ("exp", "nbf", "iat") and type(value) is int else value
        for name, value in changes.items()
    }
    refused(local_verifier(local), sign(signer, claims_for(local, **relative)), match)


def test_clock_skew_within_the_leeway_is_accepted(local: LocalServer, signer: ECKey) -> None:
    now = int(time.time())
    verifier = local_verifier(local, leeway=30)
    for changes in ({"exp": now - 20}, {"nbf": now + 20}, {"iat": now + 20}):
        assert verifier(sign(signer, claims_for(local, **changes)))["sub"] == "bob"
    refused(local_verifier(local, leeway=0), sign(signer, claims_for(local, exp=now)), "has expired")


def test_claims_are_normalised_for_the_app(local: LocalServer, signer: ECKey) -> None:
    verifier = local_verifier(local, required_scopes=["mcp:read"])
    cases = [
        ({"scope": "mcp:read  mcp:write"}, "mcp:read mcp:write"),
        ({"scope": ["mcp:read", "mcp:write"]}, "mcp:read mcp:write"),
        ({"scope": None, "scp": ["mcp:read", "admin"]}, "mcp:read admin"),
        ({"scope": None, "scp": "mcp:read admin"}, "mcp:read admin"),
        ({"scope": 5, "scp": ["mcp:read"]}, "mcp:read"),
    ]
    for changes, scope in cases:
        claims = verifier(sign(signer, claims_for(local, **changes)))
        assert claims["scope"] == scope and "mcp:read" in token_scopes(claims)
    unscoped = local_verifier(local)(sign(signer, claims_for(local, scope=7)))
    assert "scope" not in unscoped and token_scopes(unscoped) == frozenset()
    azp = local_verifier(local)(sign(signer, claims_for(local, sub=None, client_id=None, azp="web-app")))
    assert azp["client_id"] == "web-app" and token_principal(azp) == "web-app"
    client_only = local_verifier(local)(sign(signer, claims_for(local, sub=None)))
    assert token_principal(client_only) == "app"


def test_missing_scopes_raise_insufficient_scope(local: LocalServer, signer: ECKey) -> None:
    verifier = local_verifier(local, required_scopes=["mcp:write", "mcp:read", "admin"])
    with pytest.raises(InsufficientScope) as caught:
        verifier(sign(signer, claims_for(local, scope="mcp:read")))
    assert caught.value.status == 403 and caught.value.error == "insufficient_scope"
    assert caught.value.scope == "admin mcp:read mcp:write"
    assert caught.value.description == "the token lacks the scopes admin mcp:write"
    assert isinstance(caught.value, InvalidToken)
    one = local_verifier(local, required_scopes=["admin"])
    refused(one, sign(signer, claims_for(local, scope=None)), "^the token lacks the scope admin$")


# ---------------------------------------------------------------------- JWT: the JWKS unavailable


def test_a_jwks_endpoint_that_is_down_then_comes_back(signer: ECKey, clock: Clock) -> None:
    port = dead_port()
    issuer = f"http://127.0.0.1:{port}"
    session = CountingSession()
    verifier = JWTVerifier(
        issuer, RESOURCE, jwks_url=f"{issuer}/jwks", refresh_interval=20, clock=clock, session=session
    )
    now = int(time.time())
    token = sign(signer, {"iss": issuer, "aud": RESOURCE, "sub": "bob", "exp": now + 300})
    with pytest.raises(VerifierUnavailable, match=f"the JWKS at {issuer}/jwks cannot be reached") as caught:
        verifier(token)
    assert caught.value.status == 503 and caught.value.retry_after == 20
    assert token not in str(caught.value)
    clock.advance(5)
    with pytest.raises(VerifierUnavailable) as again:
        verifier(token)
    assert again.value.retry_after == 15
    assert len(session.calls) == 1  # no fetch per request while it is down
    with LocalServer({"/jwks": Answer(json=public_jwks(signer))}, port=port) as local:
        with pytest.raises(VerifierUnavailable):
            verifier(token)  # the next attempt is not due yet
        assert local.count("/jwks") == 0
        clock.advance(15)
        assert verifier(token)["sub"] == "bob"
        assert local.count("/jwks") == 1


BROKEN_JWKS = [
    (Answer(502, {"error": "bad gateway"}), "answered 502"),
    (Answer(404, {"error": "not_found"}), "answered 404 without a JSON key set"),
    (Answer(200, body=b"<html>"), "answered 200 without a JSON key set"),
    (Answer(200, {"keys": "none"}), "answered 200 without a JSON key set"),
    (Answer(200, ["keys"]), "answered 200 without a JSON key set"),
    (Answer(200, {"keys": []}), "holds no public signing key"),
    (Answer(200, body=b" " * (MAX_DOCUMENT_BYTES + 1)), f"answered more than {MAX_DOCUMENT_BYTES} bytes"),
]


@pytest.mark.parametrize(("answer", "match"), BROKEN_JWKS)
def test_a_broken_jwks_makes_the_verifier_unavailable(
    local: LocalServer, signer: ECKey, clock: Clock, answer: Answer, match: str
) -> None:
    token = sign(signer, claims_for(local))
    local.routes["/jwks"] = answer
    verifier = local_verifier(local, clock)
    with pytest.raises(VerifierUnavailable, match=match):
        verifier(token)
    local.routes["/jwks"] = Answer(json=public_jwks(signer))
    clock.advance(30)
    assert verifier(token)["sub"] == "bob"


def test_stale_keys_are_refetched_and_kept_while_the_jwks_fails(
    local: LocalServer, signer: ECKey, clock: Clock
) -> None:
    verifier = local_verifier(local, clock, refresh_interval=10, max_key_age=100)
    token = sign(signer, claims_for(local))
    verifier(token)
    clock.advance(99)
    verifier(token)
    assert local.count("/jwks") == 1
    clock.advance(1)
    verifier(token)
    assert local.count("/jwks") == 2  # the keys were 100 seconds old
    local.routes["/jwks"] = Answer(503, {"error": "maintenance"})
    clock.advance(100)
    assert verifier(token)["sub"] == "bob"  # the fetch failed; the stale key still serves
    verifier(token)
    assert local.count("/jwks") == 3
    with pytest.raises(VerifierUnavailable, match="answered 503"):  # a new key may be behind the failure
        verifier(sign(ec_key("local-2"), claims_for(local)))
    clock.advance(10)
    verifier(token)
    assert local.count("/jwks") == 4


def test_discovery_tries_rfc_8414_then_openid_both_placements(signer: ECKey, clock: Clock) -> None:
    with LocalServer() as local:
        issuer = f"{local.url}/tenant"
        document = {"issuer": issuer, "jwks_uri": f"{local.url}/keys"}
        local.routes |= {"/tenant/.well-known/openid-configuration": Answer(json=document)}
        local.routes |= {"/keys": Answer(json=public_jwks(signer))}
        verifier = JWTVerifier(issuer, RESOURCE, clock=clock)
        assert verifier(sign(signer, claims_for(local, iss=issuer)))["iss"] == issuer
        assert [request.path for request in local.seen] == [
            "/.well-known/oauth-authorization-server/tenant",
            "/.well-known/openid-configuration/tenant",
            "/tenant/.well-known/openid-configuration",
            "/keys",
        ]
        clock.advance(3600)
        verifier(sign(signer, claims_for(local, iss=issuer)))
        assert [request.path for request in local.seen][4:] == ["/keys"]  # discovery happens once


BROKEN_METADATA = [
    ({}, "no metadata found for the issuer"),
    ({"/.well-known/oauth-authorization-server": Answer(500, {})}, "the issuer's metadata at .* answered 500"),
    ({"/.well-known/oauth-authorization-server": Answer(200, body=b"nope")}, "answered 200 without a JSON object"),
    ({"/.well-known/oauth-authorization-server": Answer(302, {})}, "answered 302 without a JSON object"),
    ({"/.well-known/openid-configuration": Answer(json={"issuer": "http://elsewhere"})}, "is not that of the issuer"),
    ({"/.well-known/openid-configuration": "no jwks_uri"}, "has no jwks_uri"),
]


@pytest.mark.parametrize(("routes", "match"), BROKEN_METADATA)
def test_broken_discovery_makes_the_verifier_unavailable(
    signer: ECKey, routes: dict[str, Answer | str], match: str
) -> None:
    with LocalServer() as local:
        for path, answer in routes.items():
            local.routes[path] = answer if isinstance(answer, Answer) else Answer(json={"issuer": local.url})
        with pytest.raises(VerifierUnavailable, match=match):
            JWTVerifier(local.url, RESOURCE)(sign(signer, claims_for(local)))


def test_an_unreachable_issuer_makes_the_verifier_unavailable(signer: ECKey) -> None:
    issuer = f"http://127.0.0.1:{dead_port()}"
    with pytest.raises(VerifierUnavailable, match=r"the issuer's metadata at .* cannot be reached \(ConnectionError\)"):
        JWTVerifier(issuer, RESOURCE, timeout=2)(sign(signer, {"iss": issuer, "aud": RESOURCE, "sub": "b", "exp": 2e9}))


# ------------------------------------------------------------------------------- JWT: construction


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"issuer": ""}, "issuer must be"),
        ({"audience": []}, "at least one resource URL"),
        ({"audience": [""]}, "non-empty string"),
        ({"audience": [RESOURCE, 5]}, "non-empty string"),
        ({"algorithms": ["HS256"]}, "public-key signature algorithms"),
        ({"algorithms": ["RS256", "none"]}, "not \\['none'\\]"),
        ({"algorithms": []}, "none at all"),
        ({"leeway": -1}, "leeway must be zero or more"),
        ({"leeway": float("nan")}, "leeway must be zero or more"),
        ({"refresh_interval": 0}, "refresh_interval must be a positive"),
        ({"max_key_age": -5}, "max_key_age must be a positive"),
        ({"timeout": 0}, "timeout must be a positive"),
    ],
)
def test_a_verifier_refuses_a_bad_configuration(options: dict[str, Any], match: str) -> None:
    arguments = {"issuer": "https://auth.example", "audience": RESOURCE} | options
    with pytest.raises(ValueError, match=match):
        JWTVerifier(arguments.pop("issuer"), arguments.pop("audience"), **arguments)


def test_without_joserfc_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "joserfc", None)
    with pytest.raises(
        ImportError, match='JWTVerifier needs joserfc, an optional extra: pip install "mcp-sync-py\\[jwt\\]"'
    ):
        JWTVerifier("https://auth.example", RESOURCE)
    assert JWT_EXTRA == 'pip install "mcp-sync-py[jwt]"'


@pytest.mark.interop
def test_no_token_is_ever_logged(
    provider: AuthServer, token: str, local: LocalServer, signer: ECKey, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    verifier = JWTVerifier(provider.issuer, RESOURCE)
    verifier(token)
    header, _, signature = segments(token)
    for bad in (token[:-4], reassembled(token, header={**header, "kid": "x"}), "garbage"):
        with pytest.raises(InvalidToken):
            verifier(bad)
    down = JWTVerifier(local.url, RESOURCE, jwks_url=f"http://127.0.0.1:{dead_port()}/jwks")
    with pytest.raises(VerifierUnavailable):
        down(token)
    assert "cannot fetch the keys of" in caplog.text
    assert signature not in caplog.text and token.split(".")[1] not in caplog.text


# ------------------------------------------------------------------------------ introspection: real


@pytest.fixture(scope="module")
def opaque(provider: AuthServer) -> dict[str, Any]:
    tokens: dict[str, Any] = provider.issue_tokens(OPAQUE, scope="mcp:read mcp:write")
    return tokens


@pytest.fixture(scope="module")
def confidential(provider: AuthServer) -> dict[str, Any]:
    """A client with a secret (HTTP Basic): the resource server's own registration, to introspect with."""
    return provider.register(token_endpoint_auth_method="client_secret_basic")


def introspector(provider: AuthServer, client: Mapping[str, Any], **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(
        provider.metadata["introspection_endpoint"],
        client_id=client["client_id"],
        client_secret=client["client_secret"],
        **options,
    )


@pytest.mark.interop
def test_introspection_of_a_real_opaque_token_is_cached(
    provider: AuthServer, opaque: dict[str, Any], confidential: dict[str, Any]
) -> None:
    session = CountingSession()
    verifier = introspector(provider, confidential, audience=OPAQUE, required_scopes=["mcp:write"], session=session)
    claims = verifier(opaque["access_token"])
    assert claims["active"] is True and claims["aud"] == OPAQUE and claims["iss"] == provider.issuer
    assert claims["scope"] == "mcp:read mcp:write" and token_principal(claims) == "alice"
    assert claims["client_id"] != confidential["client_id"] and claims["exp"] > time.time()
    for _ in range(5):
        assert verifier(opaque["access_token"]) == claims
    assert session.calls == [("POST", provider.metadata["introspection_endpoint"])]
    assert confidential["client_secret"] not in repr(verifier)
    verifier.close()
    assert not session.closed


@pytest.mark.interop
def test_introspection_with_client_secret_post(provider: AuthServer, opaque: dict[str, Any]) -> None:
    client = provider.register(token_endpoint_auth_method="client_secret_post")
    with introspector(provider, client, auth_method="client_secret_post") as verifier:
        assert verifier(opaque["access_token"])["sub"] == "alice"
    wrong = introspector(provider, {**client, "client_secret": "wrong"}, auth_method="client_secret_post")
    with pytest.raises(VerifierUnavailable, match=r"refused the client .* \(401\)"):
        wrong(opaque["access_token"])


@pytest.mark.interop
def test_introspection_refusals_from_the_real_server(
    provider: AuthServer, opaque: dict[str, Any], confidential: dict[str, Any], token: str, clock: Clock
) -> None:
    session = CountingSession()
    verifier = introspector(provider, confidential, audience=RESOURCE, session=session, clock=clock, negative_ttl=5)
    refused(verifier, opaque["access_token"], f"not meant for this server: its audience does not include {RESOURCE}")
    scoped = introspector(provider, confidential, required_scopes=["admin"])
    with pytest.raises(InsufficientScope, match="lacks the scope admin"):
        scoped(opaque["access_token"])
    # oidc-provider does not introspect JWT access tokens: a 400 about the token.
    refused(verifier, token, "does not introspect this token \\(unsupported_token_type\\)")
    unknown = secrets.token_urlsafe(32)
    refused(verifier, unknown, "the token is not active")
    refused(verifier, unknown, "the token is not active")
    posts = len(session.calls)
    clock.advance(5)
    refused(verifier, unknown, "the token is not active")
    assert len(session.calls) == posts + 1  # an inactive answer is kept only briefly


@pytest.mark.interop
def test_a_revoked_token_passes_until_its_cached_answer_expires(
    provider: AuthServer, confidential: dict[str, Any], clock: Clock
) -> None:
    fresh = provider.issue_tokens(OPAQUE)["access_token"]
    verifier = introspector(provider, confidential, cache_ttl=60, clock=clock)
    owner = verifier(fresh)["client_id"]
    revoked = requests.post(
        provider.metadata["revocation_endpoint"], data={"token": fresh, "client_id": owner}, timeout=TIMEOUT
    )
    assert revoked.status_code == 200, revoked.text
    assert verifier(fresh)["active"] is True  # the cached answer, by design
    clock.advance(60)
    refused(verifier, fresh, "the token is not active")


# ---------------------------------------------------------------------------- introspection: local


def local_introspector(local: LocalServer, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(f"{local.url}/introspect", client_id="rs", client_secret="s3cret", **options)


def active(**claims: Any) -> Answer:
    return Answer(json={"active": True, "sub": "bob", "client_id": "app", "scope": "mcp:read", **claims})


def test_introspection_requests_carry_the_client_authentication(local: LocalServer) -> None:
    local.routes["/introspect"] = active()
    odd = IntrospectionVerifier(f"{local.url}/introspect", client_id="my client:1", client_secret="p&ss w:rd%")
    assert odd("tok-1")["sub"] == "bob"
    basic = local.seen[-1]
    assert basic.method == "POST" and basic.headers["accept"] == "application/json"
    assert basic.form == {"token": "tok-1", "token_type_hint": "access_token"}
    credentials = base64.b64decode(basic.headers["authorization"].removeprefix("Basic ")).decode()
    assert credentials == "my+client%3A1:p%26ss+w%3Ard%25"  # form-encoded first (RFC 6749 section 2.3.1)
    local_introspector(local, auth_method="client_secret_post")("tok-2")
    post = local.seen[-1]
    assert "authorization" not in post.headers
    assert post.form == {
        "token": "tok-2",
        "token_type_hint": "access_token",
        "client_id": "rs",
        "client_secret": "s3cret",
    }


INTROSPECTION_FAILURES = [
    (Answer(500, {"error": "server_error"}), VerifierUnavailable, "answered 500"),
    (Answer(404, {"error": "not_found"}), VerifierUnavailable, "answered 404 without a JSON object"),
    (Answer(302, {}, headers={"Location": "http://127.0.0.1:1/"}), VerifierUnavailable, "answered 302"),
    (Answer(200, body=b"active"), VerifierUnavailable, "answered 200 without a JSON object"),
    (Answer(200, [True]), VerifierUnavailable, "answered 200 without a JSON object"),
    (Answer(401, {"error": "invalid_client"}), VerifierUnavailable, "refused the client rs \\(401\\)"),
    (Answer(403, {}), VerifierUnavailable, "refused the client rs \\(403\\)"),
    (Answer(400, {"error": "invalid_client"}), VerifierUnavailable, "refused the client rs \\(400\\)"),
    (Answer(400, {"error": "unauthorized_client"}), VerifierUnavailable, "refused the client rs \\(400\\)"),
    (Answer(400, {"error": "invalid_request"}), InvalidToken, "does not introspect this token \\(invalid_request\\)$"),
    (Answer(400, body=b"bad"), InvalidToken, "does not introspect this token$"),
    (Answer(400, {"error": 'x"y'}), InvalidToken, "does not introspect this token$"),
    (Answer(200, {"active": "true"}), InvalidToken, "not active"),
    (Answer(200, {"active": False}), InvalidToken, "not active"),
    (active(token_type="refresh_token"), InvalidToken, "of type 'refresh_token', not a bearer access token"),
    (active(token_type=["Bearer"]), InvalidToken, "of type \\(a value not shown\\)"),
]


@pytest.mark.parametrize(("answer", "kind", "match"), INTROSPECTION_FAILURES)
def test_introspection_failures(local: LocalServer, answer: Answer, kind: type[Exception], match: str) -> None:
    local.routes["/introspect"] = answer
    with pytest.raises(kind, match=match) as caught:
        local_introspector(local)("tok-abc")
    assert "tok-abc" not in str(caught.value)


def test_failures_are_not_cached(local: LocalServer) -> None:
    local.routes["/introspect"] = Answer(503, {})
    verifier = local_introspector(local)
    with pytest.raises(VerifierUnavailable):
        verifier("tok")
    local.routes["/introspect"] = active()
    assert verifier("tok")["sub"] == "bob"
    assert local.count("/introspect") == 2


def test_an_unreachable_introspection_endpoint(clock: Clock) -> None:
    url = f"http://127.0.0.1:{dead_port()}/introspect"
    verifier = IntrospectionVerifier(url, client_id="rs", client_secret="s", timeout=2)
    with pytest.raises(VerifierUnavailable, match=f"the introspection endpoint at {url} cannot be reached"):
        verifier("tok")


def test_tokens_that_cannot_be_bearer_tokens_are_refused_unsent(local: LocalServer) -> None:
    local.routes["/introspect"] = active()
    verifier = local_introspector(local)
    refused(verifier, "a" * (MAX_TOKEN_LENGTH + 1), f"longer than {MAX_TOKEN_LENGTH} bytes")
    for bad in ("a b", "é", "", "abc=def", 'a"b'):
        refused(verifier, bad, "characters a bearer token cannot have")
    assert local.count("/introspect") == 0
    assert verifier("Ab-1._~+/==")["sub"] == "bob"


def test_the_audience_check_is_optional(local: LocalServer) -> None:
    local.routes["/introspect"] = active()
    assert local_introspector(local)("tok")["sub"] == "bob"
    refused(local_introspector(local, audience=RESOURCE), "tok", "not meant for this server")
    local.routes["/introspect"] = active(aud=[OTHER, RESOURCE], token_type="bearer", scp=["a", "b"], scope=None)
    claims = local_introspector(local, audience=[RESOURCE])("tok2")
    assert claims["scope"] == "a b"


def test_positive_answers_are_cached_until_exp_or_the_ttl(local: LocalServer, clock: Clock) -> None:
    soon = time.time() + 10
    local.routes["/introspect"] = lambda request: active(exp=soon if request.form["token"] == "short" else 2e9)
    verifier = local_introspector(local, cache_ttl=60, clock=clock)
    verifier("short")
    verifier("long")
    clock.advance(9)
    verifier("short")
    verifier("long")
    assert local.count("/introspect") == 2
    clock.advance(2)  # past "short"'s exp, within the ttl
    verifier("short")
    verifier("long")
    assert local.count("/introspect") == 3
    clock.advance(50)  # past the ttl
    verifier("long")
    assert local.count("/introspect") == 4


def test_answers_past_their_exp_or_with_caching_off_are_not_kept(local: LocalServer, clock: Clock) -> None:
    local.routes["/introspect"] = active(exp=time.time() - 1)
    for verifier in (local_introspector(local, clock=clock), local_introspector(local, cache_ttl=0, clock=clock)):
        verifier("tok")
        verifier("tok")
    local.routes["/introspect"] = active(exp=True)  # not a time: the ttl alone bounds it
    no_room = local_introspector(local, max_cache=0, clock=clock)
    no_room("tok")
    no_room("tok")
    assert local.count("/introspect") == 6
    kept = local_introspector(local, clock=clock)
    kept("tok")
    kept("tok")
    assert local.count("/introspect") == 7


def test_the_cache_is_bounded_least_recently_used_first(local: LocalServer, clock: Clock) -> None:
    local.routes["/introspect"] = active()
    verifier = local_introspector(local, max_cache=2, clock=clock)
    for token in ("a1", "b1", "a1", "c1"):  # "a1" used again before "c1" comes: "b1" is dropped
        verifier(token)
    assert local.count("/introspect") == 3
    verifier("a1")
    verifier("c1")
    assert local.count("/introspect") == 3
    verifier("b1")
    assert local.count("/introspect") == 4
    assert len(verifier._cache) == 2
    verifier.close()
    assert len(verifier._cache) == 0


def test_the_cache_is_safe_across_threads(local: LocalServer, clock: Clock) -> None:
    local.routes["/introspect"] = lambda request: active(sub=request.form["token"])
    verifier = local_introspector(local, max_cache=16, clock=clock)

    def work(worker: int) -> None:
        for i in range(40):
            name = f"t{(worker * 7 + i) % 24}"
            assert verifier(name)["sub"] == name

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for done in [pool.submit(work, n) for n in range(8)]:
            done.result(TIMEOUT)  # a failed check in a thread fails the test here
    assert len(verifier._cache) <= 16


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"auth_method": "private_key_jwt"}, "auth_method must be"),
        ({"client_id": ""}, "client_id must name"),
        ({"cache_ttl": -1}, "must not be negative"),
        ({"negative_ttl": -1}, "must not be negative"),
        ({"max_cache": -1}, "must not be negative"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"audience": ""}, "non-empty string"),
    ],
)
def test_an_introspection_verifier_refuses_a_bad_configuration(options: dict[str, Any], match: str) -> None:
    arguments = {"client_id": "rs", "client_secret": "s"} | options
    with pytest.raises(ValueError, match=match):
        IntrospectionVerifier("https://auth.example/introspect", **arguments)


def test_an_introspection_verifier_closes_the_session_it_made(
    local: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    local.routes["/introspect"] = active()
    monkeypatch.setattr(requests, "Session", CountingSession)
    with local_introspector(local) as verifier:
        verifier("tok")
    assert isinstance(verifier._session, CountingSession) and verifier._session.closed
