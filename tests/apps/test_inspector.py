"""The MCP Inspector (a real host, not ours) renders ``examples/apps_server.py``'s app, and its +1 reaches our server.

The Inspector's web UI (``@modelcontextprotocol/inspector`` 2.12.0, on Node
22) runs on 127.0.0.1 with a fixed API token, its ports chosen here, no
browser of its own, secrets kept in memory and ``HOME`` a temporary
directory; it is started with the example as an ad-hoc stdio server. Headless
Chromium (Debian's) opens the UI with every request off 127.0.0.1 aborted
(the UI asks Google for fonts), connects, opens ``show_counter`` in the Apps
tab, and finds the app rendered in the Inspector's sandbox frame with the
tool's result; clicking +1 makes the app call ``increment`` through the
Inspector, and the count the server answers shows.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import conformance
import pytest
from browsing import WAIT, browser, until
from helpers import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apps_server.py"


@contextlib.contextmanager
def inspector_web(tmp: Path) -> Iterator[str]:
    """The Inspector's web UI serving the example over stdio, in its own process group: its URL with the token."""
    node = conformance.node22()
    launcher = conformance.npm_install(INSPECTOR) / "clients" / "launcher" / "build" / "index.js"
    port, sandbox, app_origin = free_port(), free_port(), free_port()
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "HOME": str(tmp),
        "HOST": "127.0.0.1",
        "CLIENT_PORT": str(port),
        "MCP_SANDBOX_PORT": str(sandbox),
        "MCP_APP_ORIGIN_PORT": str(app_origin),
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_INSPECTOR_API_TOKEN": token,
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "PYTHONPATH": str(ROOT),
    }
    log = tmp / "inspector.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [node, str(launcher), "--web", "--", sys.executable, str(EXAMPLE)],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WAIT
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the Inspector did not start listening:\n{log.read_text(errors='replace')}")
        yield f"http://127.0.0.1:{port}/?MCP_INSPECTOR_API_TOKEN={token}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(15)


def test_the_inspector_renders_the_counter_and_its_button_calls_our_server(tmp_path: Path) -> None:
    blocked: list[str] = []

    def loopback_only(route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    with inspector_web(tmp_path) as url, browser() as chromium:
        context = chromium.new_context()
        context.route("**/*", loopback_only)
        page = context.new_page()
        page.goto(url, timeout=WAIT * 1000)
        page.get_by_role("switch", name='Connect or disconnect "python"').click(force=True, timeout=WAIT * 1000)
        page.get_by_text("Apps", exact=True).first.click(timeout=WAIT * 1000)
        page.get_by_role("button", name="show_counter").first.click(timeout=WAIT * 1000)

        def app_frame() -> Any:
            for frame in page.frames:
                with contextlib.suppress(Exception):  # a frame may go while it is read
                    if frame.query_selector("#increment") is not None:
                        return frame
            return None

        app = until(app_frame, "the app's frame in the Inspector", page)
        assert app.parent_frame is not None and app.parent_frame.url.endswith("/sandbox")  # in its sandbox proxy
        until(lambda: app.inner_text("#count") == "0", "the tool's result in the app", page)
        assert app.inner_text("#host") == "shown by MCP Inspector"  # its ui/initialize answered by the Inspector
        app.click("#increment", timeout=WAIT * 1000)
        until(lambda: app.inner_text("#count") == "1", "the count the server answered to +1", page)
        assert '{"count":1}' in app.inner_text("#result")
    assert all("127.0.0.1" not in url for url in blocked)
