"""``import mcp_sync`` stays light, and its lazy names resolve (the layer rules are in test_architecture.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mcp_sync


def test_import_mcp_sync_is_light() -> None:
    code = (
        "import sys, mcp_sync\n"
        "heavy = [m for m in ('requests', 'sseclient', 'opentelemetry', 'mcp_sync.client', 'mcp_sync.server')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""


def test_lazy_exports_resolve_and_unknown_names_fail() -> None:
    assert mcp_sync.MCPServer.__name__ == "MCPServer"
    assert "MCPClient" in dir(mcp_sync)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = mcp_sync.Nope  # type: ignore[attr-defined]
