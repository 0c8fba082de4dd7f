"""Token verifiers for the HTTP server: JWT access tokens (RFC 9068) and token introspection (RFC 7662).

Each is a ``token_verifier`` for :class:`~mcp_sync.server.http.app.StreamableHTTPApp`::

    verifier = JWTVerifier("https://auth.example", "https://mcp.example/mcp")
    app = StreamableHTTPApp(server, token_verifier=verifier)

A verifier is called with the raw bearer token and returns the token's
claims, normalised so that :func:`~mcp_sync.server.authorization.tokens.token_scopes`
and :func:`~mcp_sync.server.authorization.tokens.token_principal` read them: ``scope``
a space-separated string (from ``scope``, or from an ``scp`` list or
string), ``client_id`` (from ``azp`` when the token has no ``client_id``),
and ``sub``, ``exp`` and the rest as the token has them. A token it refuses
raises :class:`~mcp_sync.server.authorization.tokens.InvalidToken` (a 401; the
message is a clear ``error_description`` and never holds the token), one
without ``required_scopes`` :class:`~mcp_sync.server.authorization.tokens.InsufficientScope`
(a 403), and when the authorization server cannot be reached (down, a
timeout, a 5xx, a document that is not what it should be) it raises
:class:`~mcp_sync.server.authorization.tokens.VerifierUnavailable` (a 503).

Every HTTP exchange they make is bounded by ``timeout`` (seconds, all told:
connecting, the headers and the body, so an answer trickled a byte at a time
is given up on; a thread named ``mcp-sync-http-deadline`` watches each
exchange while it lasts) and reads at most :data:`MAX_DOCUMENT_BYTES`;
their caches are safe to share between threads.
Tokens longer than :data:`MAX_TOKEN_LENGTH` are refused before anything is
parsed or sent. :meth:`close` (or a ``with`` block) closes their HTTP
session. Neither logs a token.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

import requests
import urllib3

from ...protocol.grammar import B64TOKEN
from ...protocol.oauth import authorization_server_urls
from ...runtime.deadline import Deadline
from ...runtime.http import AnswerTooLong, AnswerTooSlow, bounded_request, new_session
from .tokens import InsufficientScope, InvalidToken, VerifierUnavailable

if TYPE_CHECKING:
    from joserfc.jwk import Key
    from joserfc.jws import CompactSignature, JWSRegistry

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULT_ALGORITHMS",
    "JWT_EXTRA",
    "MAX_DOCUMENT_BYTES",
    "MAX_TOKEN_LENGTH",
    "PLAIN_JWT_HINT",
    "InsufficientScope",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "VerifierUnavailable",
]

log = logging.getLogger(__name__)

JWT_EXTRA = 'pip install "mcp-sync-py[jwt]"'
"""How to install what :class:`JWTVerifier` needs (joserfc)."""
MAX_TOKEN_LENGTH = 16 * 1024
"""The longest token accepted (characters, which for a valid token are bytes): longer ones are refused unread."""
MAX_DOCUMENT_BYTES = 1024 * 1024
"""The most a metadata, JWKS or introspection answer may hold; a longer one counts as an unavailable server."""
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "ES256K"}
    | {"EdDSA", "Ed25519", "Ed448"}
)
"""The signature algorithms :class:`JWTVerifier` may be told to accept: public-key ones only."""
DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
)
"""The algorithms accepted unless told otherwise (RFC 9068 requires RS256 support; the rest are common)."""

_AT_JWT_TYPES = frozenset({"at+jwt", "application/at+jwt"})
_PLAIN_JWT_TYPES = frozenset({"jwt", "application/jwt"})
PLAIN_JWT_HINT = (
    "authorization servers such as Keycloak, Microsoft Entra ID and Auth0 (its default token profile) "
    "issue access tokens of typ 'JWT': JWTVerifier(..., allow_plain_jwt=True) accepts them"
)
"""What a refusal of a plain ``typ: JWT`` token tells the operator (the log and the exception, not the client)."""
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_SHOWN = re.compile(r"[A-Za-z0-9._~+/:@-]{1,200}")
_NOT_FOUND = frozenset({400, 401, 403, 404, 405, 406, 410})
"""Answers to a metadata URL that mean "not here": discovery tries the next URL."""


def _require_joserfc() -> None:
    try:
        import joserfc  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"JWTVerifier needs joserfc, an optional extra: {JWT_EXTRA}", name="joserfc") from exc


def _shown(value: object) -> str:
    """A value from a token, quoted for a message when it is short and plain; a mention of it otherwise.

    Token headers and claims are chosen by whoever sent the token: only what
    cannot break a ``WWW-Authenticate`` header or a log line is repeated.
    """
    if isinstance(value, str) and _SHOWN.fullmatch(value):
        return f"'{value}'"
    return "(a value not shown)"


def _scope_string(claims: Mapping[str, Any]) -> str | None:
    """The scopes of ``scope`` (a string or a list) or of ``scp`` (a list or a string), space-separated."""
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            return " ".join(value.split())
        if isinstance(value, list) and all(isinstance(each, str) for each in value):
            return " ".join(value)
    return None


def _normalised(claims: Mapping[str, Any], required_scopes: Sequence[str]) -> dict[str, Any]:
    """A copy of the claims with ``scope`` a string and ``client_id`` set from ``azp`` if need be; scopes checked."""
    result = dict(claims)
    scope = _scope_string(claims)
    if scope is None:
        result.pop("scope", None)
    else:
        result["scope"] = scope
    if not isinstance(result.get("client_id"), str) and isinstance(result.get("azp"), str):
        result["client_id"] = result["azp"]
    granted = set((scope or "").split())
    if not set(required_scopes) <= granted:
        raise InsufficientScope(required_scopes, granted)
    return result


def _audiences(audience: str | Sequence[str] | None) -> tuple[str, ...]:
    audiences = (audience,) if isinstance(audience, str) else tuple(audience or ())
    if not all(isinstance(each, str) and each for each in audiences):
        raise ValueError("every audience must be a non-empty string (the server's canonical resource URL)")
    return audiences


def _check_audience(claims: Mapping[str, Any], audiences: Sequence[str]) -> None:
    aud = claims.get("aud")
    named = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not any(isinstance(each, str) and each in audiences for each in named):
        raise InvalidToken(f"the token is not meant for this server: its audience does not include {audiences[0]}")


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    """A numeric claim; ``None`` when absent; InvalidToken when it is not a number."""
    value = claims.get(name)
    if value is None:
        return None
    try:
        # float() of an integer of hundreds of digits overflows: no time either
        number = None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)
    except OverflowError:
        number = None
    if number is None or not math.isfinite(number):
        raise InvalidToken(f"the token's {name} claim is not a number")
    return number


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return value


def _request(
    session: requests.Session, method: str, url: str, *, what: str, timeout: float, **options: Any
) -> tuple[int, Any]:
    """One bounded exchange: the status and the JSON body (``None`` when not JSON); VerifierUnavailable if need be.

    Unreachable, timed out, a 5xx or an answer over :data:`MAX_DOCUMENT_BYTES`
    raise :class:`VerifierUnavailable`; any other status is the caller's to judge.
    """
    try:
        response = bounded_request(session, method, url, timeout=timeout, max_bytes=MAX_DOCUMENT_BYTES, **options)
    except AnswerTooLong:
        raise VerifierUnavailable(f"{what} at {url} answered more than {MAX_DOCUMENT_BYTES} bytes") from None
    except AnswerTooSlow:
        raise VerifierUnavailable(f"{what} at {url} did not finish its answer within {timeout:g} s") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        raise VerifierUnavailable(f"{what} at {url} cannot be reached ({type(exc).__name__})") from exc
    status, body = response.status_code, response.content
    if status >= 500:
        raise VerifierUnavailable(f"{what} at {url} answered {status}")
    try:
        return status, json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python recurses
        return status, None


# ----------------------------------------------------------------------------------------------- JWT


@functools.cache
def _registry_class() -> type[JWSRegistry]:
    """joserfc's JWS registry, without the ``SecurityWarning`` it raises on every use of ``EdDSA``.

    RFC 9864 deprecates ``EdDSA`` in favour of ``Ed25519``, yet it is what
    authorization servers sign with; the algorithms a verifier accepts are
    its configuration's to choose, not a warning per request.
    """
    from joserfc.errors import UnsupportedAlgorithmError
    from joserfc.jwa import JWSAlgModel
    from joserfc.jws import JWSRegistry

    class Registry(JWSRegistry):
        def get_alg(self, name: str) -> JWSAlgModel:
            if name not in self.algorithms or name not in (self.allowed or ()):
                raise UnsupportedAlgorithmError(f"Algorithm of '{name}' is not allowed")
            return self.algorithms[name]

    return Registry


def _import_key(data: object) -> Key | None:
    """A public signing key of a JWKS; ``None`` for anything else (symmetric, private, for encryption, broken)."""
    from joserfc.errors import JoseError
    from joserfc.jwk import JWKRegistry

    if not isinstance(data, dict) or data.get("kty") == "oct" or "d" in data:
        return None
    operations = data.get("key_ops", ["verify"])
    if data.get("use", "sig") != "sig" or not isinstance(operations, list) or "verify" not in operations:
        return None
    if data.get("kty") == "OKP" and data.get("crv") not in ("Ed25519", "Ed448"):
        return None  # X25519 and X448 keys agree on keys; they never sign
    try:
        return JWKRegistry.import_key(data)
    except (JoseError, ValueError, TypeError, KeyError):
        return None


def _matching(keys: Iterable[Key], kid: str | None, alg: str) -> list[Key]:
    """The keys of ``keys`` named ``kid`` (any when ``None``) that can check an ``alg`` signature."""
    from joserfc.errors import JoseError

    model = _registry_class().algorithms[alg]
    found = []
    for key in keys:
        if kid is not None and key.kid != kid:
            continue
        try:
            model.check_key(key)
        except JoseError:
            continue
        found.append(key)
    return found


@dataclass(frozen=True)
class _KeyState:
    """What a :class:`JWTVerifier` knows of its issuer's keys; replaced whole, under the fetch lock."""

    keys: tuple[Key, ...] | None = None
    """``None`` until a JWKS was fetched."""
    loaded_at: float = 0.0
    attempted_at: float | None = None
    """When the last fetch (successful or not) began, on the verifier's clock."""
    error: str | None = None
    """Why the last fetch failed; ``None`` when it succeeded."""
    generation: int = 0


