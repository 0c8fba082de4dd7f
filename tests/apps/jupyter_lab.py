"""A real JupyterLab server with notebooks, and a notebook run in headless Chromium: for the Jupyter host's tests.

The server runs in a temporary directory (its own process group, its
kernels shut down then the group stopped after), on a free port of
127.0.0.1 with a random token, its configuration, settings and workspaces
in that directory. Its one kernel spec runs this Python with ``pythonpath``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers import kernel_spec

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

KERNEL = "mcp-sync-apps-lab"
START_WAIT = 60.0
"""The longest JupyterLab may take to start (seconds)."""
WAIT_MS = 30_000
"""The longest a step in the notebook page may take (milliseconds)."""


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

    def run_notebook(self, browser: Browser, name: str) -> Page:
        """Open notebook ``name`` in a new page of ``browser``, once its kernel is up run all its cells; the page."""
        page = browser.new_page()
        page.goto(f"{self.url}/lab/tree/{name}?token={self.token}", timeout=WAIT_MS)
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
            " && window.jupyterapp.shell.currentWidget.sessionContext"
            " && window.jupyterapp.shell.currentWidget.sessionContext.session"
            " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
            timeout=WAIT_MS,
        )
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        return page


@contextlib.contextmanager
def lab_with(directory: Path, notebooks: Mapping[str, Sequence[str]], pythonpath: Iterable[str]) -> Iterator[Lab]:
    """A started :class:`Lab` in ``directory`` holding ``notebooks`` (each name's code cells), stopped after."""
    environment = {**os.environ, **kernel_spec(directory, KERNEL, pythonpath)}
    environment["JUPYTER_CONFIG_DIR"] = str(directory / "config")
    environment["JUPYTERLAB_SETTINGS_DIR"] = str(directory / "settings")
    environment["JUPYTERLAB_WORKSPACES_DIR"] = str(directory / "workspaces")
    for name, cells in notebooks.items():
        notebook = {
            "cells": [
                {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
                for s in cells
            ],
            "metadata": {"kernelspec": {"name": KERNEL, "display_name": KERNEL, "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (directory / name).write_text(json.dumps(notebook))
    server = Lab(directory, environment)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def wait_widget_resized(page: Page) -> int:
    """Wait until the cell's app frame has taken the height its app reported (it starts at 320px); that height."""
    resized = (
        "() => { const f = document.querySelector('iframe.mcp-sync-app');"
        " return f && f.style.height !== '320px' && parseInt(f.style.height) > 50 ? parseInt(f.style.height) : 0; }"
    )
    height: int = page.wait_for_function(resized, timeout=WAIT_MS).json_value()
    return height
