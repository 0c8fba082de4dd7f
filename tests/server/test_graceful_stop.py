"""The app notices that the gunicorn worker hosting it was told to stop, in this process.

A gunicorn worker installs its ``handle_exit`` method as the SIGTERM handler
and sets ``alive`` to false when it runs. Here a real gunicorn worker object
(made without its process machinery, which plays no part) plays that role in
the test process, and the app is served by the embedded server: on SIGTERM
the app closes, its GET and listen streams end, and later requests get 503.
``tests/server/test_hosting.py`` does the same under real gunicorn.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mcp_sync import MCPServer
from mcp_sync.client import http_client
from mcp_sync.server import StreamableHTTPApp, start_http
from mcp_sync.server.http.hosting import gunicorn_worker_stopping

gunicorn_sync = pytest.importorskip("gunicorn.workers.sync")

WAIT = 10.0
BOTH = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stop", "version": "1"}},
}


@pytest.fixture
def worker() -> Iterator[Any]:
    """A gunicorn worker's SIGTERM handler in place, as in a worker process (restored after)."""
    worker = object.__new__(gunicorn_sync.SyncWorker)
    worker.alive = True
    previous = signal.signal(signal.SIGTERM, worker.handle_exit)
    yield worker
    signal.signal(signal.SIGTERM, previous)


def build() -> MCPServer:
    server = MCPServer("graceful")
    server.register_tool("echo", lambda args, ctx: args.get("text", ""), description="echo")
    return server


class GetStream:
    """A handshake-era session's standalone GET stream, read on a thread until it ends."""

    def __init__(self, url: str) -> None:
        headers = {"Accept": BOTH, "Content-Type": "application/json"}
        answer = requests.post(url, json=INITIALIZE, headers=headers, timeout=WAIT)
        session = {"Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        requests.post(url, json=initialized, headers={**headers, **session}, timeout=WAIT)
        self.response = requests.get(url, headers={"Accept": "text/event-stream", **session}, stream=True, timeout=WAIT)
        assert self.response.status_code == 200
        self.ended = threading.Event()
        self._reader = threading.Thread(target=self._read, name="test-get-stream", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with contextlib.suppress(requests.RequestException, OSError, ValueError):
            while self.response.raw.read1(65536):
                pass
        self.ended.set()

    def close(self) -> None:
        self.response.close()
        self._reader.join(WAIT)


def test_the_stopping_check_follows_the_worker(worker: Any) -> None:
    stopping = gunicorn_worker_stopping()
    assert stopping is not None and not stopping()
    signal.raise_signal(signal.SIGTERM)  # the worker's handler runs: alive is now false
    assert stopping()


def test_outside_a_gunicorn_worker_there_is_nothing_to_watch() -> None:
    assert gunicorn_worker_stopping() is None
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        assert gunicorn_worker_stopping() is None  # a handler, but no worker's
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_app_outside_a_gunicorn_worker_starts_no_watch() -> None:
    with start_http(build()) as running, http_client(running.url, connect_timeout=WAIT) as client:
        client.ping(timeout=WAIT)
        assert running.app._stop_watch is None


def test_sigterm_to_the_worker_closes_the_app_and_ends_its_streams(worker: Any) -> None:
    with start_http(build()) as running:
        get = GetStream(running.url)
        client = http_client(running.url, connect_timeout=WAIT)
        try:
            assert client.protocol_version == "2026-07-28"
            subscription = client.listen(tools=True, timeout=WAIT)
            assert not get.ended.is_set() and not subscription.done.is_set()
            signal.raise_signal(signal.SIGTERM)
            assert get.ended.wait(WAIT)
            assert subscription.wait(WAIT)
            assert subscription.error is None  # ended with its result
            refused = requests.post(running.url, json=INITIALIZE, headers={"Accept": BOTH}, timeout=WAIT)
            assert refused.status_code == 503
        finally:
            client.close()
            get.close()


def test_the_watch_ends_with_the_app_when_the_worker_never_stops(worker: Any) -> None:
    with start_http(build()) as running, http_client(running.url, connect_timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "hi"}, timeout=WAIT).text == "hi"
        watch = running.app._stop_watch
        assert watch is not None
    assert running.app._stop_watch is None
    assert worker.alive  # nothing told it to stop; closing the app ended the watch (the suite checks its thread)


def test_an_app_closed_before_its_first_request_watches_nothing(worker: Any) -> None:
    app = StreamableHTTPApp(build())
    app.close()
    statuses: list[str] = []
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/mcp", "wsgi.input": io.BytesIO()}
    app(environ, lambda status, headers: statuses.append(status))
    assert statuses == ["503 Service Unavailable"]
    assert app._stop_watch is None
