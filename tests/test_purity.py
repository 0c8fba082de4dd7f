"""The core stays free of I/O modules, and ``import mcp_sync`` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_sync

PACKAGE = Path(mcp_sync.__file__).parent
CORE = ["types", "errors", "jsonrpc", "dispatcher", "server", "session", "client", "context", "revisions"]
CORE += ["telemetry", "events", "transport", "__init__"]
FORBIDDEN = {"socket", "subprocess", "http", "requests", "sseclient", "asyncio", "urllib3", "selectors"}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_no_io_module(module: str) -> None:
    assert imported_modules(PACKAGE / f"{module}.py") & FORBIDDEN == set()


def test_the_check_would_see_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import socket\nfrom http.client import HTTPConnection\nfrom . import types\n")
    assert imported_modules(sample) == {"socket", "http"}


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
