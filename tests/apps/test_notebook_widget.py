"""AppWidget in this process: its comm carries the app's JSON-RPC to the bridge and back, against a real server.

No kernel here: the widget's comm is made through the ``comm`` package's
public hook (``comm.create_comm``, the one a kernel replaces), by a comm
that keeps what the kernel would publish to the front end; the front end's
messages are handed to it as the kernel's comm manager hands them
(``handle_msg``). ``tests/apps/test_notebook_kernel.py`` does the same in a
real kernel, and ``tests/apps/test_notebook_browser.py`` in JupyterLab.
"""

from __future__ import annotations

import html
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("anywidget")

import comm
from comm.base_comm import BaseComm

from mcp_sync import MCPServer, connect
from mcp_sync.apps.bridge import DENIED
from mcp_sync.apps.policy import content_security_policy
from mcp_sync.apps.widget import AppWidget, app_document, show_app
from mcp_sync.client import MCPClient
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.types import CallToolResult, TextContent

WAIT = 10.0
APP = "ui://counter/app.html"
HTML = "<!-- made by hand -->\n<!DOCTYPE html>\n<html><head><script>start()</script></head><body>+1</body></html>"


class FrontEnd(BaseComm):
    """A comm whose published messages are kept, in order, as the front end would receive them."""

    def __init__(self, **kwargs: Any) -> None:
        self.state: dict[str, Any] = kwargs.get("data", {}).get("state", {})
        self.published: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        super().__init__(**kwargs)

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        self.published.put((msg_type, data or {}))

    def from_browser(self, content: Any) -> None:
        """A custom message from the widget's front end, as the kernel's comm manager delivers it."""
        self.handle_msg(
            {"content": {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}}, "buffers": []}
        )

    def to_browser(self) -> tuple[str, dict[str, Any]]:
        return self.published.get(timeout=WAIT)

    def to_app(self) -> dict[str, Any]:
        """The next message the kernel sends the app (through the front end)."""
        while True:
            kind, data = self.to_browser()
            if kind == "comm_msg" and "app" in data.get("content", {}):
                message: dict[str, Any] = data["content"]["app"]
                return message


@pytest.fixture(autouse=True)
def front_end(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FrontEnd]]:
    """The comms of the app widgets made (their layout widgets have comms too: not kept)."""
    made: list[FrontEnd] = []

    def create(*args: Any, **kwargs: Any) -> FrontEnd:
        front = FrontEnd(**kwargs)
        if front.state.get("_model_name") == "AnyModel":
            made.append(front)
        return front

    monkeypatch.setattr(comm, "create_comm", create)
    yield made


def make_server() -> MCPServer:
    server = MCPServer("counter", "1.0")
    server.add_app_resource(APP, html=HTML, csp={"connectDomains": ["https://api.example.com"]}, prefers_border=False)
    count = [0]

    @server.tool(ui=APP)
    def show_counter() -> CallToolResult:
        """The counter, in its app."""
        return CallToolResult(content=[TextContent(text=str(count[0]))], structured_content={"count": count[0]})

    @server.tool(ui=APP, visibility=["app"])
    def increment(by: int = 1) -> CallToolResult:
        """One more (for the app only)."""
        count[0] += by
        return CallToolResult(content=[TextContent(text=str(count[0]))], structured_content={"count": count[0]})

    @server.tool(ui=APP, visibility=["model"])
    def reset() -> str:
        """Back to zero (for the model only)."""
        count[0] = 0
        return "0"

    return server


@pytest.fixture
def client() -> Iterator[MCPClient]:
    with connect(make_server(), host_apps=True, timeout=WAIT) as connected:
        yield connected


