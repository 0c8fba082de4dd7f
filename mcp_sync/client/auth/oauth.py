"""OAuth for MCP clients: a ``requests`` auth that signs in when a server asks, and keeps the tokens fresh.

Give it to any HTTP transport as ``auth=``::

    import mcp_sync
    from mcp_sync.client.auth import OAuth, FileTokenStore

    with mcp_sync.connect("https://mcp.example.com/mcp", auth="oauth") as client:   # the defaults
        ...
    auth = OAuth(scopes=["files:read"], token_store=FileTokenStore())                # or choose
    with mcp_sync.connect("https://mcp.example.com/mcp", auth=auth) as client:
        ...

When the server answers 401, the flow of the MCP specification runs on the
spot: protected-resource metadata, authorization-server metadata, client
registration (pre-registered, a client ID metadata document, or dynamic
registration), authorization code with PKCE through the *interaction*,
tokens for the server's resource; the request is then sent again. A 403
``insufficient_scope`` signs in again with the scopes asked for added to those
granted (a bounded number of times). Tokens are refreshed shortly before they
expire and once after a 401. A flow that cannot finish raises
:class:`~mcp_sync.errors.MCPError` ``UNAUTHORIZED`` whose ``data["reason"]``
says why. Tokens are never logged.

What an authorization server says is not taken on trust: it must be served
over HTTPS (or from this machine) and offer PKCE ``S256``; its answers are
read within :data:`HTTP_TIMEOUT` and :data:`MAX_ANSWER_BYTES`, its
redirects are not followed, and a token the client cannot present as it
was issued (another ``token_type``, characters no header can carry) is refused.
Nor are the URLs the MCP server points to: the requests of a sign-in connect
to no address of this machine's networks the MCP server is not on itself,
and the authorization URL a browser is sent to must be one no shell or URL
opener splits (see :mod:`.targets`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
import requests.auth
import urllib3
from pydantic import ValidationError

from ...protocol.errors import MCPError
from ...protocol.oauth import Challenge, canonical_url, origin, redirect_registered, well_formed
from ...runtime.deadline import Deadline
from ...runtime.http import BadAnswer, bounded_request, new_session
from .discovery import (
    auth_error,
    authorization_server_metadata,
    protected_resource_metadata,
)
from .interaction import Interaction, default_interaction
from .jose import CLIENT_ASSERTION_TYPE, DPoP, KeyLike, client_assertion, signing_key
from .models import AuthorizationServerMetadata, ClientRegistration, PendingAuthorization, Tokens, as_json
from .stores import MemoryTokenStore, TokenStore
from .targets import Neighbours, check_openable

__all__ = ["OAuth"]

log = logging.getLogger(__name__)

_NOT_SET: Any = object()

OFFLINE_ACCESS = "offline_access"
MAX_STEP_UPS = 2
"""Sign-ins again after a 403 ``insufficient_scope`` for one request, before its 403 is given up on."""
HTTP_TIMEOUT = 30.0
"""Seconds any one request to an authorization server may take, all told: connecting, the headers, the whole body."""
MAX_ANSWER_BYTES = 1024 * 1024
"""The most an authorization server's answer (a metadata document, a token response) may hold."""


@dataclass
class Authority:
    """Who authorizes one MCP server, as discovered for it (what the grants of :mod:`.grants` sign in with).

    >>> from mcp_sync.client.auth.models import AuthorizationServerMetadata
    >>> metadata = AuthorizationServerMetadata.model_validate(
    ...     {"issuer": "https://auth.example", "token_endpoint": "https://auth.example/token"})
    >>> Authority("https://api.example/mcp", "https://api.example/mcp", "https://auth.example", metadata, None).issuer
    'https://auth.example'
    """

    server_url: str
    resource: str
    issuer: str
    metadata: AuthorizationServerMetadata
    scopes_supported: list[str] | None
    resource_metadata: str | None = None
    """The metadata URL the server's challenge named, if any: later discoveries start there too."""
    neighbours: Neighbours | None = None
    """The addresses the sign-in's requests may connect to (``None``: any)."""


