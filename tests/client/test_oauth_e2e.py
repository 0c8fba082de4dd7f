"""Client OAuth end to end: our client, our protected MCP server and a real authorization server.

Each test runs a protected MCP server (:func:`start_http` on 127.0.0.1, with a
token verifier that checks the access token's signature, issuer, expiry,
``aud`` and scope) and ``oidc-provider`` as its authorization server
(``tests/authserver.py``); the server's protected-resource metadata names it.
Nothing is mocked: discovery, dynamic registration, the code flow with PKCE,
the token and refresh requests all go over HTTP to the real servers.

- Signing in from a script: :class:`LoopbackInteraction` with a robot for a
  browser, which logs in and consents at the authorization server and then
  follows the redirect to the loopback listener, as a browser would.
- Refreshing: 2-second access tokens are refreshed, without a new sign-in,
  when they expire and when the server refuses one the client still thought
  good (a 401 with a stale token).
- Signing in from a web app, in two steps (:meth:`OAuth.begin` and
  :meth:`OAuth.complete`) in two processes sharing a :class:`FileTokenStore`;
  a callback used twice is refused; without an interaction, connecting fails
  at once with ``reason="authorization_required"``.
- ``examples/oauth_web_app.py``: the sign-in begins under gunicorn (two workers),
  which is then stopped, and ends under waitress started in its place: only
  the store carries it across. A person's visit, driven with ``requests``.

Two tests pin bugs found here and fixed: a step-up refused because a
registered scope is an allow-list (the client now registers none), and
tokens refreshed as a newer registration (tokens now remember their client).

The handler of a tool cannot see who called it (no context member carries
the token's claims): that the server knew the caller is shown by what its
token verifier accepted, for the token the client holds.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authserver import AuthServer, InvalidToken, running_authorization_server
from helpers import free_port

import mcp_sync
from mcp_sync import MCPServer
from mcp_sync.client.auth import FileTokenStore, LoopbackInteraction, MemoryTokenStore, OAuth, Tokens
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.server import RunningHTTPServer, start_http

ROOT = Path(__file__).resolve().parents[2]
SCOPES_SUPPORTED = ["mcp:read", "mcp:write"]
REQUIRED_SCOPE = "mcp:read"
"""What our server's verifier insists on (itself, not through ``required_scopes``: the client picks the scopes)."""
CALL_TIMEOUT = 20.0
HTTP_TIMEOUT = 10.0
PROCESS_TIMEOUT = 60.0
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
MOTD = "Welcome to the protected server."

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------ the servers


class TokenCheck:
    """Our MCP server's token verifier: the authorization server's signature, issuer and expiry, then aud and scope.

    Keeps the claims of every token it accepted and why it refused the others.
    """

    def __init__(self) -> None:
        self.authserver: AuthServer | None = None
        self.resource = ""
        self.accepted: list[dict[str, Any]] = []
        self.refused: list[str] = []

    def __call__(self, token: str) -> dict[str, Any] | None:
        assert self.authserver is not None, "a request came before the servers were joined"
        try:
            claims = self.authserver.verify(token)
        except InvalidToken as exc:
            self.refused.append(str(exc))
            return None
        if claims.get("aud") != self.resource:
            self.refused.append(f"aud {claims.get('aud')!r}")
            return None
        if REQUIRED_SCOPE not in str(claims.get("scope", "")).split():
            self.refused.append(f"scope {claims.get('scope')!r}")
            return None
        self.accepted.append(claims)
        return claims


class Protected:
    """A protected MCP server and its authorization server."""

    def __init__(self, running: RunningHTTPServer, authserver: AuthServer, check: TokenCheck) -> None:
        self.running = running
        self.url = running.url
        self.authserver = authserver
        self.check = check

    def claims(self, tokens: Tokens | None) -> dict[str, Any]:
        """The claims of an access token, as the authorization server's keys vouch for them."""
        assert tokens is not None, "no tokens kept"
        return self.authserver.verify(tokens.access_token)


