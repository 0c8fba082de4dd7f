"""A real app nobody here wrote, in a real JupyterLab notebook: ``@modelcontextprotocol/server-basic-vanillajs``.

The notebook's cell connects to the npm package's server over stdio and
shows its ``get-time`` app with ``show_app``; headless Chromium (Playwright,
Debian's chromium) opens the notebook in JupyterLab and runs it. The app,
built on the official ``App`` class, renders in the cell's output through
our widget: the handshake completes and the tool's input and result arrive
(it shows the server's time), its own Get Server Time button makes a
``tools/call`` that goes through the kernel to the server and the app shows
the new time, and the frame takes the height the app reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import peers
import pytest
from browsing import browser, until
from jupyter_lab import WAIT_MS, Lab, lab_with, wait_widget_resized

pytest.importorskip("anywidget")
pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
VANILLAJS = "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    server = [peers.require("node"), str(peers.node_entry(peers.npm_package_dir(VANILLAJS))), "--stdio"]
    cells = [
        "from mcp_sync import MCPClient\n"
        "from mcp_sync.apps.widget import show_app\n"
        f"client = MCPClient.stdio({server!r}, host_apps=True, timeout=30)\n"
        "clock = show_app(client, 'get-time')\n"
        "clock",
    ]
    with lab_with(tmp_path, {"clock.ipynb": cells}, [str(ROOT)]) as started:
        yield started


def test_the_vanillajs_app_in_a_jupyterlab_cell(lab: Lab) -> None:
    with browser() as chromium:
        page = lab.run_notebook(chromium, "clock.ipynb")
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        sync_api.expect(page.locator("iframe.mcp-sync-app")).to_have_count(1, timeout=WAIT_MS)
        app = page.frame_locator("iframe.mcp-sync-app").frame_locator("iframe")

        # The handshake, then the tool's input and result: the app shows the time the server answered.
        time = app.locator("#server-time")
        sync_api.expect(time).to_have_text(ISO_TIME, timeout=WAIT_MS)
        first = time.inner_text()
        until(lambda: any("Received tool call input" in line for line in console), "the tool input", page)
        until(lambda: any("Received tool call result" in line for line in console), "the tool result", page)

        # The frame follows the size the app reports.
        wait_widget_resized(page)

        # The app's own button: a tools/call through the kernel to the server, whose new time the app shows.
        app.locator("#get-time-btn").click(timeout=WAIT_MS)
        sync_api.expect(time).not_to_have_text(first, timeout=WAIT_MS)
        second = time.inner_text()
        assert ISO_TIME.fullmatch(second) and second > first
        until(lambda: any("get-time result" in line for line in console), "the app's log of the call", page)
