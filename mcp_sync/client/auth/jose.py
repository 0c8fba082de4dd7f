"""Signed JWTs for OAuth clients: signing keys, client assertions (RFC 7523) and DPoP proofs (RFC 9449).

Everything here is built on `joserfc <https://jose.authlib.org>`_, an
optional extra: ``pip install "mcp-sync-py[jwt]"``. It is imported only when
a key is made, so the authorization-code flow works without it; making a key
without it raises :class:`ImportError` naming the extra.

>>> key = SigningKey.generate("ES256")            # or SigningKey(open("client.pem").read())
>>> assertion = client_assertion(key, "my-client", "https://auth.example")
>>> len(assertion.split("."))                     # header, claims, signature
3

A key never shows its private part: not in ``repr``, not in errors, not in logs.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

import requests

from ...protocol.oauth import Challenge, origin

if TYPE_CHECKING:
    from joserfc.jwk import ECKey, OKPKey, RSAKey

__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "JWT_EXTRA",
    "DPoP",
    "KeyLike",
    "SigningKey",
    "access_token_hash",
    "client_assertion",
    "dpop_proof",
    "require_joserfc",
]

JWT_EXTRA = 'pip install "mcp-sync-py[jwt]"'
"""How to install what this module needs."""
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
"""RFC 7523 section 2.2: the ``client_assertion_type`` of a JWT client assertion (``private_key_jwt``)."""
ASSERTION_LIFETIME = 60
"""Seconds a client assertion is valid for: long enough for one token request."""

_CURVES = {
    "P-256": "ES256",
    "P-384": "ES384",
    "P-521": "ES512",
    "secp256k1": "ES256K",
    "Ed25519": "EdDSA",
    "Ed448": "EdDSA",
}
"""The algorithm a key of each curve signs with, when none is said."""
_EC_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
"""The curve generated for each ECDSA algorithm."""


def require_joserfc(feature: str = "signed JWTs") -> None:
    """Check that joserfc can be imported; otherwise :class:`ImportError` saying how to install it."""
    try:
        import joserfc  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"{feature} need joserfc, an optional extra: {JWT_EXTRA}", name="joserfc") from exc


class SigningKey:
    """A private key that signs JWTs, and the algorithm it signs with.

    ``key`` is a PEM private key (``str`` or ``bytes``, PKCS#8 or
    traditional, encrypted with ``password`` if need be) or a private JWK
    (a ``dict``). ``algorithm`` defaults to the JWK's ``alg``, else the
    usual one for the key: ES256/ES384/ES512 by curve, RS256 for RSA,
    EdDSA for Ed25519.

    >>> key = SigningKey(open("client.pem").read(), "ES256")   # doctest: +SKIP
    >>> key = SigningKey.generate("ES384")
    >>> key.algorithm, key.public_jwk["kty"], "d" in key.public_jwk
    ('ES384', 'EC', False)
    """

    def __init__(
        self, key: str | bytes | Mapping[str, Any], algorithm: str | None = None, *, password: str | bytes | None = None
    ) -> None:
        require_joserfc("signing keys")
        self._key = _import_key(key, password)
        if not self._key.is_private:
            raise ValueError("a signing key must be a private key, not a public one")
        self.algorithm: str = algorithm or _algorithm_of(self._key)
        self.kid: str | None = self._key.kid

    @classmethod
    def generate(cls, algorithm: str = "ES256") -> SigningKey:
        """A new key for ``algorithm`` (ES256, ES384, ES512, EdDSA, RS256, PS256, ...), kept in memory only."""
        require_joserfc("signing keys")
        from joserfc.jwk import ECKey, OKPKey, RSAKey

        key: ECKey | OKPKey | RSAKey
        if algorithm in _EC_CURVES:
            key = ECKey.generate_key(_EC_CURVES[algorithm])
        elif algorithm in ("EdDSA", "Ed25519"):
            key = OKPKey.generate_key("Ed25519")
        elif algorithm[:2] in ("RS", "PS"):
            key = RSAKey.generate_key(2048)
        else:
            raise ValueError(f"cannot generate a key for the algorithm {algorithm!r}")
        return cls(key.as_dict(private=True), algorithm)

    @property
    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK (RFC 7517), without any private member."""
        return dict(self._key.as_dict(private=False))

    def thumbprint(self) -> str:
        """The key's SHA-256 JWK thumbprint (RFC 7638), base64url: what a DPoP-bound token's ``cnf.jkt`` names."""
        return str(self._key.thumbprint())

    def sign(self, claims: Mapping[str, Any], header: Mapping[str, Any] | None = None) -> str:
        """A compact JWS of ``claims`` signed with this key (``alg`` and, if the key has one, ``kid`` added)."""
        from joserfc import jwt

        protected: dict[str, Any] = {"alg": self.algorithm, **({"kid": self.kid} if self.kid else {}), **(header or {})}
        return jwt.encode(protected, dict(claims), self._key, algorithms=[self.algorithm])

    def __repr__(self) -> str:
        return f"<SigningKey {self.algorithm} {self.thumbprint()[:8]}>"


KeyLike: TypeAlias = "SigningKey | str | bytes | Mapping[str, Any]"
"""A signing key, or what :class:`SigningKey` reads one from (PEM or JWK)."""


def signing_key(key: KeyLike, algorithm: str | None = None) -> SigningKey:
    """``key`` as a :class:`SigningKey` (one already is kept as it is)."""
    return key if isinstance(key, SigningKey) else SigningKey(key, algorithm)


