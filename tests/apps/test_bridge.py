"""AppBridge, message by message, against a real in-memory MCPServer.

The app's side is played by the test: it hands the bridge JSON-RPC messages
(as a carrier would) and reads what the bridge delivers to it.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sync import MCPServer, connect
from mcp_sync.apps import AppBridge, AppError
from mcp_sync.apps.policy import allow_attribute, checked_csp, content_security_policy
from mcp_sync.client import MCPClient
from mcp_sync.client.apps import AppResource
from mcp_sync.errors import MCPError
from mcp_sync.protocol.apps import APP_MIME_TYPE, ResourceUI, ToolUI
from mcp_sync.types import CallToolResult, TextContent, Tool

WAIT = 10.0
APP_URI = "ui://clock/app.html"
HTML = "<!doctype html><html><body>clock</body></html>"
UI_META = {
    "csp": {"connectDomains": ["https://api.example.com", "javascript:alert(1)"], "resourceDomains": "https://cdn.x"},
    "permissions": {"camera": {}, "geolocation": {}, "teleport": {}},
    "prefersBorder": False,
    "domain": "clock.example",
}


def make_server() -> tuple[MCPServer, list[str]]:
    """A server with an app, tools of each visibility, and resources in each form; the calls it got."""
    server = MCPServer("clock-server", "1.0")
    calls: list[str] = []

    def tool(name: str, meta: dict[str, Any] | None) -> None:
        def handler(arguments: dict[str, Any], ctx: Any) -> CallToolResult:
            calls.append(name)
            structured = {"tool": name, "arguments": arguments}
            return CallToolResult(content=[TextContent(text=json.dumps(structured))], structured_content=structured)

        server.register_tool(name, handler, meta=meta, input_schema={"type": "object"})

    tool("show_time", {"ui": {"resourceUri": APP_URI}})
    tool("refresh", {"ui": {"resourceUri": APP_URI, "visibility": ["app"]}})
    tool("secret", {"ui": {"resourceUri": APP_URI, "visibility": ["model"]}})
    tool("flat", {"ui/resourceUri": "ui://clock/blob.html"})
    tool("plain", None)
    tool("listed_only", {"ui": {"resourceUri": "ui://clock/listed.html"}})
    tool("not_html", {"ui": {"resourceUri": "ui://clock/data.json"}})
    tool("bad_blob", {"ui": {"resourceUri": "ui://clock/bad.html"}})
    server.register_resource(APP_URI, lambda uri, ctx: HTML, mime_type=APP_MIME_TYPE, meta={"ui": UI_META})
    server.register_resource("ui://clock/blob.html", lambda uri, ctx: HTML.encode(), mime_type=APP_MIME_TYPE)
    server.register_resource(
        "ui://clock/listed.html", lambda uri, ctx: HTML, mime_type=APP_MIME_TYPE, meta={"ui": {"prefersBorder": True}}
    )
    server.register_resource("ui://clock/data.json", lambda uri, ctx: "{}", mime_type="application/json")
    server.register_resource("ui://clock/bad.html", lambda uri, ctx: b"\xff\xfe", mime_type=APP_MIME_TYPE)
    server.register_resource_template("notes://{name}", lambda uri, params, ctx: params["name"], name="note")
    return server, calls


class App:
    """The app's end: what the bridge delivers, and the messages it is handed."""

    def __init__(self, bridge: AppBridge) -> None:
        self.bridge = bridge
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notes: list[dict[str, Any]] = []
        self.ids = itertools.count(100)
        bridge.attach(self.inbox.put)

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        ident = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.bridge.receive(message)
        while True:
            got = self.inbox.get(timeout=WAIT)
            if got.get("id") == ident and "method" not in got:
                return got
            self.notes.append(got)

    def result(self, method: str, params: Any = None) -> Any:
        answer = self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        answer = self.request(method, params)
        assert "error" in answer, answer
        error: dict[str, Any] = answer["error"]
        return error

    def notify(self, method: str, params: Any = None) -> None:
        self.bridge.receive({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def next(self) -> dict[str, Any]:
        return self.notes.pop(0) if self.notes else self.inbox.get(timeout=WAIT)

    def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = self.result(
            "ui/initialize", {"appInfo": {"name": "clock", "version": "1"}, "appCapabilities": {}}
        )
        self.notify("ui/notifications/initialized")
        return result


@pytest.fixture
def served() -> Iterator[tuple[MCPClient, list[str], MCPServer]]:
    server, calls = make_server()
    with connect(server, era="handshake") as client:
        yield client, calls, server


@pytest.fixture
def client(served: tuple[MCPClient, list[str], MCPServer]) -> MCPClient:
    return served[0]


@pytest.fixture
def opened() -> list[str]:
    """The links the bridge of :func:`bridge` opened."""
    return []


@pytest.fixture
def bridge(client: MCPClient, opened: list[str]) -> Iterator[AppBridge]:
    permissions = ["camera", "microphone"]
    bridge = AppBridge(client, "show_time", {"zone": "UTC"}, permissions=permissions, on_open_link=opened.append)
    yield bridge
    bridge.close()


def test_initialize_answers_host_info_true_capabilities_and_context(client: MCPClient, bridge: AppBridge) -> None:
    bridge.update_context({"theme": "dark", "containerDimensions": {"width": 640}, "bogus": 1})
    app = App(bridge)
    result = app.result("ui/initialize", {"appInfo": {"name": "clock", "version": "1"}, "appCapabilities": {"a": 1}})
    assert result["protocolVersion"] == "2026-01-26"
    assert result["hostInfo"] == client.info.to_wire()
    capabilities = result["hostCapabilities"]
    # The granted permissions are those asked for AND allowed; the CSP holds origins only.
    # (resourceDomains, a string where a list belongs, declares nothing)
    assert capabilities["sandbox"] == {
        "permissions": {"camera": {}},
        "csp": {"connectDomains": ["https://api.example.com"]},
    }
    assert capabilities["serverTools"] == {"listChanged": True}
    assert capabilities["serverResources"] == {"listChanged": True}
    assert capabilities["openLinks"] == {} and capabilities["logging"] == {}
    assert "text" in capabilities["message"] and "structuredContent" in capabilities["updateModelContext"]
    context = result["hostContext"]
    assert context["toolInfo"]["tool"]["name"] == "show_time"
    assert context["theme"] == "dark" and "bogus" not in context
    assert context["displayMode"] == "inline" and context["availableDisplayModes"] == ["inline"]
    assert context["containerDimensions"] == {"width": 640} and context["locale"] == "en-US"
    assert bridge.app_info == {"name": "clock", "version": "1"} and bridge.app_capabilities == {"a": 1}
    assert app.inbox.empty()  # a context change before ui/initialize is in its answer, not a notification


def test_nothing_is_sent_before_initialized_then_input_and_result_in_order(
    client: MCPClient, bridge: AppBridge
) -> None:
    app = App(bridge)
    bridge.deliver_result(client.call_tool("show_time", {"zone": "UTC"}))
    bridge.cancel("too late")
    app.result("ui/initialize", {})
    bridge.update_context({"theme": "dark"})  # after the answer, before initialized: held too
    assert app.inbox.empty() and not bridge.initialized.is_set()
    app.notify("ui/notifications/initialized")
    assert app.next() == {
        "jsonrpc": "2.0",
        "method": "ui/notifications/tool-input",
        "params": {"arguments": {"zone": "UTC"}},
    }
    result = app.next()
    assert result["method"] == "ui/notifications/tool-result"
    assert result["params"]["structuredContent"] == {"tool": "show_time", "arguments": {"zone": "UTC"}}
    assert app.next()["method"] == "ui/notifications/tool-cancelled"
    assert app.next() == {
        "jsonrpc": "2.0",
        "method": "ui/notifications/host-context-changed",
        "params": {"theme": "dark"},
    }
    # Once initialized, a change goes at once, with the changed fields only.
    bridge.update_context({"theme": "dark", "locale": "fr-FR"})
    assert app.next()["params"] == {"locale": "fr-FR"}
    bridge.update_context({"locale": "fr-FR"})
    assert bridge.context["locale"] == "fr-FR" and app.inbox.empty()


def test_tools_call_reaches_the_server_only_for_tools_visible_to_the_app(
    served: tuple[MCPClient, list[str], MCPServer], bridge: AppBridge
) -> None:
    calls = served[1]
    app = App(bridge)
    app.initialize()
    assert app.result("tools/call", {"name": "refresh", "arguments": {"n": 1}})["structuredContent"] == {
        "tool": "refresh",
        "arguments": {"n": 1},
    }
    assert app.result("tools/call", {"name": "show_time"})["structuredContent"]["tool"] == "show_time"
    for name in ("secret", "nowhere", 7):
        error = app.error("tools/call", {"name": name})
        assert error["code"] == -32000 and "may call" in error["message"]
    assert calls == ["refresh", "show_time"]  # the refused calls never reached the server
    listed = [tool["name"] for tool in app.result("tools/list")["tools"]]
    assert "secret" not in listed and {"show_time", "refresh", "plain"} <= set(listed)


def test_resources_read_and_lists_go_to_the_server(bridge: AppBridge) -> None:
    app = App(bridge)
    assert app.result("ui/message", {"role": "user", "content": []}) == {}  # kept, with no one else to tell
    assert app.result("resources/read", {"uri": APP_URI})["contents"][0]["text"] == HTML
    assert APP_URI in [entry["uri"] for entry in app.result("resources/list", {})["resources"]]
    templates = app.result("resources/templates/list")["resourceTemplates"]
    assert [template["uriTemplate"] for template in templates] == ["notes://{name}"]
    assert app.error("resources/read", {})["code"] == -32602
    missing = app.error("resources/read", {"uri": "ui://clock/missing.html"})  # the server's own refusal, passed on
    assert missing["code"] != -32603 and "missing" in missing["message"]


def test_open_link_takes_http_and_https_only(client: MCPClient, bridge: AppBridge, opened: list[str]) -> None:
    app = App(bridge)
    assert app.result("ui/open-link", {"url": "https://example.com/a?b=c"}) == {}
    assert app.result("ui/open-link", {"url": "http://127.0.0.1:9/"}) == {}
    for url in (
        "javascript:alert(document.domain)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,x",
        "file:///etc/passwd",
        "https:",
        42,
        None,
    ):
        assert app.error("ui/open-link", {"url": url})["code"] == -32000
    assert opened == ["https://example.com/a?b=c", "http://127.0.0.1:9/"]
    without = AppBridge(client, "show_time")
    try:
        other = App(without)
        assert "openLinks" not in other.result("ui/initialize", {})["hostCapabilities"]
        assert other.error("ui/open-link", {"url": "https://example.com"})["code"] == -32601
    finally:
        without.close()


def test_message_model_context_display_mode_and_ping_are_kept_and_answered(client: MCPClient) -> None:
    seen: list[dict[str, Any]] = []
    bridge = AppBridge(client, "show_time", on_message=seen.append)
    try:
        app = App(bridge)
        assert bridge.last_message is None
        first = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        second = {"role": "user", "content": [{"type": "text", "text": "again"}]}
        assert app.result("ui/message", first) == {} and app.result("ui/message", second) == {}
        assert bridge.messages == [first, second] and bridge.last_message == second and seen == [first, second]
        context = {"content": [{"type": "text", "text": "picked 3"}], "structuredContent": {"n": 3}}
        assert app.result("ui/update-model-context", context) == {}
        assert app.result("ui/update-model-context", {"structuredContent": {"n": 4}}) == {}
        assert bridge.model_context == {"structuredContent": {"n": 4}}  # each update replaces the last
        assert app.result("ui/request-display-mode", {"mode": "fullscreen"}) == {"mode": "inline"}
        assert app.result("ping") == {}
    finally:
        bridge.close()


def test_notifications_log_resize_and_ask_for_teardown(bridge: AppBridge, caplog: pytest.LogCaptureFixture) -> None:
    app = App(bridge)
    caplog.set_level(logging.DEBUG, logger="mcp_sync.apps.bridge")
    for level in ("debug", "info", "notice", "warning", "error", "critical", "emergency"):
        app.notify("notifications/message", {"level": level, "logger": "ui", "data": f"said {level}"})
    app.notify("notifications/message", {"level": "error", "data": {"n": 1}})
    logged = [(record.levelname, record.getMessage()) for record in caplog.records if "said" in record.getMessage()]
    assert logged == [
        ("DEBUG", "app show_time (ui): said debug"),
        ("INFO", "app show_time (ui): said info"),
        ("INFO", "app show_time (ui): said notice"),
        ("WARNING", "app show_time (ui): said warning"),
        ("ERROR", "app show_time (ui): said error"),
        ("CRITICAL", "app show_time (ui): said critical"),
        ("CRITICAL", "app show_time (ui): said emergency"),
    ]
    assert "app show_time (app): {'n': 1}" in caplog.text
    app.notify("ui/notifications/size-changed", {"width": 300, "height": 420, "extra": 1})
    assert bridge.size == {"width": 300, "height": 420}
    app.notify("ui/notifications/something-else")
    assert not bridge.teardown_requested.is_set()
    app.notify("ui/notifications/request-teardown")
    assert bridge.teardown_requested.is_set()


def test_teardown_asks_the_app_and_waits_for_its_answer(client: MCPClient) -> None:
    uninitialized = AppBridge(client, "show_time")
    waiting = App(uninitialized)
    assert uninitialized.teardown("bye", timeout=WAIT) is False  # never initialized: nothing may be sent
    assert waiting.inbox.empty() and uninitialized.closed.is_set()

    bridge = AppBridge(client, "show_time")
    app = App(bridge)
    app.initialize()
    app.next()  # tool-input
    answered: list[bool] = []
    thread = threading.Thread(target=lambda: answered.append(bridge.teardown("the host is closing", timeout=WAIT)))
    thread.start()
    request = app.next()
    assert request["method"] == "ui/resource-teardown" and request["params"] == {"reason": "the host is closing"}
    bridge.receive({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    thread.join(WAIT)
    assert answered == [True] and bridge.closed.is_set()
    bridge.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # after close: ignored, nothing delivered
    bridge.deliver_result(client.call_tool("show_time"))
    assert app.inbox.empty()


def test_teardown_answered_with_an_error_was_heard(client: MCPClient) -> None:
    # An app built on the official App class without an onteardown handler answers the request with an error.
    bridge = AppBridge(client, "show_time")
    app = App(bridge)
    app.initialize()
    app.next()  # tool-input
    answered: list[bool] = []
    thread = threading.Thread(target=lambda: answered.append(bridge.teardown("the host is closing", timeout=WAIT)))
    thread.start()
    request = app.next()
    assert request["method"] == "ui/resource-teardown"
    bridge.receive({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "No onteardown"}})
    thread.join(WAIT)
    assert answered == [True] and bridge.closed.is_set()


def test_teardown_of_an_app_that_does_not_answer_ends_after_the_timeout(client: MCPClient) -> None:
    bridge = AppBridge(client, "show_time")
    app = App(bridge)
    app.initialize()
    assert bridge.teardown("bye", timeout=0.2) is False
    assert app.next()["method"] == "ui/notifications/tool-input"
    assert app.next()["method"] == "ui/resource-teardown"
    bridge.close()  # a second close does nothing


def test_list_changes_are_forwarded_after_initialized(
    served: tuple[MCPClient, list[str], MCPServer], bridge: AppBridge
) -> None:
    server = served[2]
    app = App(bridge)
    app.initialize()
    assert app.next()["method"] == "ui/notifications/tool-input"
    server.register_tool("later", lambda arguments, ctx: "x")
    assert app.next()["method"] == "notifications/tools/list_changed"


def test_malformed_messages_are_refused_or_ignored(bridge: AppBridge, caplog: pytest.LogCaptureFixture) -> None:
    app = App(bridge)
    bridge.receive("not a message")
    bridge.receive({"id": 1, "method": "ping"})  # no jsonrpc
    bridge.receive({"jsonrpc": "2.0", "id": 5})  # an answer to no request of ours
    bridge.receive({"jsonrpc": "2.0", "id": "x", "result": {}})
    bridge.receive({"jsonrpc": "2.0", "params": {}})  # neither method nor id
    assert app.error("ping", ["not", "an", "object"])["code"] == -32602
    assert app.error("sampling/createMessage", {})["code"] == -32601
    assert app.error("ui/download-file", {})["code"] == -32601
    assert "not a JSON-RPC 2.0 message" in caplog.text and "without a method" in caplog.text


def test_a_failing_callback_is_an_internal_error(client: MCPClient) -> None:
    def broken(params: dict[str, Any]) -> None:
        raise ValueError("no chat here")

    bridge = AppBridge(client, "show_time", on_message=broken)
    try:
        error = App(bridge).error("ui/message", {"role": "user", "content": []})
        assert error == {"code": -32603, "message": "ValueError: no chat here"}
    finally:
        bridge.close()


def test_without_a_carrier_nothing_is_sent(client: MCPClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync.apps.bridge")
    bridge = AppBridge(client, "show_time")
    try:
        bridge.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        bridge.close()
        assert "not sent" in caplog.text
    finally:
        bridge.close()


def test_the_stateless_era_offers_no_list_changes() -> None:
    server, _ = make_server()
    with connect(server, era="stateless") as client:
        bridge = AppBridge(client, client.tools.find("show_time") or "show_time")
        try:
            capabilities = App(bridge).result("ui/initialize", {})["hostCapabilities"]
            assert capabilities["serverTools"] == {"listChanged": False}
        finally:
            bridge.close()


def test_an_app_given_needs_no_listing() -> None:
    with connect(MCPServer("bare")) as client:
        tool = Tool(name="x", input_schema={}, _meta={"ui": {"resourceUri": "ui://x"}})
        app = AppResource(tool=tool, tool_ui=ToolUI("ui://x"), uri="ui://x", mime_type=None, html=HTML, ui=ResourceUI())
        bridge = AppBridge(client, app)
        try:
            result = App(bridge).result("ui/initialize", {})
            assert result["hostContext"]["toolInfo"]["tool"]["name"] == "x"
            assert result["hostCapabilities"]["sandbox"] == {"permissions": {}, "csp": {}}
        finally:
            bridge.close()


def test_the_app_is_read_through_the_client(client: MCPClient) -> None:
    blob = AppBridge(client, "flat")  # the older flat key; the HTML as a base64 blob
    listed = AppBridge(client, "listed_only")  # _meta.ui on the listing entry only
    try:
        assert blob.resource.uri == "ui://clock/blob.html" and blob.resource.html == HTML
        assert listed.resource.ui.prefers_border is True and listed.csp == {} and listed.granted == frozenset()
    finally:
        blob.close()
        listed.close()


@pytest.mark.parametrize(
    ("tool", "error", "problem"),
    [
        ("nowhere", MCPError, "no tool 'nowhere'"),
        ("plain", MCPError, "tool 'plain' has no app"),
        ("not_html", AppError, "ui://clock/data.json is application/json, not text/html;profile=mcp-app"),
        ("bad_blob", MCPError, "the app's blob is not base64 UTF-8 text"),
    ],
)
def test_a_tool_without_a_showable_app_is_refused(
    client: MCPClient, tool: str, error: type[Exception], problem: str
) -> None:
    with pytest.raises(error, match=re.escape(problem)):
        AppBridge(client, tool)


def test_the_csp_has_declared_origins_only_and_the_allow_list_granted_features_only() -> None:
    assert checked_csp(None) == {} and checked_csp({"frameDomains": ()}) == {}
    assert checked_csp({"frameDomains": ["*", "https:"]}) == {}
    checked = checked_csp(
        {
            "connectDomains": ["https://a.example:8443", "wss://live.example", "*", "https://a.example; script-src *"],
            "resourceDomains": ("https://*.cdn.example", "'unsafe-eval'"),
            "baseUriDomains": ["http://localhost:3000"],
        }
    )
    assert checked == {
        "connectDomains": ["https://a.example:8443", "wss://live.example"],
        "resourceDomains": ["https://*.cdn.example"],
        "baseUriDomains": ["http://localhost:3000"],
    }
    policy = content_security_policy(checked)
    assert "connect-src https://a.example:8443 wss://live.example;" in policy
    assert "script-src 'self' 'unsafe-inline' https://*.cdn.example;" in policy
    assert "frame-src 'none';" in policy and "base-uri http://localhost:3000;" in policy
    assert "unsafe-eval" not in policy and "object-src 'none'" in policy
    assert allow_attribute(["geolocation", "teleport"]) == "geolocation" and allow_attribute([]) == ""
