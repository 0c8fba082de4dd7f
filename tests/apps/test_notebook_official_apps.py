"""Real apps nobody here wrote, in a real JupyterLab notebook: the official vanillajs and cohort-heatmap examples.

Each notebook's cell connects to the npm package's server over stdio and
shows its app with ``show_app``; headless Chromium (Playwright, Debian's
chromium) opens the notebook in JupyterLab and runs it. The app, built on
the official ``App`` class, renders in the cell's output through our widget
(an opaque-origin sandbox, the app's JSON-RPC over the kernel's comm).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import peers
import pytest
from browsing import browser, until
from cohort_heatmap import ACTIVE, COHORT_HEATMAP, RETENTION, rows_in
from jupyter_lab import WAIT_MS, Lab, lab_with, wait_widget_resized

pytest.importorskip("anywidget")
pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
VANILLAJS = "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")


def showing(spec: str, tool: str) -> list[str]:
    """A notebook's cells: connect to the npm package ``spec``'s server over stdio, show ``tool``'s app."""
    server = [peers.require("node"), str(peers.node_entry(peers.npm_package_dir(spec))), "--stdio"]
    return [
        "from mcp_sync import MCPClient\n"
        "from mcp_sync.apps.widget import show_app\n"
        f"client = MCPClient.stdio({server!r}, host_apps=True, timeout=30)\n"
        f"view = show_app(client, {tool!r})\n"
        "view",
    ]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    notebooks = {
        "clock.ipynb": showing(VANILLAJS, "get-time"),
        "cohorts.ipynb": showing(COHORT_HEATMAP, "get-cohort-data"),
    }
    with lab_with(tmp_path, notebooks, [str(ROOT)]) as started:
        yield started


def test_the_vanillajs_app_in_a_jupyterlab_cell(lab: Lab) -> None:
    """The handshake, the tool's input and result (the server's time shown), the frame resized, and the app's Get
    Server Time button calling the server through the kernel (the new time shown)."""
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


def test_the_cohort_heatmap_app_in_a_jupyterlab_cell(lab: Lab) -> None:
    """The React app draws the heatmap from its own tools/call through the kernel, its Metric selector calls the
    server again (month 1's numbers move from the retention band to the active band), the frame is resized."""
    with browser() as chromium:
        page = lab.run_notebook(chromium, "cohorts.ipynb")
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        sync_api.expect(page.locator("iframe.mcp-sync-app")).to_have_count(1, timeout=WAIT_MS)
        heading = page.frame_locator("iframe.mcp-sync-app").frame_locator("iframe").locator("h1")
        sync_api.expect(heading).to_have_text("Cohort Retention Analysis", timeout=WAIT_MS)
        app = next(frame for frame in page.frames if frame.query_selector('[class^="_container_"]') is not None)

        # The handshake, the host's tool input and result (parsed by the app's App class), and the app's own call.
        until(lambda: any("ui/notifications/tool-result" in line for line in console), "the tool result", page)
        assert any("ui/notifications/tool-input" in line for line in console)
        first = until(lambda: rows_in(app, *RETENTION), "the retention heatmap", page)
        assert [len(row["cells"]) for row in first] == list(range(12, 0, -1))

        wait_widget_resized(page)

        # The app's Metric selector: a tools/call with metric=active through the kernel, whose answer it draws.
        calls = sum("method: tools/call" in line for line in console)
        app.locator("select").first.select_option("active")
        second = until(lambda: rows_in(app, *ACTIVE), "the active-users heatmap", page)
        assert [row["users"] for row in second] != [row["users"] for row in first]
        assert sum("method: tools/call" in line for line in console) == calls + 1