def build_server() -> MCPServer:
    server = MCPServer("protected", "1.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(structured_output=False)
    def motd() -> str:
        """The message of the day."""
        return MOTD

    return server


@contextlib.contextmanager
def protected_servers(count: int, access_ttl: int = 3600) -> Iterator[list[Protected]]:
    """``count`` MCP servers, protected by one fresh authorization server whose access tokens live ``access_ttl`` s."""
    servers = [build_server() for _ in range(count)]
    checks = [TokenCheck() for _ in servers]
    with contextlib.ExitStack() as stack:
        for server in servers:
            stack.callback(server.stop)
        running = [stack.enter_context(start_http(s, token_verifier=c)) for s, c in zip(servers, checks, strict=True)]
        urls = [each.url for each in running]
        authserver = stack.enter_context(
            running_authorization_server(urls[0], access_ttl=access_ttl, extra_resources=urls[1:])
        )
        # The authorization server must know the MCP servers' URLs when it starts, and a URL (its port)
        # is known once its server listens: they are joined here, before any request.
        for each, check in zip(running, checks, strict=True):
            check.authserver, check.resource = authserver, each.url
            each.app.gate.resource_metadata = {
                "authorization_servers": [authserver.issuer],
                "scopes_supported": SCOPES_SUPPORTED,
            }
        yield [Protected(each, authserver, check) for each, check in zip(running, checks, strict=True)]


@contextlib.contextmanager
def protected_server(access_ttl: int = 3600) -> Iterator[Protected]:
    """Our MCP server, protected by a fresh authorization server whose access tokens live ``access_ttl`` seconds."""
    with protected_servers(1, access_ttl) as [protected]:
        yield protected


# ------------------------------------------------------------------ the client's side


class Robot:
    """A person at a browser, for :class:`LoopbackInteraction`: signs in and consents, then follows the redirect."""

    def __init__(self, authserver: AuthServer) -> None:
        self.authserver = authserver
        self.visited: list[str] = []
        self.landed: list[requests.Response] = []

    def __call__(self, url: str) -> None:
        self.visited.append(url)
        callback = self.authserver.approve(url)  # login and consent; the redirect, not yet followed
        self.landed.append(requests.get(callback, timeout=HTTP_TIMEOUT))  # the browser reaches the listener


class Watched(requests.Session):
    """The session OAuth makes its own requests with, noting each registration and each token request's grant."""

    def __init__(self, authserver: AuthServer) -> None:
        super().__init__()
        self.token_endpoint = authserver.metadata["token_endpoint"]
        self.registration_endpoint = authserver.metadata["registration_endpoint"]
        self.grants: list[str] = []
        self.registrations = 0
        self.hooks["response"].append(self._note)

    def _note(self, response: requests.Response, **_: Any) -> None:
        request = response.request
        if request.method != "POST":
            return
        if request.url == self.registration_endpoint:
            self.registrations += 1
        elif request.url == self.token_endpoint:
            body = request.body.decode() if isinstance(request.body, bytes) else str(request.body)
            self.grants.append(parse_qs(body)["grant_type"][0])


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def jti(tokens: Tokens | None) -> str:
    """The ``jti`` of an access token, read without checking it (it may have expired since)."""
    assert tokens is not None, "no tokens kept"
    payload = tokens.access_token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["jti"])


def sleep_until(moment: float) -> None:
    """Return once the clock (``time.time()``) has passed ``moment``."""
    while time.time() <= moment:
        time.sleep(max(0.01, moment - time.time()))


def reason(error: MCPError) -> Any:
    return error.data.get("reason") if isinstance(error.data, dict) else None


# ------------------------------------------------------------------ the loopback sign-in


@pytest.mark.interop
def test_a_script_signs_in_through_the_loopback_listener() -> None:
    with protected_server() as protected:
        robot = Robot(protected.authserver)
        interaction = LoopbackInteraction(browser=robot)
        store = MemoryTokenStore()
        watched = Watched(protected.authserver)
        auth = OAuth(
            interaction=interaction,
            scopes=[REQUIRED_SCOPE],
            token_store=store,
            session=watched,
            interaction_timeout=CALL_TIMEOUT,
        )
        with mcp_sync.connect(protected.url, auth=auth, timeout=CALL_TIMEOUT) as client:
            assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
            assert client.call_tool("motd").text == MOTD
        issuer = protected.authserver.issuer

        # One sign-in, through the listener: the robot's browser landed on it and was told it may close.
        [visited] = robot.visited
        [landed] = robot.landed
        assert landed.status_code == 200 and "Signed in" in landed.text
        assert landed.url.startswith(interaction.redirect_uri + "?")
        request = query_of(visited)
        assert visited.startswith(protected.authserver.metadata["authorization_endpoint"] + "?")
        assert request["redirect_uri"] == interaction.redirect_uri
        assert request["resource"] == protected.url
        assert request["code_challenge_method"] == "S256" and request["state"]
        assert set(request["scope"].split()) == {REQUIRED_SCOPE, "offline_access"}  # the AS offers refresh tokens

        # Dynamic registration, once, kept in the store for the issuer.
        registration = store.load(f"client {issuer}")
        assert registration is not None and watched.registrations == 1
        assert registration["client_id"] == request["client_id"]
        assert registration["redirect_uris"] == [interaction.redirect_uri]
        assert watched.grants == ["authorization_code"]

        # The token is for our server, on alice's behalf, and is what our server accepted on every request.
        tokens = auth.tokens(protected.url)
        claims = protected.claims(tokens)
        assert claims["aud"] == protected.url and claims["iss"] == issuer
        assert claims["sub"] == "alice" and claims["client_id"] == registration["client_id"]
        assert REQUIRED_SCOPE in claims["scope"].split()
        assert tokens is not None and tokens.refresh_token and tokens.issuer == issuer
        assert protected.check.accepted and {c["jti"] for c in protected.check.accepted} == {claims["jti"]}
        assert {c["sub"] for c in protected.check.accepted} == {"alice"}
        assert protected.check.refused == []  # the first request had no token at all: refused before any check


