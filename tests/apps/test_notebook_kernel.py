"""An app shown in a notebook cell, in a real ipykernel (nbclient): the front end's messages reach the bridge.

The kernel serves ``examples/apps_server.py`` in memory (with one more tool,
for the model only) and a cell shows its counter with ``show_app``. The test
then plays the front end as a second client of the kernel, as a browser tab
is: it sends the widget's comm the messages the app would post (``comm_msg``
on the shell channel, between cells, as the kernel handles them while idle)
and reads the answers the kernel publishes (``comm_msg`` on IOPub). Later
cells read what the app said on the widget, and close it.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import kernel_spec

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
pytest.importorskip("anywidget")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CELL_TIMEOUT = 60
WAIT = 30.0
WIDGET = "application/vnd.jupyter.widget-view+json"

SHOW = """\
from mcp_sync import connect
from mcp_sync.apps.widget import show_app
from apps_server import APP, server

@server.tool(ui=APP, visibility=["model"])
def reset() -> str:
    \"\"\"Back to zero: for the model, not the app.\"\"\"
    return "0"

client = connect(server, host_apps=True, timeout=30)
counter = show_app(client, "show_counter", {"from": "a cell"})
counter
"""
READ = "import json\nprint(json.dumps([counter.last_message, counter.model_context, counter.bridge.size]))"
CLOSE = """\
import threading
counter.close()
client.close()
print(counter.bridge.closed.is_set(), [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync-app")])
"""


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "mcp-sync-apps"
    for variable, value in kernel_spec(tmp_path, name, [str(ROOT), str(EXAMPLES)]).items():
        monkeypatch.setenv(variable, value)
    return name


class FrontEnd:
    """The widget's front end, as a second client of the kernel: comm messages out, the kernel's custom messages in."""

    def __init__(self, runner: Any, comm_id: str) -> None:
        self.client = runner.km.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=WAIT)  # IOPub is subscribed once the kernel's status reaches it
        self.comm_id = comm_id
        self.ids = itertools.count(1)

    def send(self, content: Any) -> None:
        session = self.client.session
        data = {"method": "custom", "content": content}
        session.send(self.client.shell_channel.socket, session.msg("comm_msg", {"comm_id": self.comm_id, "data": data}))

    def published(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """The widget's comm messages and close, as the kernel publishes them (each wait bounded)."""
        deadline = time.monotonic() + WAIT
        while True:
            msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            content = msg["content"]
            if msg["msg_type"] in ("comm_msg", "comm_close") and content.get("comm_id") == self.comm_id:
                yield msg["msg_type"], content.get("data", {})

    def to_app(self) -> dict[str, Any]:
        for kind, data in self.published():
            if kind == "comm_msg" and "app" in data.get("content", {}):
                message: dict[str, Any] = data["content"]["app"]
                return message
        raise AssertionError("unreachable")  # published() ends only by raising queue.Empty

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = next(self.ids)
        self.send({"app": {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}})
        answer = self.to_app()
        assert answer.get("id") == ident and "method" not in answer, answer
        return answer

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"app": {"jsonrpc": "2.0", "method": method, "params": params or {}}})

    def close(self) -> None:
        self.client.stop_channels()


