"""Sign-ins without a person: machine-to-machine grants for MCP clients.

Each class is an :class:`~mcp_sync.client.auth.oauth.OAuth` (give it to any
HTTP transport as ``auth=``) whose sign-in is a single token request, so it
runs anywhere a script runs: a service, a batch job, CI. Discovery, the
``resource`` parameter, scope selection, token storage, step-up on 403 and
DPoP (``dpop=True``) and the address check (``allow_private_networks``) work as
for the authorization-code flow.

- :class:`ClientCredentials`: the ``client_credentials`` grant (OAuth 2.1
  section 4.2; the MCP extension ``io.modelcontextprotocol/oauth-client-credentials``),
  with a client secret or a private key (``private_key_jwt``, RFC 7523).
- :class:`EnterpriseAuthorization`: Enterprise-Managed Authorization
  (SEP-990): the person's ID token from the enterprise identity provider is
  exchanged there (RFC 8693) for an identity assertion grant (ID-JAG), which
  the MCP server's authorization server takes as a JWT-bearer grant (RFC 7523).
- :class:`WorkloadIdentity`: Workload Identity Federation (SEP-1933): a
  JWT the platform issued to the workload (a Kubernetes service account
  token, a SPIFFE JWT-SVID, a cloud identity token) as a JWT-bearer grant.

A refusal raises :class:`~mcp_sync.errors.MCPError` ``UNAUTHORIZED`` with the
authorization server's OAuth error in its message; nothing falls back to
another grant.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import requests

from ...protocol.errors import MCPError
from ...protocol.oauth import Challenge
from .discovery import auth_error, authorization_server_metadata
from .jose import DPoP, KeyLike
from .models import AuthorizationServerMetadata, ClientRegistration, Tokens
from .oauth import OFFLINE_ACCESS, Authority, OAuth, describe_refusal
from .stores import TokenStore

__all__ = [
    "ID_JAG_TYPE",
    "ID_TOKEN_TYPE",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "ClientCredentials",
    "EnterpriseAuthorization",
    "WorkloadIdentity",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""RFC 7523 section 2.1: the grant type of a JWT authorization grant."""
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
"""RFC 8693: the grant type of a token exchange."""
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
"""RFC 8693 section 3: an OpenID Connect ID token."""
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
"""The identity assertion JWT authorization grant (draft-ietf-oauth-identity-assertion-authz-grant)."""

Source: TypeAlias = "str | Callable[[], str]"
"""A credential, or a function that returns a current one (called at each sign-in)."""


def _value(source: Source) -> str:
    return source() if callable(source) else source


class _Grant(OAuth):
    """An OAuth whose sign-in is one token request: the grant's form, with ``resource`` and ``scope``."""

    def __init__(
        self,
        *,
        client_id: str | None,
        client_secret: str | None,
        client_key: KeyLike | None,
        assertion_audience: str,
        token_endpoint_auth_method: str | None,
        scopes: Sequence[str] | None,
        token_store: TokenStore | None,
        session: requests.Session | None,
        dpop: bool | DPoP,
        allow_private_networks: bool,
    ) -> None:
        super().__init__(
            scopes=scopes,
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=token_endpoint_auth_method,
            token_store=token_store,
            interaction=None,
            session=session,
            client_key=client_key,
            assertion_audience=assertion_audience,
            dpop=dpop,
            allow_private_networks=allow_private_networks,
        )

    def _authorize(self, server_url: str, challenge: Challenge, granted: Tokens | None) -> Tokens:
        authority = self._discover(server_url, challenge)
        wanted = (self._scope(authority, challenge, granted) or "").split()
        # No refresh tokens here (RFC 6749 section 4.4.3): the grant itself is repeated instead.
        scope = " ".join(name for name in wanted if name != OFFLINE_ACCESS) or None
        form = {**self._grant(authority, scope), "resource": authority.resource}
        if scope:
            form["scope"] = scope
        return self._token_request(authority, self._client(authority, None), form, scope)

    @abstractmethod
    def _grant(self, authority: Authority, scope: str | None) -> dict[str, str]:
        """The grant's own parameters: ``grant_type`` and what goes with it."""
        ...


