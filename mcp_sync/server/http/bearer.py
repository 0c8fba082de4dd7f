"""The bearer-token gate in front of the endpoint, and the Protected Resource Metadata it points clients to.

:class:`BearerGate` checks each request's ``Authorization`` header with the
app's token verifier (401 with a ``WWW-Authenticate`` challenge, 403 for
missing scopes, 400 for a header that holds no token, 503 when the verifier
cannot check now), refuses a request naming a tool, resource or prompt its
token lacks a scope of, and serves the RFC 9728 metadata document at the
well-known URLs that describe the endpoint.

>>> from mcp_sync import MCPServer
>>> gate = BearerGate(MCPServer("demo"), path="/mcp")
>>> gate.authenticate(Request({"HTTP_AUTHORIZATION": "Bearer abc"}))   # no verifier: nobody is checked
(None, None)
"""

from __future__ import annotations

import logging
import math
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ...protocol.jsonrpc import InvalidMessage
from ...protocol.oauth import bearer_challenge, bearer_token, well_formed
from ...protocol.types import JSONRPCMessage, JSONRPCRequest
from ..authorization import AuthInfo
from ..authorization.tokens import (
    InsufficientScope,
    InvalidToken,
    TokenVerifier,
    VerifierUnavailable,
    token_expired,
    token_principal,
    token_scopes,
)
from ..core import MCPServer
from .wire import Request, Response, http_error, json_response

log = logging.getLogger(__name__)

PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"