# ------------------------------------------------------------------ refresh


@pytest.mark.interop
def test_expired_and_stale_tokens_are_refreshed_without_signing_in_again() -> None:
    with protected_server(access_ttl=2) as protected:
        robot = Robot(protected.authserver)
        watched = Watched(protected.authserver)
        auth = OAuth(
            interaction=LoopbackInteraction(browser=robot),
            scopes=[REQUIRED_SCOPE, "offline_access"],
            session=watched,
            interaction_timeout=CALL_TIMEOUT,
        )
        with mcp_sync.connect(protected.url, auth=auth, timeout=CALL_TIMEOUT) as client:
            assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
            first = auth.tokens(protected.url)
            assert first is not None and first.refresh_token and first.expires_at is not None
            assert query_of(robot.visited[0])["prompt"] == "consent"  # offline_access needs it at an OpenID server

            # Expiry: the kept token is past its time; the next call refreshes it before it is sent.
            sleep_until(first.expires_at)
            with pytest.raises(InvalidToken, match="exp"):
                protected.claims(first)
            grants, refused = len(watched.grants), len(protected.check.refused)
            assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"
            second = auth.tokens(protected.url)
            assert second is not None and second.access_token != first.access_token
            assert second.refresh_token and second.refresh_token != first.refresh_token  # rotated
            assert watched.grants[grants:] == ["refresh_token"]
            assert len(protected.check.refused) == refused  # the server never saw the expired token
            accepted = protected.check.accepted[-1]
            assert accepted["jti"] == jti(second)

            # A stale token: the client thinks it good for an hour (a skewed clock), the server finds it expired.
            # The 401 brings one refresh, and the call is sent again with the new token.
            key = f"tokens {protected.url}"
            kept = auth.store.load(key)
            assert kept is not None
            auth.store.save(key, {**kept, "expires_at": time.time() + 3600})
            sleep_until(accepted["exp"])
            grants, refused = len(watched.grants), len(protected.check.refused)
            assert client.call_tool("add", {"a": 3, "b": 3}).text == "6"
            third = auth.tokens(protected.url)
            assert third is not None and third.access_token not in (first.access_token, second.access_token)
            assert watched.grants[grants:] == ["refresh_token"]
            assert len(protected.check.refused) == refused + 1
            assert "exp" in protected.check.refused[-1]
            assert protected.check.accepted[-1]["jti"] == jti(third)

        assert len(robot.visited) == 1  # signed in once; every new token after that came from a refresh
        assert watched.grants.count("authorization_code") == 1 and watched.registrations == 1
        assert {c["sub"] for c in protected.check.accepted} == {"alice"}


@pytest.mark.interop
def test_a_step_up_asks_for_the_scope_the_server_wants() -> None:
    """Signed in for ``mcp:read``, the client gets a 403 ``insufficient_scope`` for ``mcp:write``: it signs in again."""
    with protected_server() as protected:
        robot = Robot(protected.authserver)
        auth = OAuth(
            interaction=LoopbackInteraction(browser=robot), scopes=[REQUIRED_SCOPE], interaction_timeout=CALL_TIMEOUT
        )
        with mcp_sync.connect(protected.url, auth=auth, timeout=CALL_TIMEOUT) as client:
            assert client.call_tool("motd").text == MOTD
            protected.running.app.gate.required_scopes = ("mcp:write",)  # the server now wants more
            assert client.call_tool("motd").text == MOTD
        assert len(robot.visited) == 2
        assert {REQUIRED_SCOPE, "mcp:write"} <= set(protected.claims(auth.tokens(protected.url))["scope"].split())


