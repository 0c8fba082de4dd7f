"""Headless Chromium (Debian's, never a download) driven by Playwright, and an AppHost served on two loopback ports.

Chromium runs without its own sandbox when the tests run as root (CI
containers), with a fresh temporary profile (Playwright's default). Without
Chromium or Playwright the tests skip, except where nothing may skip
(``peers.required()``): there they fail.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import peers

from mcp_sync.apps import AppHost
from mcp_sync.server.http.wsgi import WSGIServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Frame, Page

WAIT = 20.0
"""The longest a browser step may take (seconds)."""


@contextlib.contextmanager
def browser() -> Iterator[Browser]:
    """A headless Chromium, closed (with its processes) at the end."""
    path = peers.chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        peers.unavailable("playwright is not installed (pip install playwright; no browser download needed)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=peers.chromium_flags(), timeout=WAIT * 1000)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def served_host(**options: Any) -> Iterator[AppHost]:
    """An :class:`AppHost` on two ports of 127.0.0.1 (page and sandbox), as ``mcp-sync app`` serves it."""

    def unbound(environ: Any, start_response: Any) -> list[bytes]:
        raise AssertionError("not started yet")

    with WSGIServer(unbound, "127.0.0.1", 0) as page, WSGIServer(unbound, "127.0.0.1", 0) as sandbox:
        host = AppHost(page.url, sandbox.url, **options)
        page.app = sandbox.app = host
        page.on_close(host.close)
        sandbox.on_close(host.close)
        yield host


def until(condition: Callable[[], Any], what: str, page: Page | None = None, wait: float = WAIT) -> Any:
    """Poll ``condition`` until it returns something true (which is returned), for at most ``wait`` seconds.

    With a ``page``, the pauses are the page's own, so that Playwright takes in the browser's events meanwhile
    (frames attached, console messages): its synchronous API does only while one of its calls runs.
    """
    deadline = time.monotonic() + wait
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        if page is not None:
            page.wait_for_timeout(50)
        else:
            time.sleep(0.05)


def npm_app_server(spec: str) -> str:
    """The command that runs the npm package ``spec`` (an official example app server) over stdio."""
    package = peers.npm_package_dir(spec)
    return f"{peers.require('node')} {peers.node_entry(package)} --stdio"


@contextlib.contextmanager
def app_command(server: str, tool: str, *arguments: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``mcp-sync app SERVER TOOL ARGUMENTS... --no-browser`` running: its process and the page's URL (killed after)."""
    argv = [sys.executable, "-m", "mcp_sync", "app", server, tool, *arguments, "--no-browser"]
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "token=" in url, process.communicate(timeout=WAIT)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=WAIT)


def app_frame(page: Page) -> Frame:
    """The app's own frame in the page of ``mcp-sync app`` (inside the sandbox proxy), once it is attached."""
    found: Frame = until(lambda: next((f for f in page.frames if "/app?" in f.url), None), "the app's frame", page)
    return found


def frame_follows_app(page: Page, app: Frame, selector: str = "iframe") -> float:
    """Wait until the page's frame (``selector``) is as high as the app's document (size-changed); that height."""
    height: float = app.evaluate("() => document.documentElement.getBoundingClientRect().height")
    frame = page.locator(selector)
    until(lambda: abs(frame.bounding_box()["height"] - height) <= 2, "the frame to follow size-changed", page)
    return height
