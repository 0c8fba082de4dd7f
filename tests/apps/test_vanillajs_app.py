"""``mcp-sync app`` shows a real app nobody here wrote, in headless Chromium.

The app is ``@modelcontextprotocol/server-basic-vanillajs`` (tool ``get-time``,
``ui://get-time/mcp-app.html``), built on the official ``App`` class, run
over stdio. The command runs as a real process (``--no-browser``: it prints
the page's URL, which Chromium opens); the test reads the app's own DOM and
console.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator

import pytest
from browsing import WAIT, app_command, app_frame, browser, frame_follows_app, npm_app_server, until

from mcp_sync.apps.web import PAGE_SILENCE, POLL_WAIT

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

VANILLAJS = "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")


@pytest.fixture
def shown() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``mcp-sync app ... get-time --no-browser`` running; its process and the page's URL."""
    with app_command(npm_app_server(VANILLAJS), "get-time") as running:
        yield running


def test_the_app_renders_gets_its_input_and_result_calls_the_server_resizes_and_is_torn_down(
    shown: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = shown
    with browser() as chromium:
        page = chromium.new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        page.goto(url, timeout=WAIT * 1000)

        # Three frames: the page, the sandbox proxy on the other port, the app inside it (same port as the proxy).
        app = app_frame(page)
        proxy = app.parent_frame
        assert proxy is not None and "/sandbox/" in proxy.url and proxy.parent_frame == page.main_frame
        page_port, sandbox_port = url.split(":")[2].split("/")[0], proxy.url.split(":")[2].split("/")[0]
        assert page_port != sandbox_port and app.url.split(":")[2].split("/")[0] == sandbox_port

        # The handshake completed and the tool's input and result arrived: the app shows the server's time.
        first = until(
            lambda: ISO_TIME.fullmatch(app.locator("#server-time").inner_text()), "the tool result", page
        ).group()
        until(lambda: any("Received tool call input" in line for line in console), "the tool input", page)

        # The app's own button: a tools/call through the host to the server, whose answer the app shows.
        app.locator("#get-time-btn").click()
        second = until(
            lambda: (text := app.locator("#server-time").inner_text()) != first and ISO_TIME.fullmatch(text),
            "a new time",
            page,
        ).group()
        assert second > first
        assert any("get-time result" in line for line in console)

        # size-changed: the frame follows the app's height.
        frame_follows_app(page, app)

        # Ctrl-C: ui/resource-teardown is sent, the app answers, the page is told, the command ends.
        process.send_signal(signal.SIGINT)
        until(lambda: page.locator("body[data-closed]").count() == 1, "the page to hear the view closed", page)
        assert page.locator("#status").inner_text() == "closed: the host is closing"
        assert any("App is being torn down" in line for line in console)
        _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0, stderr
    assert "mcp-sync: closed (the app)" in stderr


def test_the_command_ends_when_the_page_closes(shown: tuple[subprocess.Popen[str], str]) -> None:
    process, url = shown
    with browser() as chromium:
        page = chromium.new_page()
        page.goto(url, timeout=WAIT * 1000)
        app = app_frame(page)
        until(lambda: ISO_TIME.fullmatch(app.locator("#server-time").inner_text()), "the tool result", page)
        page.close(run_before_unload=True)
        # Its beacon ends the command at once; a beacon the browser dropped, once the page's last poll is over.
        _, stderr = process.communicate(timeout=WAIT + POLL_WAIT + PAGE_SILENCE)
    assert process.returncode == 0, stderr
    assert "mcp-sync: the page closed" in stderr
