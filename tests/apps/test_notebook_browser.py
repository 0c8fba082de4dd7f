"""The example's app in a real JupyterLab, in headless Chromium (Playwright, Debian's chromium; no browser download).

A JupyterLab server runs in a temporary directory (its own process group,
stopped after) with a notebook whose cell connects to
``examples/apps_server.py`` over stdio and shows its counter with
``show_app``. The browser opens the notebook and runs it; the app renders in
the cell's output through our widget (anywidget, in JupyterLab's widget
manager): the handshake completes (the app says who shows it, and shows the
tool's input and result), its +1 button makes a ``tools/call`` that reaches
the server through the kernel and updates the app, and the frame takes the
height the app reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import browser
from jupyter_lab import WAIT_MS, Lab, lab_with, wait_widget_resized

pytest.importorskip("anywidget")
pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apps_server.py"

CELLS = [
    "import sys\n"
    "from mcp_sync import MCPClient\n"
    "from mcp_sync.apps.widget import show_app\n"
    f"client = MCPClient.stdio([sys.executable, {str(EXAMPLE)!r}], host_apps=True, timeout=30,\n"
    f"                         env={{'PYTHONPATH': {str(ROOT)!r}}}, inherit_env=True)\n"
    "counter = show_app(client, 'show_counter', {'shown': 'in a cell'})\n"
    "counter",
]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with lab_with(tmp_path, {"counter.ipynb": CELLS}, [str(ROOT)]) as server:
        yield server


def test_the_example_app_in_a_jupyterlab_cell(lab: Lab) -> None:
    # The widget front ends JupyterLab must find: the widget manager and anywidget's.
    page_config = lab.get("/lab").decode()
    assert '"name": "anywidget"' in page_config and '"name": "@jupyter-widgets/jupyterlab-manager"' in page_config
    with browser() as chromium:
        page = lab.run_notebook(chromium, "counter.ipynb")
        outer = page.locator("iframe.mcp-sync-app")
        sync_api.expect(outer).to_have_count(1, timeout=WAIT_MS)
        app = page.frame_locator("iframe.mcp-sync-app").frame_locator("iframe")
        # The handshake, then the tool's input and result, shown by the app.
        sync_api.expect(app.locator("#host")).to_have_text("shown by mcp-sync", timeout=WAIT_MS)
        sync_api.expect(app.locator("#input")).to_have_text('{"shown":"in a cell"}', timeout=WAIT_MS)
        sync_api.expect(app.locator("#count")).to_have_text("0", timeout=WAIT_MS)
        # The frame follows the size the app reports (it starts at 320px).
        wait_widget_resized(page)
        # The app's +1: a tools/call through the kernel to the example server, whose answer the app shows.
        app.locator("#increment").click(timeout=WAIT_MS)
        sync_api.expect(app.locator("#count")).to_have_text("1", timeout=WAIT_MS)
        sync_api.expect(app.locator("#result")).to_have_text('{"count":1}', timeout=WAIT_MS)
        # The sandbox: the proxy frame on an opaque origin (no allow-same-origin), out of the page's reach; the
        # app inside it, as opaque, cannot reach the notebook page either.
        proxy = page.evaluate(
            "() => { const f = document.querySelector('iframe.mcp-sync-app');"
            " return [f.getAttribute('sandbox'), f.contentDocument === null]; }"
        )
        assert proxy == ["allow-scripts", True]
        [inner] = [frame for frame in page.frames if frame.query_selector("#count") is not None]
        reach = "() => { try { return window.parent.parent.document.title; } catch (e) { return e.name; } }"
        assert (inner.evaluate("() => window.origin"), inner.evaluate(reach)) == ("null", "SecurityError")
