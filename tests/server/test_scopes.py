"""Per-item scopes, ``ctx.auth`` and RFC 9728 metadata wherever the app is mounted.

- Registrations carry ``scopes``; the server tells which a request needs
  (:meth:`MCPServer.scopes_for`) and the calls check them against ``ctx.auth``.
- Over HTTP with a token verifier: handlers see the token's facts as
  ``ctx.auth``; a call lacking a scope gets 403 ``insufficient_scope`` naming
  every scope needed, in both eras, the legacy transport and whatever the
  client accepts; listings show what the token may use (``list_all``: all).
- Without anything authenticating the caller (stdio, memory) scopes are not
  checked, unless whoever starts the session sets its ``auth``.
- The metadata: its ``resource`` and URL follow ``SCRIPT_NAME`` (Flask under
  ``DispatcherMiddleware``, a Django-style path prefix), at the root and
  path-based well-known URLs, with ``scopes_supported``.

Every server is real (127.0.0.1); the token verifier is a callable that reads
``subject:scope,scope`` tokens, standing for a real one (the verifiers and
oidc-provider are tested in ``test_verifiers.py`` and ``test_protected_example.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

import mcp_sync
from mcp_sync import Context, MCPServer
from mcp_sync.errors import MCPError
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.server import RunningHTTPServer, StreamableHTTPApp, start_http
from mcp_sync.server.authorization import NO_AUTH, AuthInfo, ScopeRefused
from mcp_sync.server.http.sessions import StreamableSessionTransport
from mcp_sync.server.http.wsgi import WSGIServer
from mcp_sync.transports.memory import InMemoryTransport

TIMEOUT = 20.0
AS = "https://as.example"
HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
BOTH = "application/json, text/event-stream"


def build() -> MCPServer:
    server = MCPServer("scoped", "1.0")

    @server.tool
    def whoami(ctx: Context) -> dict[str, Any]:
        """The caller, as ctx.auth tells."""
        auth = ctx.auth
        assert auth is not None
        return {"subject": auth.subject, "client_id": auth.client_id, "scopes": sorted(auth.scopes)}

    @server.tool(scopes=["admin"])
    def reset() -> str:
        """Needs admin."""
        return "reset"

    server.register_tool("purge", lambda args, ctx: "purged", scopes=["admin", "ops"])

    @server.resource("notes://secret", scopes=["notes"])
    def secret() -> str:
        return "s3cret"

    @server.resource("notes://{name}/private", scopes=["notes"])
    def private(name: str) -> str:
        return f"private {name}"

    @server.resource("notes://public")
    def public() -> str:
        return "hello"

    @server.prompt(scopes=["prompts"])
    def plan(goal: str) -> str:
        return f"Plan {goal}"

    return server


def verify(token: str) -> dict[str, Any]:
    """``subject:scope,scope`` tokens, for client ``cli``."""
    subject, _, scopes = token.partition(":")
    return {"sub": subject, "client_id": "cli", "scope": scopes.replace(",", " "), "exp": time.time() + 3600}


def auth_of(scopes: str) -> AuthInfo:
    return AuthInfo.from_claims({"sub": "alice", "scope": scopes})


# ------------------------------------------------------------------ the server's rules


def test_auth_info_holds_the_facts_and_never_shows_claims() -> None:
    info = AuthInfo.from_claims({"sub": 7, "azp": "app", "scp": ["b", "a"], "exp": True, "secret": "x"})
    assert (info.subject, info.client_id, info.scopes, info.expires_at) == ("7", "app", {"a", "b"}, None)
    assert info.claims["secret"] == "x" and "secret" not in repr(info)
    with pytest.raises(TypeError):
        info.claims["more"] = 1  # type: ignore[index]
    bare = AuthInfo.from_claims({})
    assert (bare.subject, bare.client_id, bare.scopes) == (None, None, frozenset())
    assert NO_AUTH.allows(()) and not NO_AUTH.allows({"a"})


def test_registrations_tell_the_scopes_a_request_needs() -> None:
    server = build()
    assert server.scopes_for("tools/call", {"name": "purge"}) == {"admin", "ops"}
    assert server.scopes_for("tools/call", {"name": "nope"}) == frozenset()
    assert server.scopes_for("prompts/get", {"name": "plan"}) == {"prompts"}
    assert server.scopes_for("prompts/get", {"name": "nope"}) == frozenset()
    assert server.scopes_for("resources/read", {"uri": "notes://secret"}) == {"notes"}
    assert server.scopes_for("resources/read", {"uri": "notes://x/private"}) == {"notes"}
    assert server.scopes_for("resources/read", {"uri": "notes://public"}) == frozenset()
    assert server.scopes_for("resources/read", {"uri": "other://x"}) == frozenset()
    assert server.scopes_for("tools/list", {}) == frozenset()
    assert server.all_scopes() == {"admin", "ops", "notes", "prompts"}
    assert MCPServer("empty").all_scopes() == frozenset()


def test_calls_check_their_scopes_against_the_contexts_auth() -> None:
    server = build()
    reader = Context(server=server, auth=auth_of("read"))
    with pytest.raises(ScopeRefused) as refused:
        server.invoke_tool("purge", {}, context=reader)
    assert refused.value.data == {"error": "insufficient_scope", "scope": "admin ops"}
    assert refused.value.jsonrpc_code == -32001
    for call in (
        lambda: server.read_resource("notes://secret", context=reader),
        lambda: server.read_resource("notes://x/private", context=reader),
        lambda: server.get_prompt("plan", {"goal": "g"}, context=reader),
    ):
        with pytest.raises(ScopeRefused):
            call()
    admin = Context(server=server, auth=auth_of("admin notes prompts"))
    assert server.invoke_tool("reset", {}, context=admin).content[0].text == "reset"  # type: ignore[union-attr]
    assert server.read_resource("notes://x/private", context=admin).text == "private x"  # type: ignore[attr-defined]
    assert server.get_prompt("plan", {"goal": "g"}, context=admin).messages[0].content.text == "Plan g"  # type: ignore[union-attr]
    # Local calls authenticate no one: scopes do not apply.
    assert server.invoke_tool("purge").content[0].text == "purged"  # type: ignore[union-attr]
    assert server.read_resource("notes://secret").text == "s3cret"  # type: ignore[attr-defined]
    assert [t.name for t in server.list_tools(auth_of("read"))] == ["whoami"]
    assert [r.uri for r in server.list_resources(auth_of("notes"))] == ["notes://secret", "notes://public"]
    assert server.list_resource_templates(auth_of("")) == []
    assert server.list_prompts(auth_of("prompts"))[0].name == "plan"


def test_over_memory_scopes_apply_only_once_the_session_knows_its_caller() -> None:
    server = build()
    client_end, server_end = InMemoryTransport.pair()
    session = server.start(server_end)
    client = mcp_sync.MCPClient()
    client.connect(client_end)
    try:
        assert len(client.list_tools().tools) == 3  # nobody authenticated: everything, as over stdio
        assert client.call_tool("purge").content[0].text == "purged"  # type: ignore[union-attr]
        session.auth = auth_of("read")
        assert [t.name for t in client.list_tools().tools] == ["whoami"]
        with pytest.raises(MCPError) as refused:
            client.call_tool("reset")
        assert refused.value.jsonrpc_code == -32001
        assert refused.value.data == {"error": "insufficient_scope", "scope": "admin"}
        assert client.call_tool("whoami").structured_content == {
            "subject": "alice",
            "client_id": None,
            "scopes": ["read"],
        }
        session.list_all = True
        assert len(client.list_tools().tools) == 3
        # A per-request lookup that knows nothing of a request grants no scope.
        session.request_auth = lambda request_id: None
        assert client.call_tool("whoami").structured_content["subject"] is None  # type: ignore[index]
    finally:
        client.close()
        server.stop()


# ------------------------------------------------------------------ over HTTP


@pytest.fixture
def running() -> Iterator[RunningHTTPServer]:
    server = build()
    with start_http(
        server,
        token_verifier=verify,
        required_scopes=["read"],
        resource_metadata={"authorization_servers": [AS]},
    ) as running:
        yield running
    server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Raw:
    """JSON-RPC over raw HTTP, as a handshake-era or 2026-07-28 client."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.headers = {"Accept": BOTH, **bearer(token)}
        self.session_id: str | None = None
        self.next_id = 0

    def handshake(self) -> Raw:
        init = self.post(
            "initialize",
            {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
        self.session_id = init.headers["Mcp-Session-Id"]
        self.headers["MCP-Protocol-Version"] = HANDSHAKE
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        requests.post(self.url, json=note, headers=self._headers(), timeout=TIMEOUT)
        return self

    def _headers(self, **extra: str) -> dict[str, str]:
        headers = dict(self.headers, **extra)
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def post(self, method: str, params: dict[str, Any], **extra: str) -> requests.Response:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return requests.post(self.url, json=body, headers=self._headers(**extra), timeout=TIMEOUT)

    def stateless(self, method: str, params: dict[str, Any], **extra: str) -> requests.Response:
        meta = {PROTOCOL_VERSION: STATELESS, CLIENT_INFO: {"name": "t", "version": "1"}, CLIENT_CAPABILITIES: {}}
        headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": method, **extra}
        named = params.get("name", params.get("uri"))
        if isinstance(named, str):
            headers["Mcp-Name"] = named
        return self.post(method, {**params, "_meta": meta}, **headers)


def assert_step_up(response: requests.Response, scope: str, url: str) -> None:
    assert response.status_code == 403
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"')
    assert f'scope="{scope}"' in challenge
    metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert f'resource_metadata="{metadata}"' in challenge
    assert response.json()["error"] == "insufficient_scope"


def test_handshake_calls_without_the_scope_get_403_naming_every_scope_needed(running: RunningHTTPServer) -> None:
    raw = Raw(running.url, "alice:read").handshake()
    assert_step_up(raw.post("tools/call", {"name": "purge", "arguments": {}}), "admin ops read", running.url)
    assert_step_up(raw.post("resources/read", {"uri": "notes://a/private"}), "notes read", running.url)
    assert_step_up(raw.post("prompts/get", {"name": "plan", "arguments": {"goal": "g"}}), "prompts read", running.url)
    # Whatever the client accepts: refused before anything is streamed.
    only_sse = raw.post("tools/call", {"name": "reset", "arguments": {}}, Accept="text/event-stream")
    assert_step_up(only_sse, "admin read", running.url)
    listed = raw.post("tools/list", {}).json()["result"]["tools"]
    assert [tool["name"] for tool in listed] == ["whoami"]
    whoami = raw.post("tools/call", {"name": "whoami", "arguments": {}}).json()["result"]["structuredContent"]
    assert whoami == {"subject": "alice", "client_id": "cli", "scopes": ["read"]}
    # The same session, a stepped-up token for the same subject: the call goes through.
    raw.headers.update(bearer("alice:read,admin"))
    assert raw.post("tools/call", {"name": "reset", "arguments": {}}).json()["result"]["content"][0]["text"] == "reset"


def test_stateless_era_calls_without_the_scope_get_403(running: RunningHTTPServer) -> None:
    raw = Raw(running.url, "bob:read")
    assert_step_up(raw.stateless("tools/call", {"name": "reset", "arguments": {}}), "admin read", running.url)
    listed = raw.stateless("resources/list", {}).json()["result"]["resources"]
    assert [resource["uri"] for resource in listed] == ["notes://public"]
    assert raw.stateless("resources/templates/list", {}).json()["result"]["resourceTemplates"] == []
    assert raw.stateless("prompts/list", {}).json()["result"]["prompts"] == []
    ok = Raw(running.url, "bob:read,notes")
    assert ok.stateless("resources/read", {"uri": "notes://secret"}).json()["result"]["contents"][0]["text"] == "s3cret"


def test_our_client_in_both_eras_sees_its_callers_auth(running: RunningHTTPServer) -> None:
    for era in ("handshake", "auto"):
        with mcp_sync.connect(running.url, headers=bearer("carol:read,prompts"), era=era, timeout=TIMEOUT) as client:
            assert client.call_tool("whoami").structured_content == {
                "subject": "carol",
                "client_id": "cli",
                "scopes": ["prompts", "read"],
            }
            assert [prompt.name for prompt in client.list_prompts().prompts] == ["plan"]


def test_list_all_shows_everything_and_still_refuses(running: RunningHTTPServer) -> None:
    server = build()
    with start_http(server, token_verifier=verify, list_all=True) as everything:
        raw = Raw(everything.url, "dave:")
        assert len(raw.stateless("tools/list", {}).json()["result"]["tools"]) == 3
        assert len(raw.handshake().post("tools/list", {}).json()["result"]["tools"]) == 3
        refused = raw.post("tools/call", {"name": "reset", "arguments": {}})
        assert refused.status_code == 403 and "resource_metadata" not in refused.headers["WWW-Authenticate"]
    server.stop()


def test_without_a_token_verifier_nobody_is_authenticated_and_scopes_do_not_apply() -> None:
    server = build()
    with start_http(server) as open_app, mcp_sync.connect(open_app.url, era="handshake", timeout=TIMEOUT) as client:
        assert len(client.list_tools().tools) == 3
        assert client.call_tool("reset").text == "reset"
    server.stop()


def test_the_legacy_transport_refuses_and_serves_with_the_streams_token(running: RunningHTTPServer) -> None:
    base = running.url.removesuffix("/mcp")
    with mcp_sync.connect(base + "/sse", headers=bearer("erin:read"), http_transport="sse", timeout=TIMEOUT) as client:
        assert client.call_tool("whoami").structured_content["subject"] == "erin"  # type: ignore[index]
        assert [tool.name for tool in client.list_tools().tools] == ["whoami"]
        with pytest.raises(MCPError):
            client.call_tool("reset")


def test_a_request_no_post_waits_for_has_no_auth() -> None:
    transport = StreamableSessionTransport(event_store=None)
    assert transport.auth_of(1) is None
    post = transport.open_post(1, priming=False, auth=auth_of("x"))
    assert transport.auth_of(1) is post.auth


# ------------------------------------------------------------------ metadata, wherever mounted


def metadata_of(url: str) -> dict[str, Any]:
    response = requests.get(url, timeout=TIMEOUT)
    assert response.status_code == 200, (url, response.status_code, response.text)
    document: dict[str, Any] = response.json()
    return document


def test_metadata_at_the_root(running: RunningHTTPServer) -> None:
    base = running.url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        document = metadata_of(base + path)
        assert document == {
            "authorization_servers": [AS],
            "resource": running.url,
            "scopes_supported": ["admin", "notes", "ops", "prompts", "read"],
        }
    running.app.gate.resource_metadata = {"authorization_servers": [AS], "scopes_supported": ["read"]}
    assert metadata_of(base + "/.well-known/oauth-protected-resource")["scopes_supported"] == ["read"]
    # An app mounted at the root answers for the resources whose well-known URL the host sends it.
    document = metadata_of(base + "/.well-known/oauth-protected-resource/tenant/mcp")
    assert document["resource"] == base + "/tenant/mcp"
    running.app.gate.resource_metadata = {"authorization_servers": [AS], "resource": "https://public.example/api/mcp"}
    assert metadata_of(base + "/.well-known/oauth-protected-resource/api/mcp")["resource"] == (
        "https://public.example/api/mcp"
    )
    refused = requests.post(running.url, json={}, timeout=TIMEOUT)
    assert (
        'resource_metadata="https://public.example/.well-known/oauth-protected-resource/api/mcp"'
        in (refused.headers["WWW-Authenticate"])
    )
    assert requests.get(base + "/.well-known/oauth-protected-resource/other", timeout=TIMEOUT).status_code == 404


def test_no_scopes_anywhere_means_no_scopes_supported() -> None:
    server = MCPServer("plain")
    with start_http(server, token_verifier=verify, resource_metadata={"authorization_servers": [AS]}) as plain:
        document = metadata_of(plain.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        assert document == {"authorization_servers": [AS], "resource": plain.url}


@pytest.fixture
def flask_hosted() -> Iterator[tuple[str, StreamableHTTPApp]]:
    flask = pytest.importorskip("flask")
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    site = flask.Flask("site")
    site.add_url_rule("/", "index", lambda: "the site")
    server = build()
    mcp_app = StreamableHTTPApp(server, token_verifier=verify, resource_metadata={"authorization_servers": [AS]})
    site.wsgi_app = DispatcherMiddleware(  # type: ignore[method-assign]
        site.wsgi_app,
        # the blueprint-like prefix, and its RFC 9728 well-known URL routed to the same app
        {"/api": mcp_app, "/.well-known/oauth-protected-resource/api": mcp_app},
    )
    embedded = WSGIServer(site, "127.0.0.1", 0)
    embedded.on_close(mcp_app.close)
    embedded.start()
    try:
        yield embedded.url, mcp_app
    finally:
        embedded.close()
        server.stop()


def test_metadata_under_a_flask_prefix(flask_hosted: tuple[str, StreamableHTTPApp]) -> None:
    base, _ = flask_hosted
    endpoint = base + "/api/mcp"
    refused = requests.post(endpoint, json={}, timeout=TIMEOUT)
    assert refused.status_code == 401
    named = base + "/api/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{named}"' in refused.headers["WWW-Authenticate"]
    expected = {
        "authorization_servers": [AS],
        "resource": endpoint,
        "scopes_supported": ["admin", "notes", "ops", "prompts"],
    }
    assert metadata_of(named) == expected  # the URL the challenge names
    assert metadata_of(base + "/api/.well-known/oauth-protected-resource") == expected  # root, relative to the app
    assert metadata_of(base + "/.well-known/oauth-protected-resource/api/mcp") == expected  # RFC 9728's own URL
    assert requests.get(base + "/", timeout=TIMEOUT).text == "the site"
    with mcp_sync.connect(endpoint, headers=bearer("fay:admin"), timeout=TIMEOUT) as client:
        assert client.call_tool("reset").text == "reset"


@pytest.fixture
def django_hosted() -> Iterator[str]:
    pytest.importorskip("django")
    from django.conf import settings

    if not settings.configured:
        settings.configure(ALLOWED_HOSTS=["127.0.0.1"], ROOT_URLCONF=__name__, INSTALLED_APPS=[], DATABASES={})
    from django.core.wsgi import get_wsgi_application

    django_application = get_wsgi_application()
    server = build()
    # As examples/django_app.py mounts it: the app's endpoint is its mount point.
    mcp_app = StreamableHTTPApp(
        server, path="/", token_verifier=verify, resource_metadata={"authorization_servers": [AS]}
    )
    mount = "/tools/mcp"

    def application(environ: dict[str, Any], start_response: Any) -> Any:
        path_info: str = environ.get("PATH_INFO", "")
        if path_info == mount or path_info.startswith(mount + "/"):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + mount
            environ["PATH_INFO"] = path_info[len(mount) :]
            return mcp_app(environ, start_response)
        return django_application(environ, start_response)

    embedded = WSGIServer(application, "127.0.0.1", 0)
    embedded.on_close(mcp_app.close)
    embedded.start()
    try:
        yield embedded.url
    finally:
        embedded.close()
        server.stop()


urlpatterns: list[Any] = []
"""Django's URLconf for the fixture above: Django serves nothing itself here."""


def test_metadata_under_a_django_path(django_hosted: str) -> None:
    endpoint = django_hosted + "/tools/mcp"
    refused = requests.post(endpoint, json={}, timeout=TIMEOUT)
    named = endpoint + "/.well-known/oauth-protected-resource"
    assert f'resource_metadata="{named}"' in refused.headers["WWW-Authenticate"]
    assert metadata_of(named)["resource"] == endpoint
    assert requests.get(django_hosted + "/elsewhere", timeout=TIMEOUT).status_code == 404  # Django's own answer
    with mcp_sync.connect(endpoint, headers=bearer("gus:notes"), timeout=TIMEOUT) as client:
        assert client.read_resource("notes://secret").text == "s3cret"
