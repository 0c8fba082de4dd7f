"""Serving MCP Apps (:mod:`mcp_sync.server.apps`) and reading them as a client (:mod:`mcp_sync.client.apps`).

What a client sees of our server, in both eras: the tools' ``_meta.ui``, the
app resource's MIME type and ``_meta.ui`` on its listing entry and on its read
content, the ``io.modelcontextprotocol/ui`` capability, and what
``ctx.client_supports_apps`` says for a client that declares the extension and
one that does not.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from helpers import connect_pair

from mcp_sync import MCP_CODES, MCPClient, MCPError, MCPServer
from mcp_sync.protocol.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceUI, ToolUI
from mcp_sync.server import Context
from mcp_sync.types import BlobResourceContents, ReadResourceResult, TextResourceContents

ERAS = ["handshake", "stateless"]
APP = "ui://clock/app.html"
HTML = "<!doctype html><title>Clock</title><p>now</p>"


def clock_server() -> MCPServer:
    server = MCPServer("clock")
    server.add_app_resource(
        APP,
        html=HTML,
        title="Clock",
        csp={"connectDomains": ["https://api.example.com"], "resource_domains": ["https://cdn.example.com"]},
        permissions=["clipboard_write", "camera"],
        domain="clock.example",
        prefers_border=False,
    )

    @server.tool(ui=APP)
    def now(ctx: Context) -> str:
        """The time."""
        return "12:00" if ctx.client_supports_apps else "It is 12:00 (no app here)."

    @server.tool(ui=APP, visibility=["app"])
    def tick() -> str:
        """Move the clock on; only the app calls it."""
        return "ticked"

    server.register_tool("plain", lambda args, ctx: "plain")
    return server


EXPECTED_UI = {
    "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
    "permissions": {"clipboardWrite": {}, "camera": {}},
    "domain": "clock.example",
    "prefersBorder": False,
}


@pytest.mark.parametrize("era", ERAS)
def test_a_client_sees_the_tools_ui_and_the_resource_as_the_spec_writes_them(era: str) -> None:
    with connect_pair(clock_server(), MCPClient(era=era)) as client:
        assert client.negotiated_era == era
        tools = {tool.name: tool.to_wire() for tool in client.list_tools().tools}
        # Every tool is listed, the app-only one too: the host, not the server, keeps it from the model.
        assert list(tools) == ["now", "tick", "plain"]
        assert tools["now"]["_meta"] == {"ui": {"resourceUri": APP, "visibility": ["model", "app"]}}
        assert tools["tick"]["_meta"] == {"ui": {"resourceUri": APP, "visibility": ["app"]}}
        assert "_meta" not in tools["plain"]

        [listed] = [resource.to_wire() for resource in client.list_resources().resources]
        assert listed == {
            "uri": APP,
            "name": APP,
            "title": "Clock",
            "mimeType": APP_MIME_TYPE,
            "_meta": {"ui": EXPECTED_UI},
        }
        [content] = client.read_resource(APP).to_wire()["contents"]
        assert content == {
            "uri": APP,
            "mimeType": "text/html;profile=mcp-app",
            "text": HTML,
            "_meta": {"ui": EXPECTED_UI},
        }


@pytest.mark.parametrize("era", ERAS)
def test_the_extension_is_advertised_only_by_a_server_with_apps(era: str) -> None:
    with connect_pair(clock_server(), MCPClient(era=era)) as client:
        assert client.server_capabilities.extensions == {EXTENSION_ID: {}}
        answer = client.initialize_result if era == "handshake" else client.discover_result
        assert answer is not None and answer.to_wire()["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    plain = MCPServer("plain")
    plain.register_tool("t", lambda args, ctx: "t")
    with connect_pair(plain, MCPClient(era=era)) as client:
        assert client.server_capabilities.extensions is None


def test_either_declaration_declares_the_extension() -> None:
    resource_only = MCPServer("a")
    resource_only.add_app_resource(APP, html=HTML)
    tool_only = MCPServer("b")
    tool_only.register_tool("t", lambda args, ctx: "t", ui=APP)
    visibility_only = MCPServer("c")
    visibility_only.register_tool("t", lambda args, ctx: "t", visibility=["app"])
    for server in (resource_only, tool_only, visibility_only):
        assert server.extensions == {EXTENSION_ID: {}}
    # An app-only tool without an app of its own says only who may call it.
    assert visibility_only.get_tool("t").meta == {"ui": {"visibility": ["app"]}}  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
def test_ctx_client_supports_apps_follows_what_each_client_declared(era: str) -> None:
    server = clock_server()
    with (
        connect_pair(server, MCPClient(era=era, host_apps=True)) as host,
        connect_pair(server, MCPClient(era=era)) as plain,
    ):
        assert host.capabilities().to_wire()["extensions"][EXTENSION_ID] == {"mimeTypes": ["text/html;profile=mcp-app"]}
        assert EXTENSION_ID not in (plain.capabilities().extensions or {})
        # Asked per request: the same server answers each client by what that client declared.
        assert host.call_tool("now").text == "12:00"
        assert plain.call_tool("now").text == "It is 12:00 (no app here)."
        assert host.call_tool("now").text == "12:00"
    assert server.invoke_tool("now", {}).text == "It is 12:00 (no app here)."  # a local call has no client


@pytest.mark.parametrize("era", ERAS)
def test_app_resource_reads_a_tools_app(era: str) -> None:
    with connect_pair(clock_server(), MCPClient(era=era)) as client:
        app = client.app_resource("now")
        assert (app.uri, app.mime_type, app.html) == (APP, APP_MIME_TYPE, HTML)
        assert app.tool.name == "now" and app.tool_ui == ToolUI(APP)
        assert app.ui.meta() == EXPECTED_UI
        tick = client.tools.find("tick")
        assert tick is not None
        assert client.app_resource(tick).tool_ui == ToolUI(APP, ("app",))
        with pytest.raises(MCPError) as unknown:
            client.app_resource("missing")
        assert unknown.value.code == MCP_CODES.NOT_FOUND
        with pytest.raises(MCPError) as plain:
            client.app_resource("plain")
        assert plain.value.code == MCP_CODES.INVALID_PARAMS


def raw_server(read: Any, listing_meta: dict[str, Any] | None = None) -> MCPServer:
    """A server that declares no extension: its tool's ``_meta`` and its resource are written by hand."""
    server = MCPServer("raw")
    server.register_tool("show", lambda args, ctx: "shown", meta={"ui/resourceUri": "ui://raw/app"})
    server.register_resource("ui://raw/app", read, mime_type=APP_MIME_TYPE, meta=listing_meta)
    assert server.extensions == {}
    return server


