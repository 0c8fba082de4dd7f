"""Shared fixtures.

Every test is checked for leaked threads: a thread started by mcp_sync (its
name starts with ``mcp-sync``) that is still alive shortly after the test
ends fails the test. Every MCPError created anywhere in the run is recorded,
for the reachability test of the error registry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from mcp_sync.errors import MCPError

# Server scripts run as subprocesses (some with another project's packages): not test modules.
collect_ignore_glob = ["servers/*"]

RAISED_CODES: set[str] = set()

_original_init = MCPError.__init__


def _recording_init(self: MCPError, code: str, *args: object, **kwargs: object) -> None:
    RAISED_CODES.add(code)
    _original_init(self, code, *args, **kwargs)  # type: ignore[arg-type]


MCPError.__init__ = _recording_init  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The error-code check runs last, once every other test (and doctest) has had its chance to raise."""
    last = [item for item in items if item.path.name == "test_error_codes_are_raised.py"]
    items[:] = [item for item in items if item not in last] + last


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
