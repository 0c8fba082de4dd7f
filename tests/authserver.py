"""A real OAuth 2.1 / OpenID Connect authorization server for end-to-end tests of client OAuth.

:func:`running_authorization_server` runs ``tests/servers/oidc_server.mjs``:
panva's ``oidc-provider`` from npm (:data:`peers.OIDC_PROVIDER`, installed into
the peers' cache on first use), on a port of 127.0.0.1 that the system picks.
It offers discovery (RFC 8414 and OpenID), open Dynamic Client Registration
(RFC 7591), the authorization code flow with PKCE S256 required, the RFC 9207
``iss`` parameter, resource indicators (RFC 8707) that yield RS256 JWT access
tokens (RFC 9068) whose ``aud`` is the MCP server's URL (or, for the
``opaque_resources``, opaque tokens to introspect), refresh tokens, token
introspection (RFC 7662) and revocation (RFC 7009). The script's header says
what exactly, and how it is configured. :meth:`AuthServer.issue_tokens` runs
the whole code flow for a test that only needs a token.

Things a client must do that this server insists on (oidc-provider's rules):

- send ``resource`` in the authorization request *and* in every token
  request (code and refresh): a token request without it gets an opaque
  token for the userinfo endpoint, not a JWT for the MCP server;
- ask for ``offline_access`` with ``prompt=consent`` (OpenID Connect's
  rule), or no refresh token is issued, and register the ``refresh_token``
  grant;
- if it registers a ``scope``, list in it every scope it will ask for,
  ``openid`` and ``offline_access`` included (the registered scope is an
  allow-list; without one, every supported scope may be asked for);
- use each refresh token once: public clients' refresh tokens rotate, and
  reusing a rotated one is refused (``invalid_grant``).

A native client (``application_type: native``) may use its registered
loopback redirect URI with any port (RFC 8252 section 7.3); a web client's
must match exactly.

Example::

    with running_authorization_server("http://127.0.0.1:8000/mcp", access_ttl=2) as server:
        ...  # register a client at server.metadata["registration_endpoint"], build an authorization URL
        callback = server.approve(authorization_url)  # the redirect URI with code, state and iss
        ...  # exchange the code
        claims = server.verify(access_token)  # raises InvalidToken once it has expired
        tokens = server.issue_tokens(scope="mcp:read mcp:write")  # the token response of a code flow
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import peers
import requests

SCRIPT = Path(__file__).resolve().parent / "servers" / "oidc_server.mjs"
STARTUP_TIMEOUT = 30.0
"""The longest the server may take to print that it listens (seconds); it takes about half a second."""
STOP_TIMEOUT = 10.0
"""The longest the server may take to exit once asked to (seconds), before it is killed."""
HTTP_TIMEOUT = 10.0
"""The longest one HTTP request to the server may take (seconds)."""
MAX_HOPS = 12
"""The most requests :meth:`AuthServer.approve` makes before it gives up (a full login and consent takes 7)."""
USERNAME = "alice"
"""Who logs in by default: the access tokens' ``sub``."""
REDIRECT_URI = "http://127.0.0.1:50123/callback"
"""The redirect URI of the clients :meth:`AuthServer.register` registers (nothing listens there)."""


class InvalidToken(Exception):
    """An access token that a resource server would refuse; the message says why."""