def test_app_resource_reads_meta_even_from_a_server_without_the_extension() -> None:
    listing_meta = {"ui": {"prefersBorder": True}}
    server = raw_server(lambda uri, ctx: TextResourceContents(uri=uri, text="<p>raw</p>"), listing_meta)
    with connect_pair(server) as client:
        assert client.server_capabilities.extensions is None
        app = client.app_resource("show")
        # The flat key of earlier drafts names the app; the listing entry's _meta.ui stands in for the content's.
        assert (app.uri, app.html, app.mime_type, app.ui) == (
            "ui://raw/app",
            "<p>raw</p>",
            None,
            ResourceUI(prefers_border=True),
        )


def test_app_resource_decodes_a_blob_and_refuses_what_is_not_the_app() -> None:
    encoded = base64.b64encode(b"<p>caf\xc3\xa9</p>").decode()
    with connect_pair(raw_server(lambda uri, ctx: BlobResourceContents(uri=uri, blob=encoded))) as client:
        assert client.app_resource("show").html == "<p>café</p>"
    latin = base64.b64encode(b"caf\xe9").decode()
    with connect_pair(raw_server(lambda uri, ctx: BlobResourceContents(uri=uri, blob=latin))) as client:
        with pytest.raises(MCPError) as error:
            client.app_resource("show")
        assert error.value.code == MCP_CODES.PROTOCOL_INVALID and "not base64 UTF-8" in error.value.message
    elsewhere = ReadResourceResult(contents=[TextResourceContents(uri="ui://raw/other", text="x")])
    with connect_pair(raw_server(lambda uri, ctx: elsewhere)) as client:
        with pytest.raises(MCPError) as error:
            client.app_resource("show")
        assert error.value.code == MCP_CODES.PROTOCOL_INVALID and "no content at that URI" in error.value.message