def request(front: FrontEnd, ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    front.from_browser({"app": {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}})
    answer = front.to_app()
    assert answer["id"] == ident, answer
    return answer


def notify(front: FrontEnd, method: str, params: dict[str, Any] | None = None) -> None:
    front.from_browser({"app": {"jsonrpc": "2.0", "method": method, "params": params or {}}})


def test_the_widget_carries_the_handshake_tool_calls_and_what_the_app_says(
    client: MCPClient, front_end: list[FrontEnd]
) -> None:
    widget = show_app(client, "show_counter", {"start": 1})
    [front] = front_end
    kind, opened = front.to_browser()
    assert kind == "comm_open"
    state = opened["state"]
    # The app's document: its CSP first (after the comment and doctype), from the declared origins only.
    policy = content_security_policy({"connectDomains": ["https://api.example.com"]})
    assert state["html"] == HTML.replace(
        "<!DOCTYPE html>", f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">'
    )
    assert (state["border"], state["allow"], state["title"]) == (False, "", "show_counter")
    assert "export default { render }" in state["_esm"]

    # The front end's context, then the handshake: nothing reaches the app before it is initialized.
    front.from_browser({"context": {"theme": "dark", "locale": "fr-FR", "unknown": 1}})
    front.from_browser("not an object")  # ignored
    front.from_browser({"other": 1})  # ignored
    answer = request(front, 1, "ui/initialize", {"appInfo": {"name": "counter-app", "version": "1"}})
    context = answer["result"]["hostContext"]
    assert (context["theme"], context["locale"], context["toolInfo"]["tool"]["name"]) == (
        "dark",
        "fr-FR",
        "show_counter",
    )
    assert "openLinks" in answer["result"]["hostCapabilities"]
    notify(front, "ui/notifications/initialized")
    assert front.to_app() == {
        "jsonrpc": "2.0",
        "method": "ui/notifications/tool-input",
        "params": {"arguments": {"start": 1}},
    }
    result = front.to_app()
    assert result["method"] == "ui/notifications/tool-result"
    assert result["params"]["structuredContent"] == {"count": 0}

    # The app's tool calls: an app-visible tool reaches the server; a tool for the model only is refused.
    called = request(front, 2, "tools/call", {"name": "increment", "arguments": {"by": 2}})
    assert called["result"]["structuredContent"] == {"count": 2}
    refused = request(front, 3, "tools/call", {"name": "reset", "arguments": {}})
    assert refused["error"]["code"] == DENIED
    assert client.call_tool("show_counter").structured_content == {"count": 2}

    # What the app says is kept on the widget.
    assert widget.last_message is None and widget.model_context is None
    message = {"role": "user", "content": [{"type": "text", "text": "two"}]}
    assert request(front, 4, "ui/message", message)["result"] == {}
    request(front, 5, "ui/update-model-context", {"structuredContent": {"count": 2}})
    assert widget.last_message == message
    assert widget.model_context == {"structuredContent": {"count": 2}}
    notify(front, "ui/notifications/size-changed", {"width": 300, "height": 180})
    # A link the app asks for is opened by the page (the bridge checked it).
    front.from_browser(
        {"app": {"jsonrpc": "2.0", "id": 6, "method": "ui/open-link", "params": {"url": "https://x.org"}}}
    )
    opened, answered = (front.to_browser()[1]["content"] for _ in range(2))
    assert (opened, answered["app"]) == ({"open": "https://x.org"}, {"jsonrpc": "2.0", "id": 6, "result": {}})

    # Closing: the app is told (ui/resource-teardown), then the comm closes; no bridge thread is left.
    widget.close()
    teardown = front.to_app()
    assert (teardown["method"], teardown["params"]) == ("ui/resource-teardown", {"reason": "the view was closed"})
    assert front.to_browser()[0] == "comm_close"
    assert widget.bridge.closed.is_set() and widget.bridge.size == {"width": 300, "height": 180}
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("mcp-sync-app")]
    widget.close()  # twice: nothing more


def test_a_call_that_raises_closes_the_view_and_raises(client: MCPClient, front_end: list[FrontEnd]) -> None:
    with pytest.raises(MCPError) as refused:
        show_app(client, "increment", {"by": "two"})  # not an integer: the server refuses the call
    assert refused.value.code == MCP_CODES.INVALID_PARAMS
    [front] = front_end
    kinds = [front.to_browser()[0] for _ in range(2)]
    assert kinds == ["comm_open", "comm_close"]  # the app never initialized: it is not sent a teardown
    assert front.published.empty()