class JWTVerifier:
    """Verifies JWT access tokens (RFC 9068) against the issuer's published keys.

    ``issuer`` is compared exactly with the ``iss`` claim; ``audience`` is
    the server's canonical resource URL (RFC 8707), or several, one of which
    the token's ``aud`` must hold (compared exactly: give the URL clients
    send as ``resource``). The keys come from ``jwks_url`` or, without it,
    from the ``jwks_uri`` of the issuer's metadata (RFC 8414, then OpenID
    discovery; looked up once, and its ``issuer`` must be ``issuer``).

    A token passes when:

    - it is a signed JWT (JWS compact serialization; encrypted ones are
      refused) no longer than :data:`MAX_TOKEN_LENGTH`, whose ``alg`` is one
      of ``algorithms`` (public-key algorithms only: ``none`` and HMAC are
      always refused, so an HS256 token "signed" with a public key is too),
      with no ``crit`` header;
    - its ``typ`` is ``at+jwt`` (RFC 9068); with ``allow_plain_jwt=True`` a
      ``typ`` of ``JWT`` or none at all is accepted too, for authorization
      servers that issue access tokens so (Keycloak, Entra ID, Auth0's
      default profile; the ``aud`` check then keeps an ID token out, whose
      audience is a client). Without it, the first such token refused logs
      a warning naming the option (the client is told only that its token
      is of the wrong type);
    - its signature verifies with the issuer's key named by its ``kid``
      (without a ``kid``: the one key that suits its ``alg``); ``jku``,
      ``x5u`` and ``jwk`` headers are ignored, keys come from the issuer only;
    - ``iss`` and ``aud`` are right, ``exp`` is present and not passed, and
      ``nbf`` and ``iat`` (when present) are not in the future, each with
      ``leeway`` seconds of tolerance for clock skew;
    - it names a subject (``sub``) or a client (``client_id`` or ``azp``),
      and grants every one of ``required_scopes`` (else
      :class:`InsufficientScope`).

    Keys are cached. A token whose ``kid`` is not among them makes the
    verifier fetch the JWKS again, at most once per ``refresh_interval``
    seconds however many such tokens come (rotation is picked up, a flood
    of made-up ``kid`` values costs one fetch per interval); keys older than
    ``max_key_age`` are fetched again on the next token, at the same pace,
    and kept in use while that fails. While the JWKS cannot be fetched,
    tokens the cached keys cannot check raise :class:`VerifierUnavailable`.
    ``clock`` is the monotonic clock of those intervals; ``session`` a
    ``requests.Session`` to fetch with (proxies, custom CAs; with adapters
    of its own, the headers of an answer are bounded per read only, its body
    in total still). Needs joserfc:
    ``pip install "mcp-sync-py[jwt]"``.

    Example::

        verifier = JWTVerifier(
            "https://auth.example.com",
            "https://mcp.example.com/mcp",
            required_scopes=["mcp:read"],
        )
        app = StreamableHTTPApp(server, token_verifier=verifier)
        claims = verifier(token)  # {"sub": ..., "scope": "mcp:read", ...}, or InvalidToken
    """

    def __init__(
        self,
        issuer: str,
        audience: str | Sequence[str],
        *,
        jwks_url: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        required_scopes: Iterable[str] = (),
        allow_plain_jwt: bool = False,
        refresh_interval: float = 30.0,
        max_key_age: float = 3600.0,
        timeout: float = 5.0,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _require_joserfc()
        if not issuer:
            raise ValueError("issuer must be the authorization server's issuer identifier (a URL)")
        self.issuer = issuer
        self.audiences = _audiences(audience)
        if not self.audiences:
            raise ValueError("audience must name at least one resource URL")
        self.algorithms = tuple(algorithms)
        refused = sorted(set(self.algorithms) - ASYMMETRIC_ALGORITHMS)
        if refused or not self.algorithms:
            raise ValueError(
                f"algorithms must be public-key signature algorithms among {sorted(ASYMMETRIC_ALGORITHMS)}; "
                f"not {refused or 'none at all'}"
            )
        if not leeway >= 0:
            raise ValueError(f"leeway must be zero or more seconds, not {leeway!r}")
        self.leeway = leeway
        self.required_scopes = tuple(required_scopes)
        self.allow_plain_jwt = allow_plain_jwt
        self._hinted = False  # the hint of PLAIN_JWT_HINT is logged once per verifier, not for every such token
        self.refresh_interval = _positive("refresh_interval", refresh_interval)
        self.max_key_age = _positive("max_key_age", max_key_age)
        self.timeout = _positive("timeout", timeout)
        self.jwks_url = jwks_url
        self._owns_session = session is None
        self._session = session if session is not None else new_session()
        self._clock = clock
        self._state = _KeyState()
        self._fetch_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JWTVerifier(issuer={self.issuer!r}, audience={list(self.audiences)!r})"

    def __call__(self, token: str) -> dict[str, Any]:
        """The claims of a valid token (normalised); :class:`InvalidToken` or :class:`VerifierUnavailable` otherwise."""
        signed = self._parse(token)
        header = signed.headers()
        alg = header["alg"]
        self._check_header(header, alg)
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's kid header is not a string")
        key = self._key(kid, alg)
        if not self._signature_verifies(signed, key, alg):
            raise InvalidToken("the token's signature does not verify")
        try:
            claims = json.loads(signed.payload)
        except ValueError:
            claims = None
        if not isinstance(claims, dict):
            raise InvalidToken("the token's payload is not a JSON object of claims")
        return self._check_claims(claims)

    # ------------------------------------------------------------------ the token

    def _parse(self, token: str) -> CompactSignature:
        from joserfc.errors import JoseError
        from joserfc.jws import extract_compact

        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken(f"the token is longer than {MAX_TOKEN_LENGTH} bytes")
        segments = token.split(".")
        if len(segments) == 5:
            raise InvalidToken("the token is encrypted (JWE): only signed JWT access tokens are accepted")
        if len(segments) != 3 or not all(_BASE64URL.fullmatch(segment) for segment in segments):
            raise InvalidToken("the token is not a JWT (three base64url segments separated by dots)")
        try:
            signed = extract_compact(token.encode("ascii"), registry=_registry_class()())
        except (JoseError, ValueError, TypeError) as exc:
            raise InvalidToken(f"the token is not a well-formed JWT ({type(exc).__name__})") from None
        header: object = signed.headers()
        if not isinstance(header, dict) or not isinstance(header.get("alg"), str):
            raise InvalidToken("the token's header has no alg string")
        return signed

    def _check_header(self, header: Mapping[str, Any], alg: str) -> None:
        if alg.lower() == "none":
            raise InvalidToken("the token is not signed (alg none): unsigned tokens are refused")
        if alg.upper().startswith("HS"):
            raise InvalidToken(f"the token is signed with {_shown(alg)}, a shared-secret (HMAC) algorithm: refused")
        if alg not in self.algorithms:
            raise InvalidToken(f"the token's signature algorithm {_shown(alg)} is not accepted")
        if "crit" in header or "b64" in header:
            raise InvalidToken("the token has critical header parameters (crit, b64) this server does not support")
        typ = header.get("typ")
        kind = typ.lower() if isinstance(typ, str) else None if typ is None else ""
        plain = kind is None or kind in _PLAIN_JWT_TYPES
        if kind in _AT_JWT_TYPES or (self.allow_plain_jwt and plain):
            return
        described = f"the token's type (typ header) is {_shown(typ)}, not 'at+jwt': it is no access token"
        if not plain:
            raise InvalidToken(described)
        # Keycloak, Entra ID and Auth0's default profile issue access tokens so. The operator is told (once in the
        # log, and in the exception) what accepts them; the client's answer says no more than it did.
        if not self._hinted:
            self._hinted = True
            log.warning("%s refused a token: %s (%s)", self, described, PLAIN_JWT_HINT)
        raise InvalidToken(described, hint=PLAIN_JWT_HINT)

    def _signature_verifies(self, signed: CompactSignature, key: Key, alg: str) -> bool:
        from joserfc.errors import JoseError
        from joserfc.jws import validate_compact

        registry = _registry_class()(algorithms=[alg], strict_check_header=False)
        try:
            return validate_compact(signed, key, registry=registry)
        except (JoseError, ValueError, TypeError) as exc:  # a registered header of the wrong kind (jku: 5...)
            raise InvalidToken(f"the token's header is not valid ({type(exc).__name__})") from None

    def _check_claims(self, claims: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        if claims.get("iss") != self.issuer:
            raise InvalidToken(f"the token was issued by {_shown(claims.get('iss'))}, not by {self.issuer}")
        _check_audience(claims, self.audiences)
        expires = _number(claims, "exp")
        if expires is None:
            raise InvalidToken("the token has no expiry (exp claim)")
        if now >= expires + self.leeway:
            raise InvalidToken("the token has expired")
        not_before = _number(claims, "nbf")
        if not_before is not None and now + self.leeway < not_before:
            raise InvalidToken("the token is not valid yet (nbf claim)")
        issued = _number(claims, "iat")
        if issued is not None and now + self.leeway < issued:
            raise InvalidToken("the token was issued in the future (iat claim)")
        result = _normalised(claims, self.required_scopes)
        if not any(isinstance(result.get(name), str) and result[name] for name in ("sub", "client_id")):
            raise InvalidToken("the token names no subject (sub) and no client (client_id)")
        return result

    # ------------------------------------------------------------------- the keys

    def _key(self, kid: str | None, alg: str) -> Key:
        """The issuer's key for the token, fetching the JWKS first if it is unknown, stale or lacks that key."""
        state = self._state
        stale = state.keys is None or self._clock() - state.loaded_at >= self.max_key_age
        found = [] if stale else _matching(state.keys or (), kid, alg)
        if not found:
            state = self._refresh(state.generation)
            found = _matching(state.keys or (), kid, alg)
        if len(found) == 1 or (found and kid is not None):
            return found[0]
        if found:
            raise InvalidToken(f"the token names no key (kid) and the issuer has {len(found)} keys for {alg}")
        if state.keys is None or state.error is not None:
            retry_after = self._retry_after(state)
            raise VerifierUnavailable(f"the issuer's keys cannot be fetched: {state.error}", retry_after=retry_after)
        if kid is None:
            raise InvalidToken(f"the token names no key (kid) and the issuer has no key for {alg}")
        raise InvalidToken(f"the token is signed with a key the issuer does not publish (kid {_shown(kid)})")

    def _retry_after(self, state: _KeyState) -> int:
        waited = self._clock() - (state.attempted_at or 0.0)
        return max(1, math.ceil(self.refresh_interval - waited))

    def _refresh(self, seen: int) -> _KeyState:
        """Fetch the JWKS unless another thread just did, or the last attempt is less than ``refresh_interval`` old."""
        with self._fetch_lock:
            state = self._state
            now = self._clock()
            if state.generation != seen or (
                state.attempted_at is not None and now - state.attempted_at < self.refresh_interval
            ):
                return state
            try:
                keys = self._fetch_keys()
            except VerifierUnavailable as exc:
                log.warning("cannot fetch the keys of %s: %s", self.issuer, exc)
                state = replace(state, attempted_at=now, error=exc.description, generation=state.generation + 1)
            else:
                state = _KeyState(keys, loaded_at=now, attempted_at=now, generation=state.generation + 1)
            self._state = state
            return state

    def _fetch_keys(self) -> tuple[Key, ...]:
        url = self.jwks_url or self._discover()
        status, document = _request(self._session, "GET", url, what="the JWKS", timeout=self.timeout)
        if status != 200 or not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise VerifierUnavailable(f"the JWKS at {url} answered {status} without a JSON key set")
        keys = tuple(key for key in map(_import_key, document["keys"]) if key is not None)
        if not keys:
            raise VerifierUnavailable(f"the JWKS at {url} holds no public signing key")
        log.info("fetched %d signing keys of %s", len(keys), self.issuer)
        return keys

    def _discover(self) -> str:
        """The ``jwks_uri`` of the issuer's metadata (kept in :attr:`jwks_url` once found)."""
        for url in authorization_server_urls(self.issuer):
            status, document = _request(self._session, "GET", url, what="the issuer's metadata", timeout=self.timeout)
            if status in _NOT_FOUND:
                continue
            if status != 200 or not isinstance(document, dict):
                raise VerifierUnavailable(f"the issuer's metadata at {url} answered {status} without a JSON object")
            if document.get("issuer") != self.issuer:
                raise VerifierUnavailable(f"the metadata at {url} is not that of the issuer {self.issuer}")
            jwks_url = document.get("jwks_uri")
            if not isinstance(jwks_url, str) or not jwks_url:
                raise VerifierUnavailable(f"the metadata at {url} has no jwks_uri")
            self.jwks_url = jwks_url
            return jwks_url
        raise VerifierUnavailable(f"no metadata found for the issuer {self.issuer} (RFC 8414 or OpenID discovery)")

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the HTTP session (unless it was given)."""
        if self._owns_session:
            self._session.close()

    def __enter__(self) -> JWTVerifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------- introspection


class IntrospectionVerifier:
    """Verifies tokens by asking the authorization server (RFC 7662 token introspection).

    The token is POSTed to ``introspection_url`` with ``token_type_hint=access_token``,
    authenticated as the client ``client_id`` with ``client_secret`` sent by
    ``auth_method``: ``client_secret_basic`` (HTTP Basic, RFC 6749 section
    2.3.1) or ``client_secret_post`` (form fields). The answer must say
    ``active: true``; when ``audience`` is given (the server's resource
    URL, or several), its ``aud`` must hold one of them; when it has a
    ``token_type``, that must be ``Bearer``; and the token must grant
    ``required_scopes`` (else :class:`InsufficientScope`).

    Answers are cached, keyed by a hash of the token (never the token):
    active ones until their ``exp`` or for ``cache_ttl`` seconds, whichever
    comes first (so a revoked token may pass that long); inactive ones for
    ``negative_ttl`` seconds. At most ``max_cache`` answers are kept, the
    least recently used dropped first. An endpoint that cannot be reached,
    answers 5xx, refuses the client's credentials (401, 403,
    ``invalid_client``) or answers what is not a JSON object raises
    :class:`VerifierUnavailable`, and nothing is cached; a 400 about the
    token (an authorization server that will not introspect that kind of
    token) is :class:`InvalidToken`.

    Example::

        verifier = IntrospectionVerifier(
            "https://auth.example.com/oauth/introspect",
            client_id="mcp-server",
            client_secret=os.environ["INTROSPECTION_SECRET"],
            audience="https://mcp.example.com/mcp",
        )
        app = StreamableHTTPApp(server, token_verifier=verifier)
    """

    def __init__(
        self,
        introspection_url: str,
        *,
        client_id: str,
        client_secret: str,
        auth_method: str = "client_secret_basic",
        audience: str | Sequence[str] | None = None,
        required_scopes: Iterable[str] = (),
        cache_ttl: float = 60.0,
        negative_ttl: float = 5.0,
        max_cache: int = 1000,
        timeout: float = 5.0,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"auth_method must be client_secret_basic or client_secret_post, not {auth_method!r}")
        if not client_id:
            raise ValueError("client_id must name the client the server introspects as")
        if not cache_ttl >= 0 or not negative_ttl >= 0 or max_cache < 0:
            raise ValueError("cache_ttl, negative_ttl and max_cache must not be negative")
        self.introspection_url = introspection_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.auth_method = auth_method
        self.audiences = _audiences(audience)
        self.required_scopes = tuple(required_scopes)
        self.cache_ttl = cache_ttl
        self.negative_ttl = negative_ttl
        self.max_cache = max_cache
        self.timeout = _positive("timeout", timeout)
        self._owns_session = session is None
        self._session = session if session is not None else new_session()
        self._clock = clock
        self._cache: collections.OrderedDict[bytes, tuple[Deadline, dict[str, Any] | None]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"IntrospectionVerifier({self.introspection_url!r}, client_id={self.client_id!r})"

    def __call__(self, token: str) -> dict[str, Any]:
        """The introspection answer for an active token (normalised); :class:`InvalidToken` otherwise."""
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken(f"the token is longer than {MAX_TOKEN_LENGTH} bytes")
        if not B64TOKEN.fullmatch(token):
            raise InvalidToken("the token has characters a bearer token cannot have")
        key = hashlib.sha256(token.encode("ascii")).digest()
        found, answer = self._cached(key)
        if not found:
            answer = self._introspect(token)
            self._remember(key, answer)
        if answer is None:
            raise InvalidToken("the token is not active: expired, revoked or unknown to the authorization server")
        return self._check(answer)

    def _check(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        token_type = answer.get("token_type")
        if token_type is not None and (not isinstance(token_type, str) or token_type.lower() != "bearer"):
            raise InvalidToken(f"the token is of type {_shown(token_type)}, not a bearer access token")
        if self.audiences:
            _check_audience(answer, self.audiences)
        return _normalised(answer, self.required_scopes)

    def _introspect(self, token: str) -> dict[str, Any] | None:
        """The answer for an active token, ``None`` for an inactive one."""
        form = {"token": token, "token_type_hint": "access_token"}
        auth: tuple[str, str] | None = None
        if self.auth_method == "client_secret_basic":
            auth = (quote_plus(self.client_id), quote_plus(self._client_secret))
        else:
            form.update(client_id=self.client_id, client_secret=self._client_secret)
        status, answer = _request(
            self._session,
            "POST",
            self.introspection_url,
            what="the introspection endpoint",
            timeout=self.timeout,
            data=form,
            auth=auth,
            headers={"Accept": "application/json"},
            allow_redirects=False,
        )
        error = answer.get("error") if isinstance(answer, dict) else None
        if status == 400 and error not in ("invalid_client", "unauthorized_client"):
            detail = f" ({error})" if isinstance(error, str) and _SHOWN.fullmatch(error) else ""
            raise InvalidToken(f"the authorization server does not introspect this token{detail}")
        if status in (400, 401, 403):
            raise VerifierUnavailable(
                f"the introspection endpoint {self.introspection_url} refused the client {self.client_id} ({status})"
            )
        if status != 200 or not isinstance(answer, dict):
            raise VerifierUnavailable(
                f"the introspection endpoint {self.introspection_url} answered {status} without a JSON object"
            )
        return answer if answer.get("active") is True else None

    def _cached(self, key: bytes) -> tuple[bool, dict[str, Any] | None]:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return False, None
            if entry[0].expired:
                del self._cache[key]
                return False, None
            self._cache.move_to_end(key)
            return True, entry[1]

    def _remember(self, key: bytes, answer: dict[str, Any] | None) -> None:
        ttl = self.negative_ttl
        if answer is not None:
            ttl = self.cache_ttl
            expires = answer.get("exp")
            # Compared before subtracted: an integer too large for a float compares, it does not subtract.
            if isinstance(expires, (int, float)) and not isinstance(expires, bool) and expires < time.time() + ttl:
                ttl = expires - time.time()
        if ttl <= 0 or self.max_cache == 0:
            return
        with self._lock:
            self._cache[key] = (Deadline.after(ttl, clock=self._clock), answer)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_cache:
                self._cache.popitem(last=False)

    def close(self) -> None:
        """Close the HTTP session (unless it was given) and forget the cached answers."""
        with self._lock:
            self._cache.clear()
        if self._owns_session:
            self._session.close()

    def __enter__(self) -> IntrospectionVerifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
