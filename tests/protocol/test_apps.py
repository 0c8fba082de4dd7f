"""The MCP Apps names and rules (:mod:`mcp_sync.protocol.apps`): ``_meta.ui`` of tools and resources, read as the spec
(ext-apps ``specification/2026-01-26/apps.mdx`` and the draft) writes them."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sync.protocol.apps import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    ResourceUI,
    ToolUI,
    client_settings,
    resource_ui,
    supports_apps,
    tool_ui,
    tool_visibility,
    visible_to_app,
    visible_to_model,
)
from mcp_sync.protocol.types import Resource, TextResourceContents, Tool


def tool(meta: dict[str, Any] | None) -> Tool:
    return Tool(name="t", input_schema={"type": "object"}, _meta=meta)


def test_the_names_are_the_specs() -> None:
    assert EXTENSION_ID == "io.modelcontextprotocol/ui"
    assert APP_MIME_TYPE == "text/html;profile=mcp-app"
    assert client_settings() == {"mimeTypes": ["text/html;profile=mcp-app"]}


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (None, None),
        ({"other": 1}, None),
        ({"ui": "not an object"}, None),
        ({"ui": {"visibility": ["app"]}}, None),
        ({"ui": {"resourceUri": 3}}, None),
        ({"ui": {"resourceUri": "ui://a/b.html"}}, ToolUI("ui://a/b.html", ("model", "app"))),
        ({"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}, ToolUI("ui://a", ("app",))),
        ({"ui": {"resourceUri": "ui://a", "visibility": ["model", 7]}}, ToolUI("ui://a", ("model",))),
        ({"ui": {"resourceUri": "ui://a", "visibility": "app"}}, ToolUI("ui://a", ("model", "app"))),
        ({"ui/resourceUri": "ui://old"}, ToolUI("ui://old")),
        ({"ui/resourceUri": "ui://old", "ui": {"resourceUri": "ui://new"}}, ToolUI("ui://new")),
        ({"ui/resourceUri": "ui://old", "ui": {"visibility": ["model"]}}, ToolUI("ui://old", ("model",))),
    ],
)
def test_tool_ui_reads_the_nested_key_then_the_flat_one(meta: dict[str, Any] | None, expected: ToolUI | None) -> None:
    assert tool_ui(tool(meta)) == expected


@pytest.mark.parametrize(
    ("visibility", "model", "app"),
    [
        (None, True, True),
        (["model", "app"], True, True),
        (["app"], False, True),
        (["model"], True, False),
        ([], False, False),
    ],
)
def test_visibility_decides_who_may_call(visibility: list[str] | None, model: bool, app: bool) -> None:
    meta = None if visibility is None else {"ui": {"visibility": visibility}}
    assert (visible_to_model(tool(meta)), visible_to_app(tool(meta))) == (model, app)
    assert tool_visibility(tool(meta)) == (("model", "app") if visibility is None else tuple(visibility))


def test_tool_ui_meta_round_trips_through_a_tool() -> None:
    ui = ToolUI("ui://clock/app.html", ("app",))
    assert tool_ui(tool({"ui": ui.meta()})) == ui
    assert ui.meta() == {"resourceUri": "ui://clock/app.html", "visibility": ["app"]}


def test_resource_ui_writes_only_what_was_declared() -> None:
    assert ResourceUI().meta() == {}
    full = ResourceUI(
        csp={"connectDomains": ("https://a",), "frameDomains": ()},
        permissions=("camera", "clipboardWrite"),
        domain="x.example",
        prefers_border=False,
    )
    assert full.meta() == {
        "csp": {"connectDomains": ["https://a"], "frameDomains": []},
        "permissions": {"camera": {}, "clipboardWrite": {}},
        "domain": "x.example",
        "prefersBorder": False,
    }
    assert ResourceUI.from_meta({"ui": full.meta()}) == full


def test_resource_ui_reads_leniently() -> None:
    meta = {
        "ui": {
            "csp": {"connectDomains": ["https://a", 1], "resourceDomains": "nope", "madeUp": ["x"]},
            "permissions": {"camera": {}, "teleport": {}},
            "domain": 5,
            "prefersBorder": "yes",
        }
    }
    assert ResourceUI.from_meta(meta) == ResourceUI(
        csp={"connectDomains": ("https://a",), "resourceDomains": ()}, permissions=("camera",)
    )
    assert ResourceUI.from_meta({"ui": {"csp": [], "permissions": ["camera"]}}) == ResourceUI()
    assert ResourceUI.from_meta(None) == ResourceUI()


def test_the_content_item_wins_over_the_listing_entry() -> None:
    listing = Resource(uri="ui://a", name="a", _meta={"ui": {"prefersBorder": True}})
    content = TextResourceContents(uri="ui://a", text="<html></html>", _meta={"ui": {"domain": "d"}})
    bare = TextResourceContents(uri="ui://a", text="<html></html>")
    assert resource_ui(content, listing) == ResourceUI(domain="d")
    assert resource_ui(bare, listing) == ResourceUI(prefers_border=True)
    assert resource_ui(bare, None) == ResourceUI()


@pytest.mark.parametrize(
    ("extensions", "expected"),
    [
        (None, False),
        ({}, False),
        ({EXTENSION_ID: {}}, False),
        ({EXTENSION_ID: {"mimeTypes": "text/html;profile=mcp-app"}}, False),
        ({EXTENSION_ID: {"mimeTypes": ["text/html"]}}, False),
        ({EXTENSION_ID: []}, False),
        ({EXTENSION_ID: {"mimeTypes": ["text/html;profile=mcp-app"]}}, True),
    ],
)
def test_a_client_supports_apps_when_it_lists_the_mime_type(extensions: dict[str, Any] | None, expected: bool) -> None:
    assert supports_apps(extensions) is expected