def _pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge (RFC 7636): the SHA-256 of the verifier, base64url without padding."""
    verifier = secrets.token_urlsafe(48)  # 64 characters of the unreserved set
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OAuth(requests.auth.AuthBase):
    """MCP authorization for the HTTP transports (a :class:`requests.auth.AuthBase`).

    ``scopes`` are asked for when the server's challenge names none (else
    its ``scope``, else its metadata's ``scopes_supported``).
    ``client_id``/``client_secret`` are a pre-registered client;
    ``client_metadata_url`` is this client's metadata document (an HTTPS URL
    used as ``client_id`` where the authorization server supports it);
    otherwise the client registers itself as ``client_name``.
    ``redirect_uri`` is where the browser comes back (default: the
    interaction's loopback listener). ``token_store`` keeps tokens and
    registrations (default: in memory). ``interaction`` takes a person
    through the sign-in (default: one that fits where this runs, see
    :func:`~.interaction.default_interaction`; ``None``: never, so a sign-in
    must go through :meth:`begin` and :meth:`complete`).
    ``interaction_timeout`` bounds the wait for the person.
    ``client_key`` is the private key of a pre-registered client that
    authenticates with ``private_key_jwt`` (RFC 7523; PEM, JWK or
    :class:`~.jose.SigningKey`), its assertions' ``aud`` being
    ``assertion_audience``: ``"issuer"`` (the authorization server's issuer),
    ``"token_endpoint"``, or a URL. ``dpop`` binds the tokens to a key
    (RFC 9449): ``True`` for a new key, or a :class:`~.jose.DPoP`. Both need
    the ``jwt`` extra (``pip install "mcp-sync-py[jwt]"``). ``session`` is
    the ``requests.Session`` for authorization servers (proxies, custom CAs;
    with adapters of its own, the headers of an answer are bounded per read
    only, not within :data:`HTTP_TIMEOUT` in all as with the default one).
    ``allow_private_networks=True`` lets the sign-in's requests connect to
    any address: by default, an address of this machine, a private network
    or the link only when the MCP server is on that network itself, and never
    a cloud metadata service (see :mod:`.targets`).

    >>> auth = OAuth(scopes=["files:read"], interaction=None)
    >>> auth.tokens("https://mcp.example.com/mcp") is None
    True
    """

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        client_name: str = "mcp-sync",
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        redirect_uri: str | None = None,
        token_store: TokenStore | None = None,
        interaction: Interaction | None = _NOT_SET,
        interaction_timeout: float = 300.0,
        session: requests.Session | None = None,
        client_key: KeyLike | None = None,
        assertion_audience: str = "issuer",
        dpop: bool | DPoP = False,
        allow_private_networks: bool = False,
    ) -> None:
        self.scopes = list(scopes) if scopes is not None else None
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.interaction: Interaction | None = default_interaction() if interaction is _NOT_SET else interaction
        self._redirect_uri = redirect_uri
        self.store: TokenStore = token_store if token_store is not None else MemoryTokenStore()
        self.interaction_timeout = interaction_timeout
        self.http = session or new_session()  # its connections can be shut down: see _http()
        self._lock = threading.RLock()  # one sign-in at a time; the requests that wait then reuse its tokens
        self.client_key = signing_key(client_key) if client_key is not None else None
        self.assertion_audience = assertion_audience
        self.dpop: DPoP | None = dpop if isinstance(dpop, DPoP) else DPoP() if dpop else None
        self.allow_private_networks = allow_private_networks

    # ------------------------------------------------------------ the public face

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the browser back."""
        if self._redirect_uri is not None:
            return self._redirect_uri
        if self.interaction is not None:
            return self.interaction.redirect_uri
        raise auth_error("authorization_required", "OAuth needs a redirect_uri (or an interaction) to sign in")

    def tokens(self, server_url: str) -> Tokens | None:
        """The tokens kept for ``server_url``, if any."""
        raw = self.store.load(_tokens_key(server_url))
        try:
            return Tokens.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    def logout(self, server_url: str) -> None:
        """Forget the tokens kept for ``server_url`` (the client registrations stay)."""
        self.store.save(_tokens_key(server_url), None)

    def login(self, server_url: str) -> Tokens | None:
        """Sign in to ``server_url`` now, if it asks for it; the tokens (``None``: it asked for none).

        The server is sent an unauthenticated ``ping``: its 401 starts the
        flow, with no request timeout running while the person signs in.
        """
        with self._lock:
            kept = self._fresh_tokens(server_url)
            if kept is not None:
                return kept
            probe = {"jsonrpc": "2.0", "id": "mcp-sync-login", "method": "ping"}
            headers = {"Accept": "application/json, text/event-stream"}
            response = self._http("POST", server_url, json=probe, headers=headers, whole=False)
            response.close()
            if response.status_code != 401:
                return None
            return self._authorize(server_url, Challenge.parse(response.headers.get("WWW-Authenticate")), None)

    def begin(self, server_url: str, challenge: str | None = None) -> str:
        """The authorization URL to send a person to; the sign-in is kept in the store under its ``state``.

        For web apps: redirect the person's browser to the URL; when it
        comes back to ``redirect_uri``, call :meth:`complete` with the full
        URL, in any later request and on any worker that shares the store.
        ``challenge`` is a 401's ``WWW-Authenticate`` header, if one is at hand.
        """
        with self._lock:
            authority = self._discover(server_url, Challenge.parse(challenge))
            scope = self._scope(authority, Challenge.parse(challenge), None)
            return self._authorization_url(authority, scope)

    def complete(self, callback_url: str) -> Tokens:
        """Finish a sign-in from the URL the browser came back to; the tokens, also kept in the store."""
        query = parse_qs(urlsplit(callback_url).query)
        state = _first(query, "state")
        raw = self.store.load(f"pending {state}") if state else None
        if raw is None:
            raise auth_error("state_mismatch", "the redirect's state matches no sign-in under way")
        self.store.save(f"pending {state}", None)  # a state is good for one completion
        pending = PendingAuthorization.model_validate(raw)
        with self._lock:
            authority = self._discover(pending.server_url, _pointing_to(pending.resource_metadata))
            return self._finish(authority, pending, query)

    # --------------------------------------------------------------- requests' side

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        assert request.url is not None
        tokens = self._fresh_tokens(canonical_url(request.url))
        if tokens is not None:
            self._present(tokens, request)
        request.register_hook("response", self._on_response)
        return request

    def _on_response(self, response: requests.Response, **send: Any) -> requests.Response:
        """Sign in (or step up) and send the request again while the server says 401 or 403 ``insufficient_scope``."""
        step_ups = 0
        refreshed = False
        nonced = False
        while True:
            wants_nonce = self.dpop is not None and self.dpop.observe(response)
            challenge = Challenge.parse(response.headers.get("WWW-Authenticate"))
            if response.status_code == 401:
                pass
            elif response.status_code == 403 and challenge.error == "insufficient_scope":
                if step_ups >= MAX_STEP_UPS:
                    return response  # the server still wants more: its 403 is the answer
                step_ups += 1
            else:
                return response
            request = response.request
            assert request.url is not None
            server_url = canonical_url(request.url)
            sent = request.headers.get("Authorization")
            _let_go(response)
            with self._lock:
                kept = self.tokens(server_url)
                if response.status_code == 403:
                    tokens = self._authorize(server_url, challenge, kept)
                elif kept is not None and not str(sent or "").endswith(" " + kept.access_token):
                    tokens = kept  # another request signed in meanwhile: send again with its tokens
                elif kept is not None and wants_nonce and not nonced:
                    nonced = True
                    tokens = kept  # RFC 9449 section 9: send again, the proof carrying the server's nonce
                elif kept is not None and kept.refresh_token and not refreshed:
                    refreshed = True
                    tokens = self._refresh_or_none(server_url, kept) or self._authorize(server_url, challenge, None)
                elif refreshed:
                    return response  # refused even with tokens just obtained: that 401 is the answer
                else:
                    refreshed = True
                    tokens = self._authorize(server_url, challenge, None)
            again = request.copy()
            self._present(tokens, again)
            adapter = response.connection
            retried: requests.Response = adapter.send(again, **send)
            retried.history.append(response)
            retried.request = again
            response = retried

    # ----------------------------------------------------------------- the flow

    def _authorize(self, server_url: str, challenge: Challenge, granted: Tokens | None) -> Tokens:
        """A whole sign-in, through the interaction: the new tokens."""
        if self.interaction is None and self._redirect_uri is None:
            raise auth_error(
                "authorization_required",
                f"{server_url} requires a sign-in, and no interaction is set: use OAuth.begin() and complete()",
                server_url=server_url,
            )
        if self.interaction is None:
            raise auth_error(
                "authorization_required",
                f"{server_url} requires a sign-in: send the person to OAuth.begin()'s URL, then call complete()",
                server_url=server_url,
            )
        authority = self._discover(server_url, challenge)
        url = self._authorization_url(authority, self._scope(authority, challenge, granted))
        state = parse_qs(urlsplit(url).query)["state"][0]
        redirect = self.interaction.authorize(url, self.interaction_timeout)
        query = parse_qs(urlsplit(redirect).query)
        if _first(query, "state") != state:
            self.store.save(f"pending {state}", None)
            raise auth_error("state_mismatch", "the authorization response's state is not the one sent")
        raw = self.store.load(f"pending {state}")
        self.store.save(f"pending {state}", None)
        assert raw is not None
        return self._finish(authority, PendingAuthorization.model_validate(raw), query)

    def _discover(self, server_url: str, challenge: Challenge) -> Authority:
        """Who authorizes ``server_url``: from its protected-resource metadata, else (2025-03-26) its own origin."""
        server_url = canonical_url(server_url)
        neighbours = None if self.allow_private_networks else Neighbours(server_url)

        def fetch(url: str) -> requests.Response | None:
            return self._fetch(url, neighbours)

        resource_metadata = protected_resource_metadata(fetch, server_url, challenge)
        if resource_metadata is not None and resource_metadata.authorization_servers:
            issuer = resource_metadata.authorization_servers[0]
            metadata = authorization_server_metadata(fetch, issuer)
            if metadata is None:
                raise auth_error("metadata_unavailable", f"the authorization server {issuer} publishes no metadata")
            resource = resource_metadata.resource or server_url
            supported = resource_metadata.scopes_supported
            return Authority(server_url, resource, issuer, metadata, supported, challenge.resource_metadata, neighbours)
        # 2025-03-26: no protected-resource metadata; the server's origin is its authorization server,
        # with metadata at the origin's well-known URL or, failing that, the default endpoints.
        issuer = origin(server_url)
        metadata = authorization_server_metadata(fetch, issuer, check_issuer=False) or AuthorizationServerMetadata(
            issuer=issuer,
            authorization_endpoint=f"{issuer}/authorize",
            token_endpoint=f"{issuer}/token",
            registration_endpoint=f"{issuer}/register",
            code_challenge_methods_supported=["S256"],  # 2025-03-26 requires PKCE of every server
        )
        return Authority(server_url, server_url, issuer, metadata, None, None, neighbours)

    def _scope(self, authority: Authority, challenge: Challenge, granted: Tokens | None) -> str | None:
        """What to ask for: the challenge's scope, else the configured or advertised scopes, with those granted kept."""
        if challenge.scope:
            wanted = challenge.scope.split()
        elif self.scopes is not None:
            wanted = list(self.scopes)
        else:
            wanted = list(authority.scopes_supported or [])
        if granted is not None:
            wanted = [*sorted(granted.scopes.difference(wanted)), *wanted]  # step-up: keep what was granted (SEP-2350)
        offered = authority.metadata.scopes_supported or []
        if OFFLINE_ACCESS in offered and OFFLINE_ACCESS not in wanted:
            wanted.append(OFFLINE_ACCESS)  # SEP-2207: a refresh token, where the authorization server offers one
        return " ".join(dict.fromkeys(wanted)) or None

    def _authorization_url(self, authority: Authority, scope: str | None) -> str:
        """The authorization request (PKCE S256, state, resource), kept pending under its state."""
        endpoint = authority.metadata.authorization_endpoint
        if endpoint is None:
            raise auth_error(
                "metadata_invalid", f"the authorization server {authority.issuer} has no authorization endpoint"
            )
        if "S256" not in (authority.metadata.code_challenge_methods_supported or []):
            # The MCP specification (2025-11-25 onwards): no S256 in the metadata, no sign-in.
            raise auth_error(
                "pkce_unsupported",
                f"the authorization server {authority.issuer} does not say it supports PKCE with S256 "
                "(code_challenge_methods_supported): the sign-in is refused",
            )
        # The browser is sent there: refused before anything is registered, kept or opened. The query added
        # below is form-encoded (letters, digits, -._~%+ only), so the URL as a whole passes as the endpoint does.
        check_openable(endpoint, authority.issuer)
        redirect_uri = self.redirect_uri
        client = self._client(authority, redirect_uri)
        verifier, challenge = _pkce()
        state = secrets.token_urlsafe(24)
        pending = PendingAuthorization(
            state=state,
            code_verifier=verifier,
            redirect_uri=redirect_uri,
            server_url=authority.server_url,
            resource=authority.resource,
            issuer=authority.issuer,
            scope=scope,
            client_id=client.client_id,
            resource_metadata=authority.resource_metadata,
        )
        self.store.save(f"pending {state}", as_json(pending))
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": authority.resource,
        }
        if scope:
            query["scope"] = scope
        if OFFLINE_ACCESS in (scope or "").split():
            query["prompt"] = "consent"  # OpenID servers grant offline_access (a refresh token) only with consent
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{urlencode(query)}"

    def _finish(self, authority: Authority, pending: PendingAuthorization, query: dict[str, list[str]]) -> Tokens:
        """Check the authorization response (error, ``iss``) and exchange its code for tokens."""
        error = _first(query, "error")
        if error is not None:
            description = _first(query, "error_description") or ""
            reason = "access_denied" if error == "access_denied" else "authorization_failed"
            raise auth_error(reason, f"the authorization server refused: {error} {description}".strip(), error=error)
        iss = _first(query, "iss")
        # RFC 9207: compared exactly whenever present, and required where the server says it sends it.
        if iss is None and authority.metadata.authorization_response_iss_parameter_supported:
            raise auth_error("iss_mismatch", f"the authorization response lacks iss, which {authority.issuer} promises")
        if iss is not None and iss != authority.metadata.issuer:
            raise auth_error(
                "iss_mismatch", f"the authorization response comes from {iss!r}, not {authority.metadata.issuer!r}"
            )
        code = _first(query, "code")
        if not code:
            raise auth_error("authorization_failed", "the authorization response has no code")
        if pending.issuer != authority.issuer:
            raise auth_error("issuer_mismatch", "the server moved to another authorization server during the sign-in")
        client = self._client(authority, pending.redirect_uri, pending.client_id)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.code_verifier,
            "resource": pending.resource,
        }
        return self._token_request(authority, client, form, pending.scope)

    def _fresh_tokens(self, server_url: str) -> Tokens | None:
        """The kept tokens for ``server_url``, refreshed first if they are about to expire."""
        tokens = self.tokens(server_url)
        if tokens is None or not tokens.expiring():
            return tokens
        if tokens.refresh_token is None:
            return tokens  # let the server say whether it still takes them
        with self._lock:
            again = self.tokens(server_url)
            if again is not None and not again.expiring():
                return again  # refreshed by another thread meanwhile
            return self._refresh_or_none(server_url, tokens)  # None when refused: they were forgotten

    def _refresh_or_none(self, server_url: str, tokens: Tokens) -> Tokens | None:
        """Tokens from the refresh token; ``None`` (and the old ones forgotten) when the server refuses."""
        try:
            authority = self._discover(server_url, _pointing_to(tokens.resource_metadata))
            if tokens.issuer is not None and tokens.issuer != authority.issuer:
                self.logout(server_url)  # the server moved: these tokens mean nothing to its new authorization server
                return None
            client = self._client(authority, None, tokens.client_id)
            form = {
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token or "",
                "resource": authority.resource,
            }
            fresh = self._token_request(authority, client, form, tokens.scope)
        except MCPError as exc:
            log.info("could not refresh the tokens for %s: %s", server_url, exc.message)
            # Another process sharing the store may have used the same (rotating) refresh token first:
            # its tokens are then the ones to use, and only tokens still refused are forgotten.
            stored = self.tokens(server_url)
            if stored is not None and stored.refresh_token != tokens.refresh_token:
                return stored
            if stored is not None:
                self.logout(server_url)
            return None
        if fresh.refresh_token is None and tokens.refresh_token is not None:
            fresh = fresh.model_copy(
                update={"refresh_token": tokens.refresh_token}
            )  # RFC 6749 6: the old one stays valid
            self.store.save(_tokens_key(server_url), as_json(fresh))
        return fresh

    # ----------------------------------------------------------- registration

    def _client(
        self, authority: Authority, redirect_uri: str | None, client_id: str | None = None
    ) -> ClientRegistration:
        """This client for ``authority``'s server: pre-registered, a metadata document, kept, or newly registered.

        ``client_id`` asks for the registration that tokens or a sign-in were
        issued to: a refresh or a code exchange must come from that client,
        even if another registration has been made since.
        """
        metadata = authority.metadata
        if self.client_id is not None:
            default = "private_key_jwt" if self.client_key is not None else _secret_method(metadata, self.client_secret)
            method = self.token_endpoint_auth_method or default
            return ClientRegistration(
                client_id=self.client_id, client_secret=self.client_secret, token_endpoint_auth_method=method
            )
        if self.client_metadata_url is not None and metadata.client_id_metadata_document_supported:
            return ClientRegistration(client_id=self.client_metadata_url, token_endpoint_auth_method="none")
        latest = f"client {authority.issuer}"
        kept = self._registration(f"{latest} {client_id}" if client_id is not None else latest, authority.issuer)
        if kept is not None and (redirect_uri is None or redirect_registered(redirect_uri, kept.redirect_uris or [])):
            return kept
        if redirect_uri is None:
            raise auth_error("registration_failed", f"this client is not registered with {authority.issuer}")
        registered = self._register(authority, redirect_uri)
        self.store.save(latest, as_json(registered))
        self.store.save(f"{latest} {registered.client_id}", as_json(registered))
        return registered

    def _registration(self, key: str, issuer: str) -> ClientRegistration | None:
        """A kept registration, if it is one and was made with ``issuer`` (never shown to another server)."""
        raw = self.store.load(key)
        try:
            kept = ClientRegistration.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None
        return kept if kept is not None and kept.issuer == issuer else None

    def _register(self, authority: Authority, redirect_uri: str) -> ClientRegistration:
        """Dynamic client registration (RFC 7591)."""
        metadata = authority.metadata
        if metadata.registration_endpoint is None:
            raise auth_error(
                "registration_failed",
                f"the authorization server {authority.issuer} takes no registrations: give client_id "
                "(or client_metadata_url, where it supports metadata documents)",
            )
        grant_types = ["authorization_code"]
        if OFFLINE_ACCESS in (metadata.scopes_supported or []) or "refresh_token" in (
            metadata.grant_types_supported or []
        ):
            grant_types.append("refresh_token")
        host = urlsplit(redirect_uri).hostname or ""
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": self.token_endpoint_auth_method or _registration_method(metadata),
            # 2026-07-28 (SEP-837): say what kind of client this is; a loopback redirect means a native one.
            "application_type": "native" if host in ("127.0.0.1", "localhost", "::1") else "web",
        }
        # No ``scope``: servers take a registered one as an allow-list, which a later step-up would exceed.
        response = self._http("POST", metadata.registration_endpoint, authority.neighbours, json=body)
        if response.status_code not in (200, 201):
            raise auth_error(
                "registration_failed",
                f"the authorization server {authority.issuer} refused the registration: {describe_refusal(response)}",
                status=response.status_code,
            )
        try:
            answer = response.json()
            if not isinstance(answer, dict):
                raise ValueError("not an object")
            registered = ClientRegistration.model_validate(
                {"token_endpoint_auth_method": body["token_endpoint_auth_method"], **answer}
            )
        except (ValueError, ValidationError):
            registered = None
        if registered is None or not registered.client_id:
            raise auth_error("registration_failed", f"the registration answer of {authority.issuer} is not a client")
        return registered.model_copy(update={"issuer": authority.issuer, "redirect_uris": [redirect_uri]})

    # ----------------------------------------------------------------- tokens

    def _token_request(
        self, authority: Authority, client: ClientRegistration, form: dict[str, str], scope: str | None
    ) -> Tokens:
        """POST to the token endpoint with the client's authentication; the tokens, kept for the server."""
        endpoint = authority.metadata.token_endpoint
        nonced = False
        while True:
            headers = {"Accept": "application/json"}
            sent = dict(form)
            self._authenticate_client(client, authority.metadata, sent, headers)
            if self.dpop is not None:
                headers["DPoP"] = self.dpop.proof("POST", endpoint)
            response = self._http("POST", endpoint, authority.neighbours, data=sent, headers=headers)
            if nonced or self.dpop is None or not self.dpop.observe(response):
                break
            nonced = True  # RFC 9449 section 8: once more, the proof carrying the server's nonce
        if response.status_code != 200:
            raise auth_error(
                "token_request_failed",
                f"the token endpoint of {authority.issuer} refused: {describe_refusal(response)}",
                status=response.status_code,
            )
        try:
            tokens = Tokens.model_validate(response.json())
        except (ValueError, ValidationError):
            raise auth_error(
                "token_request_failed", f"the token endpoint of {authority.issuer} sent no tokens"
            ) from None
        kind = tokens.token_type.lower()
        if kind != "bearer" and not (kind == "dpop" and self.dpop is not None):
            # RFC 6749 section 7.1: a token of a type the client does not understand is not used.
            raise auth_error(
                "token_request_failed",
                f"the token endpoint of {authority.issuer} issued a token of type {tokens.token_type[:40]!r}, "
                "which this client cannot present",
            )
        if not well_formed(tokens.access_token):
            raise auth_error(
                "token_request_failed", f"the token endpoint of {authority.issuer} sent an access token that is not one"
            )
        kept = tokens.stamped(authority.issuer, scope, client.client_id)
        kept = kept.model_copy(update={"resource_metadata": authority.resource_metadata})
        self.store.save(_tokens_key(authority.server_url), as_json(kept))
        return kept

    def _authenticate_client(
        self,
        client: ClientRegistration,
        metadata: AuthorizationServerMetadata,
        form: dict[str, str],
        headers: dict[str, str],
    ) -> None:
        """Add the client's authentication to a token request, by its ``token_endpoint_auth_method``."""
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic" and client.client_secret is not None:
            pair = f"{_form_encode(client.client_id)}:{_form_encode(client.client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        elif method == "client_secret_post" and client.client_secret is not None:
            form.update(client_id=client.client_id, client_secret=client.client_secret)
        elif method == "private_key_jwt" and self.client_key is not None:
            audience = {"issuer": metadata.issuer, "token_endpoint": metadata.token_endpoint}.get(
                self.assertion_audience, self.assertion_audience
            )
            assertion = client_assertion(self.client_key, client.client_id, audience)
            form.update(
                client_id=client.client_id, client_assertion_type=CLIENT_ASSERTION_TYPE, client_assertion=assertion
            )
        else:
            form["client_id"] = client.client_id

    def _present(self, tokens: Tokens, request: requests.PreparedRequest) -> None:
        """Put the access token on a request to the MCP server (a DPoP-bound one with a fresh proof)."""
        if self.dpop is not None and tokens.token_type.lower() == "dpop":
            assert request.url is not None
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = self.dpop.proof(request.method or "POST", request.url, tokens.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    # ------------------------------------------------------------------- HTTP

    def _fetch(self, url: str, neighbours: Neighbours | None = None) -> requests.Response | None:
        """GET a metadata document; ``None`` when the host cannot be reached (refused by ``neighbours``: raises)."""
        try:
            return _checked(
                bounded_request(
                    self.http,
                    "GET",
                    url,
                    timeout=HTTP_TIMEOUT,
                    max_bytes=MAX_ANSWER_BYTES,
                    check_address=_checker(url, neighbours),
                    headers={"Accept": "application/json"},
                )
            )
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            log.info("could not fetch %s: %s", url, _failure(exc))
            return None

    def _http(
        self, method: str, url: str, neighbours: Neighbours | None = None, *, whole: bool = True, **options: Any
    ) -> requests.Response:
        """One request to an authorization server (or a probe of the MCP server: ``whole=False``, body unread).

        All of it (connecting, the headers, the body) within :data:`HTTP_TIMEOUT`,
        its body within :data:`MAX_ANSWER_BYTES`: the timeout of ``requests``
        bounds each read only, so a server sending a byte at a time would
        hold the sign-in for ever. Redirects are not followed: a token request
        sent on elsewhere would carry the code, the verifier and the client's secret with it.
        ``neighbours``: the addresses it may connect to (a URL the MCP server gave); ``None``: a URL
        the caller gave (the MCP server itself, an identity provider), which goes anywhere.
        """
        try:
            response = bounded_request(
                self.http,
                method,
                url,
                timeout=HTTP_TIMEOUT,
                max_bytes=MAX_ANSWER_BYTES,
                whole=whole,
                check_address=_checker(url, neighbours),
                allow_redirects=False,
                **options,
            )
            return _checked(response) if whole else response
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            raise auth_error("unreachable", f"could not reach {origin(url)}: {_failure(exc)}", url=url) from None


def _checker(url: str, neighbours: Neighbours | None) -> Callable[[str], None] | None:
    """What checks the addresses a request to ``url`` connects to (``None``: nothing does)."""
    if neighbours is None:
        return None
    return lambda address: neighbours.check(url, address)


def _checked(response: requests.Response) -> requests.Response:
    """``response``, read whole, unless it is JSON nested deeper than Python reads (BadAnswer)."""
    try:
        json.loads(response.content)  # read again by response.json(): what Python cannot read is refused once, here
    except RecursionError:
        raise BadAnswer("the answer is JSON nested too deeply to read") from None
    except ValueError:
        pass  # not JSON: its reader says so
    return response


def _let_go(response: requests.Response) -> None:
    """Close a refusal, its body read first if it is short and comes at once (the connection is then reused).

    A resource server's 401 whose body has no end is not waited for: the
    connection is dropped instead.
    """
    deadline = Deadline.after(1.0)
    left = 64 * 1024
    try:
        while left > 0 and not deadline.expired and (chunk := response.raw.read1(left)):
            left -= len(chunk)
    except (urllib3.exceptions.HTTPError, OSError):
        pass  # a refusal cut short: nothing to keep
    response.close()


def _failure(exc: Exception) -> str:
    return str(exc) if isinstance(exc, BadAnswer) else type(exc).__name__


def _pointing_to(resource_metadata: str | None) -> Challenge:
    """A challenge that names only where the server's metadata is (as a first 401 said)."""
    return Challenge("Bearer", {"resource_metadata": resource_metadata}) if resource_metadata else Challenge()


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _tokens_key(server_url: str) -> str:
    return f"tokens {canonical_url(server_url)}"


def _form_encode(value: str) -> str:
    """RFC 6749 section 2.3.1: the client id and secret are form-encoded before the Basic scheme joins them."""
    return urlencode({"": value})[1:]


def _secret_method(metadata: AuthorizationServerMetadata, secret: str | None) -> str:
    """How a pre-registered client authenticates: none without a secret, else the first secret method offered."""
    if secret is None:
        return "none"
    offered = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    return (
        "client_secret_post"
        if "client_secret_basic" not in offered and "client_secret_post" in offered
        else "client_secret_basic"
    )


def _registration_method(metadata: AuthorizationServerMetadata) -> str:
    """The token endpoint authentication to register with: none (a public client) where offered."""
    offered = metadata.token_endpoint_auth_methods_supported
    if offered is None or "none" in offered:
        return "none"
    return "client_secret_basic" if "client_secret_basic" in offered else offered[0]


def describe_refusal(response: requests.Response) -> str:
    """A refusal's status and OAuth error, never its whole body (which may echo a secret).

    >>> refused = requests.Response()
    >>> refused.status_code, refused._content = 400, b'{"error": "invalid_grant", "error_description": "expired"}'
    >>> describe_refusal(refused)
    '400 invalid_grant expired'
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        detail = str(body.get("error_description") or "")[:200]
        return f"{response.status_code} {body['error']} {detail}".strip()
    return f"HTTP {response.status_code}"
