"""The example's app, run in headless Chromium inside a minimal host written here, against the example over stdio.

Not the library's host (``mcp_sync.apps``): a bare frame and a few lines of
host script, so that what is proved is the app's own side of the protocol,
written by hand in ``examples/apps_server.py``: it sends ``ui/initialize``,
then ``ui/notifications/initialized``, shows the tool input and result the
host sends, and its button calls the app-only tool ``increment`` through the
host, whose answer it shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import peers
import pytest

from mcp_sync import MCPClient
from mcp_sync.protocol.apps import visible_to_app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apps_server.py"
WAIT_MS = 15_000

HOST = """<!doctype html>
<iframe id="app" style="width: 400px; height: 300px"></iframe>
<script>
window.seen = [];
const frame = document.getElementById("app");
function post(message) { frame.contentWindow.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*"); }
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) { return; }
  const message = event.data;
  window.seen.push(message.method || "response");
  if (message.method === "ui/initialize") {
    post({ id: message.id, result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "1" },
                                     hostCapabilities: { serverTools: {} }, hostContext: { theme: "dark" } } });
  } else if (message.method === "ui/notifications/initialized") {
    post({ method: "ui/notifications/tool-input", params: { arguments: {} } });
    post({ method: "ui/notifications/tool-result", params: await window.callTool("show_counter", {}) });
  } else if (message.method === "tools/call") {
    const answer = await window.callTool(message.params.name, message.params.arguments || {});
    post(answer.error ? { id: message.id, error: answer.error } : { id: message.id, result: answer });
  }
});
</script>
"""


def test_the_example_app_runs_its_side_of_the_protocol_in_a_browser() -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    browser_path = peers.chromium()
    command = [sys.executable, str(EXAMPLE)]
    serve: Any = {"env": {"PYTHONPATH": str(ROOT)}, "inherit_env": True, "timeout": 30.0}
    with MCPClient.stdio(command, host_apps=True, **serve) as client:
        app = client.app_resource("show_counter")
        calls: list[str] = []

        def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            calls.append(name)
            tool = client.tools.find(name)
            if tool is None or not visible_to_app(tool):  # what a host must refuse an app
                return {"error": {"code": -32602, "message": f"{name} is not for apps"}}
            return client.call_tool(name, arguments).to_wire()

        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=browser_path, args=peers.chromium_flags())
            try:
                page = browser.new_page()
                page.expose_function("callTool", call_tool)
                page.set_content(HOST)
                page.eval_on_selector("#app", "(frame, html) => { frame.srcdoc = html; }", app.html)
                frame = page.frame_locator("#app")
                # The handshake, then the tool's input and result, shown by the app.
                sync_api.expect(frame.locator("#host")).to_have_text("shown by test-host", timeout=WAIT_MS)
                sync_api.expect(frame.locator("#count")).to_have_text("0", timeout=WAIT_MS)
                sync_api.expect(frame.locator("#input")).to_have_text("{}", timeout=WAIT_MS)
                # The app's button: a tools/call of the app-only tool, through the host, to the server and back.
                frame.locator("#increment").click(timeout=WAIT_MS)
                sync_api.expect(frame.locator("#count")).to_have_text("1", timeout=WAIT_MS)
                seen = page.evaluate("window.seen")
            finally:
                browser.close()
        assert calls == ["show_counter", "increment"]
        assert seen[:2] == ["ui/initialize", "ui/notifications/initialized"]
        assert "tools/call" in seen and "ui/notifications/size-changed" in seen
        assert client.call_tool("show_counter").structured_content == {"count": 1}