def test_the_widget_given_its_result_by_hand(client: MCPClient, front_end: list[FrontEnd]) -> None:
    view = AppWidget(client, "show_counter")
    view.bridge.deliver_result(client.call_tool("show_counter"))
    assert view.bridge.result is not None and view.bridge.result.structured_content == {"count": 0}
    assert front_end[0].to_browser()[0] == "comm_open"
    view.close()


@pytest.mark.parametrize(
    ("page", "at"),
    [
        ("<p>bare</p>", 0),
        ("  <!doctype html><html>", len("  <!doctype html>")),
        ("<!--a--> <!-- b --><html>", len("<!--a--> <!-- b -->")),
    ],
)
def test_the_csp_tag_goes_after_the_prologue(page: str, at: int) -> None:
    document = app_document(page, {})
    tag = re.search(r"<meta http-equiv=\"Content-Security-Policy\"[^>]*>", document)
    assert tag is not None and tag.start() == at
    assert document[: tag.start()] + document[tag.end() :] == page


def test_the_widget_is_reached_from_the_package_and_loaded_only_then() -> None:
    import mcp_sync.apps
    from mcp_sync.apps import widget

    script = "import sys, mcp_sync.apps; print('anywidget' in sys.modules, 'mcp_sync.apps.widget' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]

    assert (mcp_sync.apps.show_app, mcp_sync.apps.AppWidget) == (widget.show_app, widget.AppWidget)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = mcp_sync.apps.nothing  # type: ignore[attr-defined]


class ZMQInteractiveShell:
    """What ``in_notebook`` takes for a Jupyter kernel's shell (by its class name)."""


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def shown_in_kernel(result: CallToolResult) -> dict[str, Any]:
    """What IPython's display formatter makes of ``result`` while the running shell is a kernel's."""
    import IPython
    from IPython.core.formatters import DisplayFormatter

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(IPython, "get_ipython", ZMQInteractiveShell)
        data: dict[str, Any] = DisplayFormatter().format(result)[0]
    return data


def test_a_result_shown_in_a_notebook_is_its_app(front_end: list[FrontEnd]) -> None:
    """A plain ``call_tool`` result, formatted by IPython in a kernel, is the app's widget, given the call."""
    from IPython.core.formatters import DisplayFormatter
    from ipywidgets import widget_serialization

    server = make_server()
    server.register_tool("plain", lambda args, ctx: "no app")
    with connect(server, host_apps=True, timeout=WAIT) as client:
        result = client.call_tool("show_counter", {"start": 3})
        assert WIDGET_VIEW not in DisplayFormatter().format(result)[0]  # outside a kernel: its HTML and text only
        shown = shown_in_kernel(result)
        [front] = front_end
        assert shown[WIDGET_VIEW]["model_id"] == front.comm_id
        # Front ends without widgets get the result as before; the widget's own text (its repr) is not used.
        assert shown["text/plain"] == '0\nstructured content: {"count": 0}' and "<" in shown["text/html"]
        assert front.to_browser()[0] == "comm_open"
        request(front, 1, "ui/initialize", {"appInfo": {"name": "counter-app", "version": "1"}})
        notify(front, "ui/notifications/initialized")
        assert front.to_app()["params"] == {"arguments": {"start": 3}}
        delivered = front.to_app()
        assert (delivered["method"], delivered["params"]) == ("ui/notifications/tool-result", result.to_wire())
        assert request(front, 2, "tools/call", {"name": "increment", "arguments": {}})["result"][
            "structuredContent"
        ] == {"count": 1}

        # Shown again: a view of its own. A tool without an app, a client that does not host apps: no widget.
        assert shown_in_kernel(result)[WIDGET_VIEW]["model_id"] == front_end[1].comm_id
        assert WIDGET_VIEW not in shown_in_kernel(client.call_tool("plain"))
        with connect(make_server(), timeout=WAIT) as guest:
            assert WIDGET_VIEW not in shown_in_kernel(guest.call_tool("show_counter"))
        assert len(front_end) == 2
        for front in front_end:  # the views, by their model ids (ipywidgets' public way from an id to its widget)
            view = widget_serialization["from_json"](f"IPY_MODEL_{front.comm_id}", None)
            assert isinstance(view, AppWidget) and view.bridge.result is result
            view.close()