class AuthServer:
    """A running ``oidc-provider``: its issuer, and what a browser and a resource server would do with it."""

    def __init__(
        self,
        issuer: str,
        resources: Sequence[str],
        process: subprocess.Popen[bytes],
        *,
        opaque_resources: Sequence[str] = (),
    ) -> None:
        self.issuer = issuer
        """``http://127.0.0.1:PORT``, without a trailing slash, as in the metadata and the tokens."""
        self.resources = tuple(resources)
        """The resource indicators (MCP server URLs) the server issues JWT access tokens for."""
        self.opaque_resources = tuple(opaque_resources)
        """The resource indicators the server issues opaque access tokens for (to be introspected)."""
        self.process = process
        self._metadata: dict[str, Any] | None = None
        self._jwks: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The server's metadata (``/.well-known/oauth-authorization-server``), fetched once."""
        if self._metadata is None:
            self._metadata = _json(
                requests.get(f"{self.issuer}/.well-known/oauth-authorization-server", timeout=HTTP_TIMEOUT)
            )
        return self._metadata

    def approve(self, authorization_url: str, *, username: str = USERNAME, deny: bool = False) -> str:
        """Do what a user in a browser does with ``authorization_url``; the URL the server sends the browser back to.

        The steps, over plain HTTP with one cookie session (devInteractions, oidc-provider's own pages):

        1. GET the authorization URL: 303 to ``/interaction/UID``.
        2. GET ``/interaction/UID``: 200, the login page, a form posting to the
           same path with ``prompt=login``, ``login`` and ``password``.
        3. POST it with ``login=username`` and any password: 303 to ``/auth/UID``.
        4. GET ``/auth/UID`` (the authorization resumed): 303 to ``/interaction/UID2``.
        5. GET ``/interaction/UID2``: 200, the consent page, a form posting ``prompt=consent``.
        6. POST it: 303 to ``/auth/UID2``.
        7. GET ``/auth/UID2``: 303 to ``REDIRECT_URI?code=...&state=...&iss=...``.

        Any redirect that leaves the issuer ends the walk, and its URL is
        returned without being requested: the success above, or an error
        redirect (``error=...&state=...&iss=...``). With ``deny`` the user
        cancels on the first page instead (GET ``/interaction/UID/abort``),
        which ends at ``REDIRECT_URI?error=access_denied&...``. A page that is
        neither a redirect nor a form (an error the server cannot redirect,
        such as an unregistered redirect URI) raises AssertionError.
        """
        method, url = "GET", authorization_url
        fields: dict[str, str] | None = None
        with requests.Session() as session:
            for _ in range(MAX_HOPS):
                response = session.request(method, url, data=fields, allow_redirects=False, timeout=HTTP_TIMEOUT)
                if response.is_redirect:
                    method, url, fields = "GET", urljoin(url, response.headers["location"]), None
                    if not url.startswith(f"{self.issuer}/"):
                        return url
                    continue
                page = _Page.parse(response.text)
                if response.status_code != 200 or page.form_action is None:
                    raise AssertionError(
                        f"{method} {url} gave {response.status_code}, not a redirect, a login or a consent page:\n"
                        f"{response.text[:2000]}"
                    )
                if deny:
                    abort = next((link for link in page.links if link.endswith("/abort")), None)
                    if abort is None:
                        raise AssertionError(f"the page at {url} has no link to cancel:\n{response.text[:2000]}")
                    method, url, fields = "GET", urljoin(url, abort), None
                    continue
                fields = dict(page.fields)
                if fields.get("prompt") == "login":
                    fields.update(login=username, password="any password")
                method, url = "POST", urljoin(url, page.form_action)
        raise AssertionError(f"{authorization_url} did not come back to the client within {MAX_HOPS} requests")

    def register(self, **metadata: Any) -> dict[str, Any]:
        """Register a client (RFC 7591); its registration, with ``client_secret`` for a confidential one.

        By default a native public client with the code and refresh grants
        and :data:`REDIRECT_URI`; ``metadata`` adds to or replaces that (say
        ``token_endpoint_auth_method="client_secret_basic"`` for a client
        with a secret, which may also introspect).
        """
        body = {
            "application_type": "native",
            "client_name": "mcp-sync test client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = requests.post(self.metadata["registration_endpoint"], json=body, timeout=HTTP_TIMEOUT)
        if response.status_code != 201:
            raise AssertionError(f"registration gave {response.status_code}: {response.text}")
        client: dict[str, Any] = response.json()
        return client

    def issue_tokens(
        self, resource: str | None = None, *, scope: str = "mcp:read", username: str = USERNAME
    ) -> dict[str, Any]:
        """The token response of a whole code flow for ``resource`` (default: the first of :attr:`resources`).

        A fresh public client is registered, the authorization request (PKCE
        S256, ``state``, ``resource``, ``openid`` and ``scope``) approved by
        ``username`` with :meth:`approve`, and the code exchanged (with
        ``resource`` again). The access token is a JWT for one of
        :attr:`resources`, an opaque token for one of :attr:`opaque_resources`.
        AssertionError when any step fails.
        """
        resource = resource if resource is not None else self.resources[0]
        client = self.register()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT_URI,
            "scope": f"openid {scope}",
            "state": state,
            "resource": resource,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        callback = self.approve(f"{self.metadata['authorization_endpoint']}?{urlencode(query)}", username=username)
        params = {name: values[0] for name, values in parse_qs(urlsplit(callback).query).items()}
        if params.get("state") != state or "code" not in params:
            raise AssertionError(f"the authorization did not succeed: {callback}")
        form = {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "client_id": client["client_id"],
            "code_verifier": verifier,
            "resource": resource,
        }
        return _json(requests.post(self.metadata["token_endpoint"], data=form, timeout=HTTP_TIMEOUT))

    def verify(self, token: str) -> dict[str, Any]:
        """Check an access token as the resource server (any of :attr:`resources`) would; its claims.

        The token must be an RS256 JWT of type ``at+jwt`` signed with a key of
        the server's JWKS, from :attr:`issuer`, for one of :attr:`resources`,
        and not expired; the claims then hold ``sub``, ``aud``, ``scope``,
        ``client_id``, ``iat``, ``exp`` and ``jti``. With the Python JOSE
        library ``joserfc`` installed, the check is done here, against the
        JWKS fetched from ``jwks_uri``; without it, by :meth:`verify_at_server`
        (oidc-provider cannot introspect JWT access tokens). Raises
        :class:`InvalidToken` otherwise.
        """
        try:
            import joserfc  # noqa: F401
        except ImportError:
            return self.verify_at_server(token)
        return self.verify_locally(token)

    def verify_locally(self, token: str) -> dict[str, Any]:
        """:meth:`verify` with ``joserfc`` (which must be installed) and the server's published JWKS."""
        from joserfc import jwt
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        if self._jwks is None:
            self._jwks = _json(requests.get(self.metadata["jwks_uri"], timeout=HTTP_TIMEOUT))
        try:
            keys = KeySet.import_key_set(self._jwks)  # type: ignore[arg-type]  # a JWKS as JSON
            decoded = jwt.decode(token, keys, algorithms=["RS256"])
            if decoded.header.get("typ") != "at+jwt":
                raise InvalidToken(f"the token's type is {decoded.header.get('typ')!r}, not 'at+jwt'")
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "values": list(self.resources)},
                exp={"essential": True},
                sub={"essential": True},
            ).validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise InvalidToken(f"{type(exc).__name__}: {exc}") from exc
        claims: dict[str, Any] = dict(decoded.claims)
        # RFC 7519: the current time MUST be before "exp" (joserfc still accepts the second of "exp" itself).
        if claims["exp"] <= time.time():
            raise InvalidToken(f"the token expired at {claims['exp']}")
        return claims

    def verify_at_server(self, token: str) -> dict[str, Any]:
        """:meth:`verify` by the script's ``POST /_test/verify``: JavaScript's ``jose``, in the server's process."""
        response = requests.post(f"{self.issuer}/_test/verify", data={"token": token}, timeout=HTTP_TIMEOUT)
        if response.status_code == 401:
            raise InvalidToken(response.json().get("error_description", response.text))
        claims: dict[str, Any] = _json(response)
        return claims


