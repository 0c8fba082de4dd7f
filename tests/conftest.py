"""Shared fixtures.

Every test is checked for leaked threads: a thread started by mcp_sync (its
name starts with ``mcp-sync``) that is still alive shortly after the test
ends fails the test. The code of every MCPError built by library
code (not by a test, the registry or the wire decoder) is recorded, for the
reachability test of the error registry.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import peers
import pytest

import mcp_sync
from mcp_sync.errors import MCPError

# Server and peer scripts run as subprocesses (some with another project's packages): not test modules.
collect_ignore_glob = ["servers/*", "peers_py/*"]

# No interactive defaults (prompts for the server's questions), even under ``pytest -s`` in a terminal:
# the tests of those defaults turn them on where they need them.
os.environ.setdefault("MCP_SYNC_INTERACTIVE", "0")

RAISED_CODES: set[str] = set()

_original_init = MCPError.__init__
_LIBRARY = Path(mcp_sync.__file__).resolve().parent
_NOT_A_RAISE_SITE = {
    # The registry itself (and pickling's rebuild), and the decoder that turns a
    # peer's JSON-RPC error into an exception: neither decides that a failure happened.
    (_LIBRARY / "protocol" / "errors.py", None),
    (_LIBRARY / "runtime" / "dispatcher.py", "error_from_wire"),
}


def library_raise_site(frame: FrameType) -> bool:
    """Whether the frame that built an error is library code (not a test, a doctest, the registry or the decoder)."""
    path = Path(frame.f_code.co_filename).resolve()
    if not path.is_relative_to(_LIBRARY):
        return False
    return (path, None) not in _NOT_A_RAISE_SITE and (path, frame.f_code.co_name) not in _NOT_A_RAISE_SITE


def _recording_init(self: MCPError, code: str, *args: object, **kwargs: object) -> None:
    if library_raise_site(sys._getframe(1)):
        RAISED_CODES.add(code)
    _original_init(self, code, *args, **kwargs)  # type: ignore[arg-type]


MCPError.__init__ = _recording_init  # type: ignore[method-assign]


INTEROP_DIR = Path(__file__).resolve().parent / "interop"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in ``tests/interop`` is marked ``interop``; the error-code check runs last, once every other
    test (and doctest) has had its chance to raise."""
    for item in items:
        if item.path.is_relative_to(INTEROP_DIR):
            item.add_marker(peers.MARK)
    last = [item for item in items if item.path.name == "test_error_codes_are_raised.py"]
    items[:] = [item for item in items if item not in last] + last


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Only a test marked ``interop`` may use a peer: set before its fixtures (a module's may install one)."""
    peers.installs_allowed = item.get_closest_marker(peers.MARK) is not None


FAILED_SKIPS: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Where nothing may skip (CI, or ``MCP_SYNC_REQUIRE_INTEROP=1``), a skip is a failure that says why it skipped."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and peers.required():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        FAILED_SKIPS.append(report.nodeid)
        report.longrepr = f"skipped where nothing may skip (CI or {peers.REQUIRE_ENV}=1): {reason}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = len(terminalreporter.stats.get("skipped", [])) + len(FAILED_SKIPS)
    if peers.required():
        terminalreporter.write_line(f"mcp_sync: {skipped} skipped, each a failure here (CI or {peers.REQUIRE_ENV}=1)")
    else:
        terminalreporter.write_line(f"mcp_sync: {skipped} skipped (allowed outside CI)")


def mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-sync")]


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(mcp_threads())
    yield
    deadline = time.monotonic() + 2.0
    leaked = [t for t in mcp_threads() if t not in before]
    while leaked and time.monotonic() < deadline:
        time.sleep(0.01)
        leaked = [t for t in mcp_threads() if t not in before and t.is_alive()]
    assert not leaked, f"threads left running: {[t.name for t in leaked]}"
