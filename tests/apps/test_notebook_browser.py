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

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import kernel_spec

pytest.importorskip("anywidget")
pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apps_server.py"
KERNEL = "mcp-sync-apps-lab"
START_WAIT = 60.0
WAIT_MS = 30_000

CELLS = [
    "import sys\n"
    "from mcp_sync import MCPClient\n"
    "from mcp_sync.apps.widget import show_app\n"
    f"client = MCPClient.stdio([sys.executable, {str(EXAMPLE)!r}], host_apps=True, timeout=30,\n"
    f"                         env={{'PYTHONPATH': {str(ROOT)!r}}}, inherit_env=True)\n"
    "counter = show_app(client, 'show_counter', {'shown': 'in a cell'})\n"
    "counter",
]


class Lab:
    """A JupyterLab server on a free loopback port, in its own process group."""

    def __init__(self, directory: Path, environment: dict[str, str]) -> None:
        self.token = secrets.token_hex(16)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (directory / "lab.log").open("wb")
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1"]
        command += [f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0", f"--ServerApp.token={self.token}"]
        command += [f"--ServerApp.root_dir={directory}", "--LabApp.expose_app_in_browser=True"]
        command += ["--allow-root"] if os.geteuid() == 0 else []
        self.process = subprocess.Popen(
            command, cwd=directory, env=environment, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}?token={self.token}", timeout=10) as response:
            return response.read()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_WAIT
        while True:
            assert self.process.poll() is None, "JupyterLab exited at start"
            try:
                json.loads(self.get("/api/status"))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)  # polling the server's state: it is up when it answers

    def stop(self) -> None:
        """Shut its kernels down (each in a session of its own, not in the group), then the server's group."""
        try:
            for kernel in json.loads(self.get("/api/kernels")) if self.process.poll() is None else []:
                request = urllib.request.Request(
                    f"{self.url}/api/kernels/{kernel['id']}?token={self.token}", method="DELETE"
                )
                urllib.request.urlopen(request, timeout=30).close()
        finally:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
            self.log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    environment = {**os.environ, **kernel_spec(tmp_path, KERNEL, [str(ROOT)])}
    environment["JUPYTER_CONFIG_DIR"] = str(tmp_path / "config")
    environment["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "settings")
    environment["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None} for s in CELLS
        ],
        "metadata": {"kernelspec": {"name": KERNEL, "display_name": KERNEL, "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "counter.ipynb").write_text(json.dumps(notebook))
    server = Lab(tmp_path, environment)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


def test_the_example_app_in_a_jupyterlab_cell(lab: Lab) -> None:
    # The widget front ends JupyterLab must find: the widget manager and anywidget's.
    page_config = lab.get("/lab").decode()
    assert '"name": "anywidget"' in page_config and '"name": "@jupyter-widgets/jupyterlab-manager"' in page_config
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=args)
        try:
            page = browser.new_page()
            page.goto(f"{lab.url}/lab/tree/counter.ipynb?token={lab.token}", timeout=WAIT_MS)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                timeout=WAIT_MS,
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            outer = page.locator("iframe.mcp-sync-app")
            sync_api.expect(outer).to_have_count(1, timeout=WAIT_MS)
            app = page.frame_locator("iframe.mcp-sync-app").frame_locator("iframe")
            # The handshake, then the tool's input and result, shown by the app.
            sync_api.expect(app.locator("#host")).to_have_text("shown by mcp-sync", timeout=WAIT_MS)
            sync_api.expect(app.locator("#input")).to_have_text('{"shown":"in a cell"}', timeout=WAIT_MS)
            sync_api.expect(app.locator("#count")).to_have_text("0", timeout=WAIT_MS)
            # The frame follows the size the app reports (it starts at 320px).
            page.wait_for_function(
                "() => { const f = document.querySelector('iframe.mcp-sync-app');"
                " return f && f.style.height !== '320px' && parseInt(f.style.height) > 50; }",
                timeout=WAIT_MS,
            )
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
        finally:
            browser.close()