@contextlib.contextmanager
def running_authorization_server(
    resource: str,
    access_ttl: int = 3600,
    *,
    extra_resources: Sequence[str] = (),
    opaque_resources: Sequence[str] = (),
) -> Iterator[AuthServer]:
    """Run the authorization server for ``resource`` (and ``extra_resources``) until the block ends.

    Access tokens for those are JWTs; for ``opaque_resources``, opaque
    tokens that resource servers introspect.

    Access tokens live ``access_ttl`` seconds (at least 1). Skips the test (or
    fails it, where interop is required) when oidc-provider cannot be
    installed; raises AssertionError, with the server's stderr, when it does
    not start within :data:`STARTUP_TIMEOUT`. The server is stopped (and
    killed if need be) when the block ends, whatever happens in it.
    """
    if access_ttl < 1:
        raise ValueError(f"access_ttl must be at least 1 second, not {access_ttl}")
    node, modules = peers.oidc_provider()
    resources = (resource, *extra_resources)
    argv = [node, str(SCRIPT), "--port", "0", "--access-ttl", str(access_ttl)]
    for each in resources:
        argv += ["--resource", each]
    for each in opaque_resources:
        argv += ["--opaque-resource", each]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=peers.peer_environment({"NODE_PATH": str(modules)}),
        )
        try:
            issuer = _ready(process, stderr)
            yield AuthServer(issuer, resources, process, opaque_resources=opaque_resources)
        finally:
            _stop(process)


def _ready(process: subprocess.Popen[bytes], stderr: IO[bytes]) -> str:
    """The issuer the server prints once it listens; AssertionError if it does not within :data:`STARTUP_TIMEOUT`."""
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT
    output = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in output:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                problem = f"did not say it listens within {STARTUP_TIMEOUT:.0f}s"
                break
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                problem = f"exited with code {process.wait(timeout=STOP_TIMEOUT)} before it listened"
                break
            output += chunk
        else:
            line = output.split(b"\n", 1)[0].decode()
            if line.startswith("listening http://127.0.0.1:"):
                return line.split(" ", 1)[1]
            problem = f"printed {line!r}, not 'listening http://127.0.0.1:PORT'"
    stderr.seek(0)
    log = stderr.read().decode("utf-8", "replace")
    raise AssertionError(f"the authorization server ({SCRIPT.name}) {problem}:\n{log[-4000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server (SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT`) and close its pipe."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()


def _json(response: requests.Response) -> dict[str, Any]:
    """The JSON object of a 200 response; AssertionError, with the body, otherwise."""
    if response.status_code != 200:
        raise AssertionError(f"{response.request.method} {response.url} gave {response.status_code}: {response.text}")
    body: dict[str, Any] = response.json()
    return body


class _Page(HTMLParser):
    """The first form of an HTML page (its action and fields) and its links."""

    def __init__(self) -> None:
        super().__init__()
        self.form_action: str | None = None
        self.fields: list[tuple[str, str]] = []
        self.links: list[str] = []
        self._in_form = False

    @classmethod
    def parse(cls, html: str) -> _Page:
        page = cls()
        page.feed(html)
        page.close()
        return page

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "form" and self.form_action is None:
            self.form_action = attributes.get("action", "")
            self._in_form = True
        elif tag == "input" and self._in_form and attributes.get("name"):
            self.fields.append((attributes["name"], attributes.get("value", "")))
        elif tag == "a" and attributes.get("href"):
            self.links.append(attributes["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