class ClientCredentials(_Grant):
    """The ``client_credentials`` grant: a service signs in as itself, with no person involved.

    The client is pre-registered with the authorization server, and
    authenticates with ``client_secret`` (``client_secret_basic``, or
    ``client_secret_post`` where only that is offered) or with ``client_key``
    (``private_key_jwt``: a JWT signed with the key, whose ``aud`` is
    ``assertion_audience``, see :class:`~.oauth.OAuth`; needs the ``jwt``
    extra). ``token_endpoint_auth_method`` forces one.

    >>> import mcp_sync
    >>> from mcp_sync.client.auth import ClientCredentials
    >>> auth = ClientCredentials("reporting-job", client_secret="...", scopes=["reports:read"])
    >>> with mcp_sync.connect("https://mcp.example.com/mcp", auth=auth) as client:  # doctest: +SKIP
    ...     client.tools()
    >>> auth = ClientCredentials("reporting-job", client_key=open("job.pem").read())  # doctest: +SKIP
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | None = None,
        *,
        client_key: KeyLike | None = None,
        assertion_audience: str = "issuer",
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | None = None,
        token_store: TokenStore | None = None,
        session: requests.Session | None = None,
        dpop: bool | DPoP = False,
        allow_private_networks: bool = False,
    ) -> None:
        if client_secret is None and client_key is None:
            raise ValueError("the client_credentials grant needs client_secret or client_key")
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            client_key=client_key,
            assertion_audience=assertion_audience,
            token_endpoint_auth_method=token_endpoint_auth_method,
            scopes=scopes,
            token_store=token_store,
            session=session,
            dpop=dpop,
            allow_private_networks=allow_private_networks,
        )

    def _grant(self, authority: Authority, scope: str | None) -> dict[str, str]:
        return {"grant_type": "client_credentials"}


class EnterpriseAuthorization(_Grant):
    """Enterprise-Managed Authorization (SEP-990): the enterprise's identity provider vouches for the person.

    At each sign-in, the person's ``id_token`` (from the single sign-on
    they already did with the identity provider ``idp_issuer``) is
    exchanged at the identity provider's token endpoint (RFC 8693;
    ``idp_token_endpoint``, else discovered) for an identity assertion
    grant (ID-JAG) naming the MCP server's authorization server and the
    server itself; the authorization server then takes the ID-JAG as a
    JWT-bearer grant (RFC 7523) from this client (``client_id`` with
    ``client_secret`` or ``client_key``, as :class:`ClientCredentials`).
    ``idp_client_id``/``idp_client_secret`` are this client at the identity
    provider. ``id_token`` may be a function returning a current one;
    ``subject_token_type`` says what it is (an ID token by default, or a
    SAML assertion, ``urn:ietf:params:oauth:token-type:saml2``).

    >>> from mcp_sync.client.auth import EnterpriseAuthorization
    >>> auth = EnterpriseAuthorization(
    ...     "mcp-client", client_secret="...",
    ...     id_token=lambda: sso.id_token,   # the person's ID token, from the app's own sign-in
    ...     idp_issuer="https://acme.okta.com", idp_client_id="mcp-client-at-okta",
    ... )
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | None = None,
        *,
        id_token: Source,
        idp_issuer: str,
        idp_token_endpoint: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        subject_token_type: str = ID_TOKEN_TYPE,
        client_key: KeyLike | None = None,
        assertion_audience: str = "issuer",
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | None = None,
        token_store: TokenStore | None = None,
        session: requests.Session | None = None,
        dpop: bool | DPoP = False,
        allow_private_networks: bool = False,
    ) -> None:
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            client_key=client_key,
            assertion_audience=assertion_audience,
            token_endpoint_auth_method=token_endpoint_auth_method,
            scopes=scopes,
            token_store=token_store,
            session=session,
            dpop=dpop,
            allow_private_networks=allow_private_networks,
        )
        self.id_token = id_token
        self.idp_issuer = idp_issuer
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret
        self.subject_token_type = subject_token_type

    def _grant(self, authority: Authority, scope: str | None) -> dict[str, str]:
        return {
            "grant_type": JWT_BEARER,
            "assertion": self.identity_assertion(authority.issuer, authority.resource, scope),
        }

    def identity_assertion(self, audience: str, resource: str, scope: str | None = None) -> str:
        """An ID-JAG from the identity provider, for the authorization server ``audience`` and server ``resource``."""
        idp = self._idp_metadata()
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG_TYPE,
            "audience": audience,
            "resource": resource,
            "subject_token": _value(self.id_token),
            "subject_token_type": self.subject_token_type,
        }
        if scope:
            form["scope"] = scope
        headers = {"Accept": "application/json"}
        if self.idp_client_id is not None:
            method = "client_secret_basic" if self.idp_client_secret is not None else "none"
            client = ClientRegistration(
                client_id=self.idp_client_id, client_secret=self.idp_client_secret, token_endpoint_auth_method=method
            )
            self._authenticate_client(client, idp, form, headers)
        response = self._http("POST", idp.token_endpoint, data=form, headers=headers)
        if response.status_code != 200:
            raise auth_error(
                "token_exchange_failed",
                f"the identity provider {self.idp_issuer} refused the token exchange: {describe_refusal(response)}",
                status=response.status_code,
            )
        try:
            answer: Any = response.json()
        except ValueError:
            answer = None
        issued = isinstance(answer, dict) and answer.get("issued_token_type") == ID_JAG_TYPE
        grant = answer.get("access_token") if issued else None
        if not isinstance(grant, str) or not grant:
            raise auth_error(
                "token_exchange_failed", f"the identity provider {self.idp_issuer} sent no identity assertion grant"
            )
        return grant

    def _idp_metadata(self) -> AuthorizationServerMetadata:
        if self.idp_token_endpoint is not None:
            return AuthorizationServerMetadata(issuer=self.idp_issuer, token_endpoint=self.idp_token_endpoint)
        metadata = authorization_server_metadata(self._fetch, self.idp_issuer)
        if metadata is None:
            raise auth_error("metadata_unavailable", f"the identity provider {self.idp_issuer} publishes no metadata")
        return metadata


