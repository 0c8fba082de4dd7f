"""Every registered error code is raised by a real call site during the suite.

``conftest.py`` records the code of every MCPError that library code builds
while the tests run (not the tests themselves, the registry, or the decoder
of a peer's error); ``conftest.py`` moves this module's tests to the end of
the run, where the record is checked once the rest of the suite has run.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from conftest import RAISED_CODES

from mcp_sync import MCPServer
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.runtime.dispatcher import error_from_wire
from mcp_sync.types import Error


def test_only_library_call_sites_are_recorded() -> None:
    recorded = set(RAISED_CODES)
    RAISED_CODES.clear()
    try:
        built_here = MCPError(MCP_CODES.TIMEOUT, "built by a test")
        pickle.loads(pickle.dumps(built_here))
        decoded = error_from_wire(Error(code=-32700, message="a peer's parse error"), "tools/call")
        assert decoded.code == MCP_CODES.PARSE_ERROR
        seen = set(RAISED_CODES)
        assert seen == set()
        server = MCPServer("twice")
        server.register_tool("t", lambda args, ctx: "x")
        with pytest.raises(MCPError):
            server.register_tool("t", lambda args, ctx: "x")
        seen = set(RAISED_CODES)
        assert seen == {MCP_CODES.DUPLICATE_REGISTRATION}
    finally:
        RAISED_CODES.update(recorded)


def test_every_registered_code_is_reachable_from_a_real_call_site(request: pytest.FixtureRequest) -> None:
    collected = {Path(str(item.path)).name for item in request.session.items}
    every_test_file = {path.name for path in Path(__file__).parent.rglob("test_*.py")}
    selected = request.config.getoption("keyword") or request.config.getoption("markexpr")
    if not every_test_file <= collected or selected:
        pytest.skip("needs the whole suite: run without selecting tests")
    missing = sorted(set(MCP_CODES) - RAISED_CODES)
    assert missing == []
