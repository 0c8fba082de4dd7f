"""What the authorization flow reads and keeps: server metadata, client registrations, tokens, pending sign-ins.

Metadata documents are read leniently (unknown fields are kept and ignored);
what the flow keeps is a plain JSON object, so any :class:`~.stores.TokenStore`
can hold it.
"""

from __future__ import annotations

import math
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "AuthorizationServerMetadata",
    "ClientRegistration",
    "PendingAuthorization",
    "ProtectedResourceMetadata",
    "Tokens",
]


class _Document(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ProtectedResourceMetadata(_Document):
    """RFC 9728: where a resource server says which authorization servers it trusts."""

    resource: str | None = None
    authorization_servers: list[str] = Field(default_factory=list)
    scopes_supported: list[str] | None = None


class AuthorizationServerMetadata(_Document):
    """RFC 8414 (or OpenID discovery): the authorization server's endpoints and what it supports."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    authorization_response_iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False


class ClientRegistration(_Document):
    """This client as one authorization server knows it: pre-registered, a metadata document, or registered."""

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str = "none"
    redirect_uris: list[str] | None = None
    issuer: str | None = None
    """The authorization server that issued it: a registration is never shown to another one."""


class Tokens(_Document):
    """A token response (RFC 6749 section 5.1), with the time it expires."""

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_in: float | None = None
    expires_at: float | None = None
    issuer: str | None = None
    """The authorization server that issued them."""
    client_id: str | None = None
    """The client they were issued to (a refresh must come from it)."""
    resource_metadata: str | None = None
    """Where the server's challenge said its metadata is (a refresh looks there first)."""

    @field_validator("expires_in")
    @classmethod
    def _lifetime(cls, value: float | None) -> float | None:
        """A lifetime that is not a positive number (negative, NaN, infinite) is no lifetime: unknown."""
        return value if value is not None and math.isfinite(value) and value > 0 else None

    def stamped(self, issuer: str, requested_scope: str | None, client_id: str) -> Tokens:
        """These tokens as kept: with their expiry time, issuer, client and scope (the one asked for, if unsaid)."""
        expires_at = time.time() + self.expires_in if self.expires_in is not None else None
        scope = self.scope or requested_scope
        return self.model_copy(
            update={"expires_at": expires_at, "issuer": issuer, "scope": scope, "client_id": client_id}
        )

    def expiring(self, margin: float = 30.0) -> bool:
        """Whether they expire within ``margin`` seconds (or a tenth of their lifetime, if that is shorter)."""
        if self.expires_at is None:
            return False
        lifetime = self.expires_in or margin
        return self.expires_at - time.time() <= min(margin, lifetime / 10)

    @property
    def scopes(self) -> set[str]:
        """The scopes granted."""
        return set((self.scope or "").split())


class PendingAuthorization(_Document):
    """A sign-in under way: what :meth:`~.oauth.OAuth.complete` needs to finish it, kept under its ``state``."""

    state: str
    code_verifier: str
    redirect_uri: str
    server_url: str
    resource: str
    issuer: str
    scope: str | None = None
    client_id: str | None = None
    """The client the authorization request named: the code is exchanged by it."""
    resource_metadata: str | None = None
    """Where the server's challenge said its metadata is."""
    created_at: float = Field(default_factory=time.time)


def as_json(model: BaseModel) -> dict[str, Any]:
    """A model as the plain JSON object a store keeps (``None`` fields left out)."""
    return model.model_dump(mode="json", exclude_none=True)