class WorkloadIdentity(_Grant):
    """Workload Identity Federation (SEP-1933): the platform's JWT for this workload is the credential.

    ``assertion`` is the workload's JWT, or a function returning a current
    one (platforms rotate them: read the file each time). It is sent as a
    JWT-bearer grant (RFC 7523 section 2.1), its ``aud`` being the
    authorization server as the platform was configured to name it. No
    registration is needed; ``client_id`` (and ``client_secret``) are sent
    if given. An assertion the authorization server refused is not sent
    again: the same error is raised until the source yields another one.

    >>> from pathlib import Path
    >>> from mcp_sync.client.auth import WorkloadIdentity
    >>> token_file = Path("/var/run/secrets/tokens/mcp-token")
    >>> auth = WorkloadIdentity(lambda: token_file.read_text().strip(), scopes=["tools:call"])
    """

    def __init__(
        self,
        assertion: Source,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        scopes: Sequence[str] | None = None,
        token_store: TokenStore | None = None,
        session: requests.Session | None = None,
        dpop: bool | DPoP = False,
        allow_private_networks: bool = False,
    ) -> None:
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            client_key=None,
            assertion_audience="issuer",
            token_endpoint_auth_method=None,
            scopes=scopes,
            token_store=token_store,
            session=session,
            dpop=dpop,
            allow_private_networks=allow_private_networks,
        )
        self.assertion = assertion
        self._pending = ""  # the assertion of the sign-in under way (sign-ins hold the lock)
        self._refused: dict[str, MCPError] = {}

    def _authorize(self, server_url: str, challenge: Challenge, granted: Tokens | None) -> Tokens:
        assertion = _value(self.assertion)
        seen = hashlib.sha256(assertion.encode()).hexdigest()
        if seen in self._refused:
            raise self._refused[seen]
        self._pending = assertion
        try:
            return super()._authorize(server_url, challenge, granted)
        except MCPError as exc:
            if exc.context.get("reason") == "token_request_failed":
                self._refused = {seen: exc}  # only the latest: an assertion is not sent again once refused
            raise

    def _grant(self, authority: Authority, scope: str | None) -> dict[str, str]:
        return {"grant_type": JWT_BEARER, "assertion": self._pending}

    def _client(
        self, authority: Authority, redirect_uri: str | None, client_id: str | None = None
    ) -> ClientRegistration:
        if self.client_id is None:
            return ClientRegistration(client_id="", token_endpoint_auth_method="none")  # no client authentication
        return super()._client(authority, redirect_uri, client_id)

    def _authenticate_client(
        self,
        client: ClientRegistration,
        metadata: AuthorizationServerMetadata,
        form: dict[str, str],
        headers: dict[str, str],
    ) -> None:
        if client.client_id:
            super()._authenticate_client(client, metadata, form, headers)