@pytest.mark.interop
def test_tokens_are_refreshed_as_the_client_they_were_issued_to(tmp_path: Path) -> None:
    """Two runs of a script (each with its own loopback port) sign in to two servers of one authorization server.

    The second run's redirect URI differs in its port only, so the registration is reused (RFC 8252); either
    way, the first server's tokens are refreshed as the client they were issued to, without a new sign-in.
    """
    store = FileTokenStore(tmp_path / "store")
    with protected_servers(2, access_ttl=2) as (first, second):
        robot = Robot(first.authserver)

        def run(url: str) -> OAuth:
            interaction = LoopbackInteraction(browser=robot)  # a new process: a new free port
            auth = OAuth(interaction=interaction, scopes=[REQUIRED_SCOPE], token_store=store, interaction_timeout=30)
            with mcp_sync.connect(url, auth=auth, timeout=CALL_TIMEOUT) as client:
                assert client.call_tool("motd").text == MOTD
            return auth

        signed_in = run(first.url).tokens(first.url)
        assert signed_in is not None and signed_in.expires_at is not None
        run(second.url)
        sleep_until(signed_in.expires_at)
        run(first.url)
        assert len(robot.visited) == 2  # one sign-in per server; the first server's tokens were refreshed


# ------------------------------------------------------------------ the web flow, in two steps


BEGIN = """
import sys
from mcp_sync.client.auth import FileTokenStore, OAuth

redirect_uri, directory, server_url = sys.argv[1:]
auth = OAuth(redirect_uri=redirect_uri, token_store=FileTokenStore(directory), interaction=None)
print(auth.begin(server_url))
"""

COMPLETE = """
import sys
import mcp_sync
from mcp_sync.client.auth import FileTokenStore, OAuth

redirect_uri, directory, server_url, callback = sys.argv[1:]
auth = OAuth(redirect_uri=redirect_uri, token_store=FileTokenStore(directory), interaction=None)
auth.complete(callback)
with mcp_sync.connect(server_url, auth=auth, timeout=30) as client:
    print(client.call_tool("add", {"a": 20, "b": 22}).text)
"""


def run_python(code: str, *args: str) -> str:
    """Run ``code`` in a new interpreter; its output (the test fails with its stderr if it fails)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr}"
    return done.stdout


@pytest.mark.interop
def test_the_web_flow_across_two_processes_sharing_a_file_store(tmp_path: Path) -> None:
    directory = str(tmp_path / "store")
    redirect_uri = "http://127.0.0.1:8765/callback"  # the web app's; nothing listens: the test carries the redirect
    with protected_server() as protected:
        issuer = protected.authserver.issuer
        url = run_python(BEGIN, redirect_uri, directory, protected.url).strip()
        state = query_of(url)["state"]
        assert url.startswith(protected.authserver.metadata["authorization_endpoint"] + "?")
        assert query_of(url)["redirect_uri"] == redirect_uri and query_of(url)["resource"] == protected.url
        store = FileTokenStore(directory)
        assert store.load(f"pending {state}") is not None  # what the other process needs to finish
        assert store.load(f"client {issuer}") is not None

        callback = protected.authserver.approve(url)
        assert callback.startswith(redirect_uri + "?") and query_of(callback)["state"] == state

        assert run_python(COMPLETE, redirect_uri, directory, protected.url, callback) == "42\n"
        assert store.load(f"pending {state}") is None  # used up
        auth = OAuth(redirect_uri=redirect_uri, token_store=store, interaction=None)
        claims = protected.claims(auth.tokens(protected.url))
        assert claims["aud"] == protected.url and claims["sub"] == "alice"
        assert protected.check.accepted and protected.check.accepted[-1]["jti"] == claims["jti"]

        # The same callback again, here (a third process): its state was used up, so it is refused.
        with pytest.raises(MCPError) as replayed:
            auth.complete(callback)
        assert replayed.value.code == MCP_CODES.UNAUTHORIZED and reason(replayed.value) == "state_mismatch"
        assert protected.claims(auth.tokens(protected.url))["jti"] == claims["jti"]  # the tokens are untouched


@pytest.mark.interop
def test_a_callback_completes_once() -> None:
    with protected_server() as protected:
        auth = OAuth(redirect_uri="http://127.0.0.1:8765/callback", token_store=MemoryTokenStore(), interaction=None)
        callback = protected.authserver.approve(auth.begin(protected.url))
        tokens = auth.complete(callback)
        assert protected.claims(tokens)["aud"] == protected.url
        with pytest.raises(MCPError) as replayed:
            auth.complete(callback)
        assert replayed.value.code == MCP_CODES.UNAUTHORIZED and reason(replayed.value) == "state_mismatch"
        assert auth.tokens(protected.url) == tokens
        with mcp_sync.connect(protected.url, auth=auth, timeout=CALL_TIMEOUT) as client:
            assert client.call_tool("motd").text == MOTD


@pytest.mark.interop
@pytest.mark.parametrize("redirect_uri", [None, "http://127.0.0.1:8765/callback"], ids=["script", "web app"])
def test_without_an_interaction_connecting_fails_at_once(redirect_uri: str | None) -> None:
    """No one to sign in: the connect fails with ``authorization_required``, not a timeout."""
    with protected_server() as protected:
        store = MemoryTokenStore()
        # Were the flow to wait for a person, it would end in a timeout after these bounds, not in this reason.
        auth = OAuth(redirect_uri=redirect_uri, token_store=store, interaction=None, interaction_timeout=5)
        with pytest.raises(MCPError) as refused:
            mcp_sync.connect(protected.url, auth=auth, timeout=5, connect_timeout=5)
        assert refused.value.code == MCP_CODES.UNAUTHORIZED
        assert reason(refused.value) == "authorization_required"
        assert store.load(f"client {protected.authserver.issuer}") is None  # nothing registered
        assert auth.tokens(protected.url) is None
        assert protected.check.accepted == [] and protected.check.refused == []


# ------------------------------------------------------------------ examples/oauth_web_app.py


def gunicorn(*options: str) -> list[str]:
    """gunicorn with ``options``; without the control socket it opens in ``~/.gunicorn`` since 25.1."""
    major, minor = (int(part) for part in importlib.metadata.version("gunicorn").split(".")[:2])
    quiet = ["--no-control-socket"] if (major, minor) >= (25, 1) else []
    return [sys.executable, "-m", "gunicorn", *quiet, *options]


@contextlib.contextmanager
def hosted(argv: list[str], port: int, log: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server in its own process group until it listens on ``port``; SIGTERM (then SIGKILL) at the end."""
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{argv} did not listen on {port}:\n{log.read_text(errors='replace')}")
                time.sleep(0.05)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT)


