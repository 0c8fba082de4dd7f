"""Every registered error code is raised by a real call site during the suite.

``conftest.py`` records the code of every MCPError created while the tests
run; ``conftest.py`` moves this module's test to the end of the run, where
it checks the record once the rest of the suite has run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RAISED_CODES

from mcp_sync.errors import MCP_CODES


def test_every_registered_code_is_reachable_from_a_real_call_site(request: pytest.FixtureRequest) -> None:
    collected = {Path(str(item.path)).name for item in request.session.items}
    every_test_file = {path.name for path in Path(__file__).parent.rglob("test_*.py")}
    if not every_test_file <= collected or request.config.getoption("keyword"):
        pytest.skip("needs the whole suite: run without selecting tests")
    missing = sorted(set(MCP_CODES) - RAISED_CODES)
    assert missing == []