def test_an_app_read_from_a_file_is_read_again_at_each_read(tmp_path: Path) -> None:
    page = tmp_path / "app.html"
    page.write_text("<p>one</p>", encoding="utf-8")
    server = MCPServer("files")
    server.add_app_resource("ui://files/app.html", path=page)
    assert server.read_resource("ui://files/app.html").text == "<p>one</p>"
    page.write_text("<p>two</p>", encoding="utf-8")
    content = server.read_resource("ui://files/app.html").contents[0]
    assert (content.text, content.mime_type, content.meta) == ("<p>two</p>", APP_MIME_TYPE, None)  # type: ignore[union-attr]
    assert server.list_resources()[0].meta is None  # nothing declared, nothing written


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda s: s.add_app_resource("https://x/app.html", html=HTML), "starts with ui://"),
        (lambda s: s.add_app_resource(APP), "html= or as path="),
        (lambda s: s.add_app_resource(APP, html=HTML, path="app.html"), "html= or as path="),
        (lambda s: s.add_app_resource(APP, html=HTML, csp={"scriptDomains": []}), "csp keys are connectDomains"),
        (lambda s: s.add_app_resource(APP, html=HTML, permissions=["teleport"]), "app permissions are camera"),
        (lambda s: s.register_tool("t", lambda a, c: "", ui="file:///app.html"), "starts with ui://"),
        (lambda s: s.register_tool("t", lambda a, c: "", ui=APP, visibility=["user"]), "not 'user'"),
        (lambda s: s.register_tool("t", lambda a, c: "", ui=APP, meta={"ui": {}}), "not both"),
    ],
)
def test_what_the_spec_does_not_allow_is_refused_at_declaration(declare: Any, message: str) -> None:
    server = MCPServer("strict")
    with pytest.raises(ValueError, match=message):
        declare(server)
    assert server.extensions == {} and server.list_tools() == [] and server.list_resources() == []


def test_a_missing_file_is_refused_at_declaration(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no app document"):
        MCPServer("files").add_app_resource(APP, path=tmp_path / "missing.html")


def test_visibility_may_be_one_string_and_other_meta_is_kept() -> None:
    server = MCPServer("v")
    tool = server.register_tool("t", lambda args, ctx: "", ui=APP, visibility="model", meta={"other": 1})
    assert tool.meta == {"other": 1, "ui": {"resourceUri": APP, "visibility": ["model"]}}


@pytest.mark.parametrize("era", ERAS)
def test_a_mounted_servers_apps_keep_working_under_the_prefix(era: str) -> None:
    parent = MCPServer("parent")
    parent.mount(clock_server(), "clock")
    legacy = MCPServer("legacy")
    legacy.register_tool("old", lambda args, ctx: "", meta={"ui/resourceUri": "ui://legacy/app", "x": 1})
    legacy.register_tool("bare", lambda args, ctx: "", meta={"x": 2})
    parent.mount(legacy, "legacy")
    assert parent.extensions == {EXTENSION_ID: {}}
    with connect_pair(parent, MCPClient(era=era)) as client:
        tools = {tool.name: tool.meta for tool in client.tools()}
        # The app's URI is mapped as the mount maps the resource's, so that the tool still names it.
        assert tools["clock_now"] == {
            "ui": {"resourceUri": "ui://clock/clock/app.html", "visibility": ["model", "app"]}
        }
        assert tools["legacy_old"] == {"ui/resourceUri": "ui://legacy/legacy/app", "x": 1}
        assert tools["legacy_bare"] == {"x": 2}
        app = client.app_resource("clock_tick")
        assert (app.uri, app.html, app.ui.meta(), app.tool_ui.visibility) == (
            "ui://clock/clock/app.html",
            HTML,
            EXPECTED_UI,
            ("app",),
        )