def _import_key(key: str | bytes | Mapping[str, Any], password: str | bytes | None) -> ECKey | OKPKey | RSAKey:
    from joserfc.errors import JoseError
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    kinds: dict[str, type[ECKey] | type[OKPKey] | type[RSAKey]] = {"EC": ECKey, "OKP": OKPKey, "RSA": RSAKey}
    if isinstance(key, Mapping):
        candidates = [kinds[key["kty"]]] if key.get("kty") in kinds else []
        data: Any = dict(key)
    else:
        candidates = list(kinds.values())
        data = key.encode() if isinstance(key, str) else key
    for kind in candidates:
        try:
            return kind.import_key(data, password=password)
        except (JoseError, ValueError, TypeError):
            continue
    raise ValueError("not a private key that can sign JWTs (an EC, RSA or OKP key, as PEM or as a JWK)") from None


def _algorithm_of(key: ECKey | OKPKey | RSAKey) -> str:
    declared = key.get("alg")
    if isinstance(declared, str):
        return declared
    if key.key_type == "RSA":
        return "RS256"
    algorithm = _CURVES.get(str(key.get("crv")))
    if algorithm is None:
        raise ValueError(f"a {key.get('crv')} key cannot sign JWTs")
    return algorithm


def client_assertion(
    key: SigningKey, client_id: str, audience: str | list[str], *, lifetime: int = ASSERTION_LIFETIME
) -> str:
    """A JWT that authenticates ``client_id`` at a token endpoint (RFC 7523 section 3, ``private_key_jwt``).

    ``iss`` and ``sub`` are the client ID, ``aud`` the authorization server
    (its issuer identifier, or its token endpoint: whichever it expects),
    with a fresh ``jti`` and an ``exp`` ``lifetime`` seconds ahead.
    """
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": secrets.token_urlsafe(24),
        "iat": now,
        "exp": now + lifetime,
    }
    return key.sign(claims, {"typ": "JWT"})


def access_token_hash(access_token: str) -> str:
    """RFC 9449 section 4.2: ``ath``, the base64url (unpadded) SHA-256 of the access token's ASCII bytes."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _htu(url: str) -> str:
    """The ``htu`` of a request: its URL without query and fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", "", ""))


def dpop_proof(
    key: SigningKey, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
) -> str:
    """A DPoP proof JWT (RFC 9449 section 4.2) for one HTTP request.

    The header carries ``typ: dpop+jwt`` and the public key; the claims a
    fresh ``jti``, ``htm`` (the method), ``htu`` (the URL without query and
    fragment) and ``iat``, plus ``ath`` when an access token goes with the
    request and ``nonce`` when the server gave one.
    """
    claims: dict[str, Any] = {
        "jti": secrets.token_urlsafe(24),
        "htm": method.upper(),
        "htu": _htu(url),
        "iat": int(time.time()),
    }
    if access_token is not None:
        claims["ath"] = access_token_hash(access_token)
    if nonce is not None:
        claims["nonce"] = nonce
    return key.sign(claims, {"typ": "dpop+jwt", "jwk": key.public_jwk})


class DPoP:
    """Proof of possession for one client (RFC 9449): its key, and the nonces servers asked for.

    Give it to :class:`~mcp_sync.client.auth.OAuth` as ``dpop=`` (``dpop=True``
    makes one with a new ES256 key). Every token request then carries a
    proof, the tokens come bound to the key, and every request to the MCP
    server carries ``Authorization: DPoP <token>`` and a fresh proof. When
    the authorization server (400 ``use_dpop_nonce``) or the MCP server (401
    ``error="use_dpop_nonce"``) asks for a nonce, the request is sent once
    more with it, and later proofs to that origin carry the latest one.

    Tokens are bound to the key: a generated key lives as long as the
    process, so with a :class:`~.stores.FileTokenStore` give a key that lasts
    as long as the tokens, or the next process signs in again.

    >>> from mcp_sync.client.auth import OAuth, DPoP
    >>> auth = OAuth(dpop=DPoP(open("dpop-key.pem").read()))   # doctest: +SKIP
    """

    def __init__(self, key: KeyLike | None = None, algorithm: str | None = None) -> None:
        self.key = signing_key(key, algorithm) if key is not None else SigningKey.generate(algorithm or "ES256")
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for ``method url``, with the latest nonce of its origin, if any."""
        with self._lock:
            nonce = self._nonces.get(origin(url))
        return dpop_proof(self.key, method, url, access_token=access_token, nonce=nonce)

    def observe(self, response: requests.Response) -> bool:
        """Keep a ``DPoP-Nonce`` the response gives; whether it asks for the request again with it.

        It asks when it is a 400 whose OAuth error is ``use_dpop_nonce``
        (an authorization server, section 8) or a 401 whose challenge is
        (a resource server, section 9), and it gives a nonce.
        """
        nonce = response.headers.get("DPoP-Nonce")
        if not nonce:
            return False
        with self._lock:
            self._nonces[origin(response.url)] = nonce
        if response.status_code == 401:
            return Challenge.parse(response.headers.get("WWW-Authenticate"), ("DPoP",)).error == "use_dpop_nonce"
        if response.status_code == 400:
            try:
                body = response.json()
            except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python reads
                return False
            return isinstance(body, dict) and body.get("error") == "use_dpop_nonce"
        return False

    def __repr__(self) -> str:
        return f"<DPoP {self.key!r}>"
