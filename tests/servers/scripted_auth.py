"""A scripted authorization server and protected resource, for the tests of client OAuth.

What ``misbehaving.py`` is to MCP servers, this is to OAuth: a stdlib
``http.server`` on 127.0.0.1 (a free port), in a thread, whose answers each
test scripts.

- :class:`ScriptedServer` answers nothing but what a test scripts with
  :meth:`~ScriptedServer.on` (any other request gets 404), and records every
  request it receives.
- :class:`ScriptedAuth` is a :class:`ScriptedServer` that starts out as a
  working authorization server (RFC 8414 metadata, RFC 7591 registration,
  authorization code with PKCE S256, refresh tokens) *and* a protected MCP
  resource on the same origin (RFC 9728 metadata; ``POST /mcp`` answers
  ``ping`` with bearer tokens it issued, 401 or 403 otherwise). Its
  documents are plain dicts a test changes, and any route can be scripted
  over with :meth:`~ScriptedServer.on`. :meth:`~ScriptedAuth.approve` is the
  person who signs in: it turns an authorization URL into the redirect.

Example::

    with ScriptedAuth() as auth:
        auth.metadata["scopes_supported"] = ["files:read", "offline_access"]
        auth.on("POST", "/register", Reply(400, {"error": "invalid_client_metadata"}))
        ...
        assert [r.path for r in auth.received()] == [...]
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

__all__ = ["Received", "Reply", "ScriptedAuth", "ScriptedServer", "dead_url", "s256"]

_NO_JSON: Any = object()


@dataclass
class Reply:
    """One scripted answer: a status, a JSON document (or raw ``body``) and headers.

    ``hang_up=True`` answers nothing: the server reads the request, records
    it and closes the connection (the client sees it dropped).
    """

    status: int = 200
    json: Any = _NO_JSON
    body: bytes | str = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    hang_up: bool = False

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = dict(self.headers)
        if self.json is not _NO_JSON:
            headers.setdefault("Content-Type", "application/json")
            return json.dumps(self.json).encode(), headers
        return (self.body.encode() if isinstance(self.body, str) else self.body), headers


@dataclass
class Received:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        """A form-encoded body, one value per name."""
        return {name: values[0] for name, values in parse_qs(self.body.decode(), keep_blank_values=True).items()}

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[Received], Reply]


class ScriptedServer:
    """An HTTP server on 127.0.0.1 that answers what each route is scripted to; 404 elsewhere.

    ``tls``: HTTPS with that context, its URL naming the host ``name`` (which
    the test resolves to 127.0.0.1); ``keep_alive``: HTTP/1.1, connections
    kept between requests (else each answer closes its connection).

    ``on(method, path, *answers)``: each request to the route takes the next
    answer, and the last one repeats; an answer is a :class:`Reply` or a
    function of the :class:`Received` request that returns one.
    """

    def __init__(self, *, tls: ssl.SSLContext | None = None, name: str = "127.0.0.1", keep_alive: bool = False) -> None:
        self._routes: dict[tuple[str, str], list[Reply | Handler]] = {}
        self._received: list[Received] = []
        self._lock = threading.Lock()
        scripted = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                request = Received(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                reply = scripted._dispatch(request)
                if reply.hang_up:
                    self.close_connection = True
                    return
                body, headers = reply.encoded()
                self.send_response(reply.status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._http.daemon_threads = True
        if tls is not None:
            self._http.socket = tls.wrap_socket(self._http.socket, server_side=True)
        self.port: int = self._http.server_address[1]
        self.url = f"{'https' if tls is not None else 'http'}://{name}:{self.port}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="scripted-auth")
        self._thread.start()

    def on(self, method: str, path: str, *answers: Reply | Handler) -> None:
        """Script the answers to ``method path`` (replacing any earlier script of it)."""
        with self._lock:
            self._routes[(method.upper(), path)] = list(answers)

    def off(self, method: str, path: str) -> None:
        """Unscript a route: it answers 404 again."""
        with self._lock:
            self._routes.pop((method.upper(), path), None)

    def received(self, path: str | None = None, method: str | None = None) -> list[Received]:
        """The requests received so far (those to ``path``, by ``method``, if given), in order."""
        with self._lock:
            return [
                r
                for r in self._received
                if (path is None or r.path == path) and (method is None or r.method == method.upper())
            ]

    def paths(self) -> list[str]:
        """The paths of every request received, in order."""
        return [r.path for r in self.received()]

    def _dispatch(self, request: Received) -> Reply:
        with self._lock:
            self._received.append(request)
            answers = self._routes.get((request.method, request.path))
            answer = (answers.pop(0) if len(answers) > 1 else answers[0]) if answers else None
        if answer is None:
            return Reply(404, {"error": "not_found"})
        return answer(request) if callable(answer) else answer

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def dead_url() -> str:
    """The URL of a port of 127.0.0.1 on which nothing listens (connections are refused)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of a verifier (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class ScriptedAuth(ScriptedServer):
    """A working authorization server and protected resource on one origin, each part a script to change.

    ``issuer_path`` puts the issuer below the origin (``/tenant1``);
    ``resource_path`` is the MCP endpoint. The documents served are
    :attr:`metadata` and :attr:`resource_metadata`; :attr:`required` are the
    scopes the resource wants; :attr:`grantable` (``None``: any) the scopes
    the authorization server grants; :attr:`issue_refresh` and
    :attr:`expires_in` shape the token responses.
    """

    def __init__(self, *, issuer_path: str = "", resource_path: str = "/mcp", **server: Any) -> None:
        super().__init__(**server)
        self.issuer = self.url + issuer_path
        self.resource_path = resource_path
        self.resource = self.url + resource_path
        self.metadata: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "registration_endpoint": self.url + "/register",
            "code_challenge_methods_supported": ["S256"],
        }
        self.resource_metadata: dict[str, Any] = {"resource": self.resource, "authorization_servers": [self.issuer]}
        self.required: set[str] = set()
        self.grantable: set[str] | None = None
        self.issue_refresh = True
        self.rotate_refresh = True
        self.expires_in: float | None = 3600
        self.send_iss = True
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, str]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        """Access tokens issued and still good: their scope and resource."""
        self.refresh: dict[str, dict[str, Any]] = {}
        self.approved: list[dict[str, str]] = []
        """The query of every authorization request approved."""
        self._serial = itertools.count(1)
        self.on("GET", "/.well-known/oauth-protected-resource" + resource_path.rstrip("/"), self._prm)
        well_known = "/.well-known/oauth-authorization-server" + issuer_path.rstrip("/")
        self.on("GET", well_known, lambda request: Reply(json=self.metadata))
        self.on("POST", "/register", self._register)
        self.on("POST", "/token", self._token)
        self.on("POST", resource_path, self._serve_resource)
        self.on("GET", resource_path, self._serve_resource)

    # ------------------------------------------------------------------ a person

    def approve(self, url: str, **extra: str) -> str:
        """The redirect a person who says yes is sent to: ``code``, ``state`` and (where sent) ``iss``.

        ``extra`` parameters are added to (or replace) those of the redirect.
        """
        query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
        assert query["response_type"] == "code", query
        assert query["code_challenge_method"] == "S256", query
        self.approved.append(query)
        code = f"code-{next(self._serial)}"
        self.codes[code] = query
        answer = {"code": code, "state": query["state"]}
        if self.send_iss:
            answer["iss"] = self.issuer
        answer.update(extra)
        return f"{query['redirect_uri']}?{urlencode({k: v for k, v in answer.items() if v is not None})}"

    # ---------------------------------------------------------------- the routes

    def _prm(self, request: Received) -> Reply:
        return Reply(json=self.resource_metadata)

    def _register(self, request: Received) -> Reply:
        body = request.json
        client_id = f"client-{next(self._serial)}"
        self.clients[client_id] = body
        return Reply(201, {**body, "client_id": client_id})

    def _grant(self, scope: str | None, resource: str | None) -> dict[str, Any]:
        wanted = (scope or "").split()
        granted = [s for s in wanted if self.grantable is None or s in self.grantable]
        serial = next(self._serial)
        access = f"access-{serial}"
        self.access[access] = {"scope": set(granted), "resource": resource}
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer"}
        if granted:
            answer["scope"] = " ".join(granted)
        if self.expires_in is not None:
            answer["expires_in"] = self.expires_in
        if self.issue_refresh:
            refresh = f"refresh-{serial}"
            self.refresh[refresh] = {"scope": scope, "resource": resource}
            answer["refresh_token"] = refresh
        return answer

    def _token(self, request: Received) -> Reply:
        form = request.form
        if form.get("grant_type") == "authorization_code":
            asked = self.codes.pop(form.get("code", ""), None)
            if (
                asked is None
                or asked["redirect_uri"] != form.get("redirect_uri")
                or s256(form.get("code_verifier", "")) != asked["code_challenge"]
            ):
                return Reply(400, {"error": "invalid_grant"})
            return Reply(json=self._grant(asked.get("scope"), form.get("resource")))
        if form.get("grant_type") == "refresh_token":
            kept = self.refresh.get(form.get("refresh_token", ""))
            if kept is None:
                return Reply(400, {"error": "invalid_grant", "error_description": "unknown refresh token"})
            if self.rotate_refresh:
                del self.refresh[form["refresh_token"]]
            answer = self._grant(kept["scope"], form.get("resource"))
            if not self.rotate_refresh:
                answer.pop("refresh_token", None)
            return Reply(json=answer)
        return Reply(400, {"error": "unsupported_grant_type"})

    def challenge(self, error: str | None = None, scope: str | None = None) -> str:
        """The ``WWW-Authenticate`` value of the resource's refusals."""
        params = {
            "error": error,
            "scope": scope,
            "resource_metadata": f"{self.url}/.well-known/oauth-protected-resource{self.resource_path}",
        }
        return "Bearer " + ", ".join(f'{name}="{value}"' for name, value in params.items() if value is not None)

    def _serve_resource(self, request: Received) -> Reply:
        authorization = request.headers.get("authorization", "")
        token = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None
        grant = self.access.get(token or "")
        if grant is None:
            error = "invalid_token" if token else None
            return Reply(
                401, {"error": error or "invalid_request"}, headers={"WWW-Authenticate": self.challenge(error)}
            )
        missing = self.required - grant["scope"]
        if missing:
            scope = " ".join(sorted(self.required))
            return Reply(
                403,
                {"error": "insufficient_scope"},
                headers={"WWW-Authenticate": self.challenge("insufficient_scope", scope)},
            )
        message = json.loads(request.body) if request.body else {}
        return Reply(json={"jsonrpc": "2.0", "id": message.get("id"), "result": {}})

    def revoke(self, access_token: str) -> None:
        """Make the resource refuse an access token from now on."""
        self.access.pop(access_token, None)