@pytest.mark.interop
def test_the_web_app_example_signs_in_across_processes(tmp_path: Path) -> None:
    """A visit to ``examples/oauth_web_app.py``: the sign-in begins in one server and ends in another.

    gunicorn (two workers) serves ``/`` and ``/login`` and is stopped; waitress, started after it on the
    same port, serves the callback and the pages after it. Only the store carries the sign-in across.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = "examples.oauth_web_app:app"
    first = gunicorn("-k", "gthread", "--threads", "4", "-w", "2", "-b", f"127.0.0.1:{port}", app)
    second = [sys.executable, "-m", "waitress", f"--listen=127.0.0.1:{port}", "--threads=4", app]

    def visit(url: str, log: Path) -> requests.Response:
        answer = requests.get(url, allow_redirects=False, timeout=CALL_TIMEOUT)
        assert answer.status_code in (200, 302, 400), f"{url}: {answer.status_code}\n{log.read_text()}"
        return answer

    with protected_server() as protected:
        env = {
            "MCP_SERVER_URL": protected.url,
            "OAUTH_REDIRECT_URI": f"{base}/callback",
            "OAUTH_STORE_DIR": str(tmp_path / "store"),
            "MCP_TOOL": "motd",
        }
        log = tmp_path / "gunicorn.log"
        with hosted(first, port, log, **env):
            home = visit(f"{base}/", log)  # no tokens yet: off to sign in
            assert home.status_code == 302 and home.headers["Location"] in ("/login", f"{base}/login")
            login = visit(f"{base}/login", log)
            assert login.status_code == 302
        authorization_url = login.headers["Location"]
        assert authorization_url.startswith(protected.authserver.metadata["authorization_endpoint"] + "?")
        assert query_of(authorization_url)["redirect_uri"] == f"{base}/callback"
        callback = protected.authserver.approve(authorization_url)  # the person signs in and consents
        assert callback.startswith(f"{base}/callback?")

        log = tmp_path / "waitress.log"
        with hosted(second, port, log, **env):
            back = visit(callback, log)
            assert back.status_code == 302 and back.headers["Location"] in ("/", f"{base}/")
            page = visit(f"{base}/", log)
            assert page.status_code == 200 and MOTD in page.text
            assert visit(f"{base}/", log).status_code == 200  # the kept tokens serve later visits too
            replayed = visit(callback, log)
            assert replayed.status_code == 400 and "Sign-in failed" in replayed.text

        claims = protected.check.accepted[-1]
        assert claims["aud"] == protected.url and claims["sub"] == "alice"
        assert {c["jti"] for c in protected.check.accepted} == {claims["jti"]}  # one sign-in for every call