def printed(cell: Any) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def test_the_app_talks_to_the_server_through_the_kernel(kernel: str) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in (SHOW, READ, CLOSE)])
    runner = nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=CELL_TIMEOUT)
    show, read, close = notebook.cells
    with runner.setup_kernel():
        runner.execute_cell(show, 0)
        assert not [out for out in show.outputs if out.output_type == "error"], show.outputs
        [view] = [out["data"][WIDGET] for out in show.outputs if WIDGET in out.get("data", {})]
        front = FrontEnd(runner, view["model_id"])
        try:
            # The handshake: the host answers ui/initialize, and holds the call's input and result until initialized.
            front.send({"context": {"theme": "dark"}})
            initialized = front.request("ui/initialize", {"appInfo": {"name": "counter-app", "version": "1.0"}})
            result = initialized["result"]
            assert result["hostInfo"]["name"] == "mcp-sync"
            assert result["hostContext"]["theme"] == "dark"
            assert result["hostContext"]["toolInfo"]["tool"]["name"] == "show_counter"
            front.notify("ui/notifications/initialized")
            assert front.to_app()["params"] == {"arguments": {"from": "a cell"}}
            delivered = front.to_app()
            assert delivered["method"] == "ui/notifications/tool-result"
            assert delivered["params"]["structuredContent"] == {"count": 0}
            # The app's calls: the app-only tool reaches the server; a tool for the model only is refused.
            called = front.request("tools/call", {"name": "increment", "arguments": {"by": 1}})
            assert called["result"]["structuredContent"] == {"count": 1}
            refused = front.request("tools/call", {"name": "reset", "arguments": {}})
            assert refused["error"]["code"] == -32000 and "reset" in refused["error"]["message"]
            listed = front.request("tools/list", {})
            assert [tool["name"] for tool in listed["result"]["tools"]] == ["show_counter", "increment"]
            # What the app says, kept on the widget, read by a later cell.
            message = {"role": "user", "content": [{"type": "text", "text": "count is 1"}]}
            front.request("ui/message", message)
            front.request("ui/update-model-context", {"structuredContent": {"count": 1}})
            front.notify("ui/notifications/size-changed", {"width": 320, "height": 150})
            front.request("ping", {})  # answered after the notification before it was handled
            runner.execute_cell(read, 1)
            assert json.loads(printed(read)) == [
                message,
                {"structuredContent": {"count": 1}},
                {"width": 320, "height": 150},
            ]
            # Closing the widget: the app is told, the comm closes, no bridge thread is left in the kernel.
            runner.execute_cell(close, 2)
            assert printed(close) == "True []\n"
            teardown = front.to_app()
            assert teardown["method"] == "ui/resource-teardown"
            assert next(kind for kind, _ in front.published()) == "comm_close"
        finally:
            front.close()


CALL = """\
from mcp_sync import connect
from apps_server import server

client = connect(server, host_apps=True, timeout=30)
client.call_tool("show_counter", {"from": "a plain call"})
"""
COUNT = 'print(client.call_tool("show_counter").structured_content)'


def test_a_plain_call_as_the_cell_value_shows_the_app(kernel: str) -> None:
    """No ``show_app``: the result of ``call_tool`` of a tool with an app is shown as the app, which then works."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in (CALL, COUNT)])
    runner = nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=CELL_TIMEOUT)
    call, count = notebook.cells
    with runner.setup_kernel():
        runner.execute_cell(call, 0)
        [value] = [out for out in call.outputs if out.output_type == "execute_result"]
        # The widget's view, and the result's own HTML and text for a front end without widgets.
        assert {WIDGET, "text/html", "text/plain"} <= set(value["data"]), value["data"]
        assert value["data"]["text/plain"].startswith("The counter is at 0.")
        front = FrontEnd(runner, value["data"][WIDGET]["model_id"])
        try:
            initialized = front.request("ui/initialize", {"appInfo": {"name": "counter-app", "version": "1.0"}})
            assert initialized["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "show_counter"
            front.notify("ui/notifications/initialized")
            assert front.to_app()["params"] == {"arguments": {"from": "a plain call"}}
            delivered = front.to_app()
            assert (delivered["method"], delivered["params"]["structuredContent"]) == (
                "ui/notifications/tool-result",
                {"count": 0},
            )
            called = front.request("tools/call", {"name": "increment", "arguments": {"by": 1}})
            assert called["result"]["structuredContent"] == {"count": 1}
            runner.execute_cell(count, 1)
            assert printed(count) == "{'count': 1}\n"
        finally:
            front.close()