class BearerGate:
    """Who may use the endpoint: the token verifier, the scopes every token needs, and the metadata naming
    the authorization servers (see :class:`~mcp_sync.server.http.app.StreamableHTTPApp` for the options).

    ``path`` is the endpoint's path (the metadata describes it).
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        path: str,
        token_verifier: TokenVerifier | None = None,
        required_scopes: Sequence[str] = (),
        resource_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if resource_metadata is not None and not isinstance(resource_metadata.get("authorization_servers"), list):
            raise ValueError("resource_metadata needs an 'authorization_servers' list (RFC 9728)")
        self.server = server
        self.path = path
        self.token_verifier = token_verifier
        self.required_scopes = tuple(required_scopes)
        self.resource_metadata = dict(resource_metadata) if resource_metadata is not None else None

    def authenticate(self, request: Request) -> tuple[str | None, Response | None]:
        """The principal of the request's token, or the 401/403 that refuses it; ``request.auth`` set when valid."""
        if self.token_verifier is None:
            return None, None
        token = bearer_token(request.header("Authorization"))
        if token is None:
            return None, self.refuse(request, 401, None, "Missing bearer token")
        if not well_formed(token):  # RFC 6750 section 3.1: a malformed request is 400 invalid_request
            return None, self.refuse(request, 400, "invalid_request", "The Authorization header holds no bearer token")
        try:
            claims = self.token_verifier(token)
        except InsufficientScope as refused:  # a subclass of InvalidToken: first
            needed = " ".join(sorted(set(refused.scope.split()) | set(self.required_scopes)))
            return None, self.refuse(request, 403, refused.error, refused.description, scope=needed)
        except InvalidToken as refused:
            return None, self.refuse(request, 401, refused.error, refused.description)
        except VerifierUnavailable as down:
            # Not the client's fault: no challenge (it would sign in again for nothing), a retry later instead.
            log.warning("cannot verify a bearer token now: %s", down.description)
            body = {"error": "temporarily_unavailable", "error_description": "The token cannot be checked now"}
            return None, json_response(503, body, [("Retry-After", str(math.ceil(down.retry_after or 5)))])
        except Exception as exc:
            # The traceback without the token: a verifier's error may quote what it was given.
            trace = "".join(traceback.format_exception(exc)).replace(token, "[the token]")
            log.error("the token verifier failed: %s", trace)
            claims = None
        # A verifier with a leeway has judged the expiry already; the gate's own check allows the same.
        leeway = float(getattr(self.token_verifier, "leeway", 0.0))
        if claims is None or token_expired(claims, time.time() - leeway):
            return None, self.refuse(request, 401, "invalid_token", "Invalid or expired token")
        missing = set(self.required_scopes) - token_scopes(claims)
        if missing:
            return None, self.refuse(request, 403, "insufficient_scope", f"Missing scopes: {' '.join(sorted(missing))}")
        request.auth = AuthInfo.from_claims(claims)
        return token_principal(claims), None

    def scope_refusal(self, request: Request, message: JSONRPCMessage) -> Response | None:
        """403 ``insufficient_scope`` for a request naming a tool, resource or prompt its token lacks a scope of.

        Answered before the request reaches a session, so in every era and
        whatever the client accepts; the challenge's ``scope`` is every scope
        needed (the item's and ``required_scopes``), what a client steps up to.
        """
        auth = request.auth
        if auth is None or not isinstance(message, JSONRPCRequest):
            return None
        needed = self.server.scopes_for(message.method, message.params or {})
        if auth.allows(needed):
            return None
        missing = " ".join(sorted(needed - auth.scopes))
        scope = " ".join(sorted(needed | set(self.required_scopes)))
        return self.refuse(request, 403, "insufficient_scope", f"Missing scopes: {missing}", scope=scope)

    def batch_scope_refusal(
        self, request: Request, elements: Sequence[JSONRPCMessage | InvalidMessage]
    ) -> Response | None:
        """403 for a batch holding a request its token lacks a scope of: one such request refuses the whole batch."""
        for element in elements:
            refused = self.scope_refusal(request, element) if isinstance(element, JSONRPCRequest) else None
            if refused is not None:
                return refused
        return None

    def refuse(
        self, request: Request, status: int, error: str | None, description: str, scope: str | None = None
    ) -> Response:
        """An OAuth refusal: the status, a ``WWW-Authenticate`` challenge naming the metadata, the error as JSON."""
        value = bearer_challenge(
            error=error,
            error_description=description,
            scope=scope or " ".join(self.required_scopes) or None,
            resource_metadata=self.metadata_url(request),
        )
        body = {"error": error or "invalid_request", "error_description": description}
        return json_response(status, body, [("WWW-Authenticate", value)])

    def resource(self, request: Request) -> str:
        """The resource's URL: the configured ``resource``, else the endpoint's URL under the mount point."""
        assert self.resource_metadata is not None
        resource = self.resource_metadata.get("resource")
        if resource:
            return str(resource)
        # An endpoint at the mount point itself (path "/") is the mount's URL, as clients name it.
        return request.base_url + (self.path.rstrip("/") or ("" if request.environ.get("SCRIPT_NAME") else "/"))

    def metadata_url(self, request: Request) -> str | None:
        """The metadata URL named in challenges.

        With a configured ``resource``, its RFC 9728 well-known URL (whoever
        configured it routes that URL here); else the well-known path under
        the app's own mount point (``SCRIPT_NAME``), which reaches the app
        wherever it is mounted (for an app at the root, the two are the same).
        """
        if self.resource_metadata is None:
            return None
        if self.resource_metadata.get("resource"):
            parts = urlsplit(self.resource(request))
            return f"{parts.scheme}://{parts.netloc}{PROTECTED_RESOURCE_PATH}{parts.path.rstrip('/')}"
        return f"{request.base_url}{PROTECTED_RESOURCE_PATH}{self.path.rstrip('/')}"

    def metadata_resource(self, request: Request) -> str | None:
        """The resource a metadata request is about, or ``None`` when the request is not for metadata.

        Relative to the app, ``/.well-known/oauth-protected-resource`` and
        ``/.well-known/oauth-protected-resource<path>`` describe the app's
        endpoint under its mount point. A request whose full path
        (``SCRIPT_NAME`` + ``PATH_INFO``) is the RFC 9728 well-known URL of a
        resource ending in the endpoint's path (the host routed it here, say
        ``/.well-known/oauth-protected-resource/api/mcp`` for an app mounted
        at ``/api``) describes that resource.
        """
        if self.resource_metadata is None:
            return None
        endpoint = self.path.rstrip("/")
        if request.path in (PROTECTED_RESOURCE_PATH, PROTECTED_RESOURCE_PATH + endpoint):
            return self.resource(request)
        # The raw PATH_INFO: a host that mounts the well-known URL itself passes an empty one (not "/").
        full = str(request.environ.get("SCRIPT_NAME", "")) + str(request.environ.get("PATH_INFO", ""))
        if full.startswith(PROTECTED_RESOURCE_PATH + "/") and full.endswith(endpoint):
            if self.resource_metadata.get("resource"):
                return self.resource(request)
            parts = urlsplit(request.base_url)
            return f"{parts.scheme}://{parts.netloc}{full[len(PROTECTED_RESOURCE_PATH) :]}"
        return None

    def protected_resource(self, request: Request, resource: str) -> Response:
        """The metadata document of ``resource`` (GET only)."""
        if request.method != "GET":
            return http_error(405, f"Method not allowed: {request.method}", Allow="GET")
        assert self.resource_metadata is not None
        document = {**self.resource_metadata, "resource": resource}
        scopes = sorted(set(self.required_scopes) | self.server.all_scopes())
        if scopes:
            document.setdefault("scopes_supported", scopes)
        return json_response(200, document, [("Cache-Control", "max-age=3600")])
