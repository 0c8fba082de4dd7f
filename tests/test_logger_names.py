"""Every logger of ``mcp_sync`` is named after its module: ``logging.getLogger(__name__)``.

So the loggers form the package's tree (``mcp_sync.runtime.dispatcher``,
``mcp_sync.server.http.wsgi``, ...) and ``logging.getLogger("mcp_sync")``, or
the logger of one package such as ``"mcp_sync.server"``, configures all of
them below it. Every ``getLogger(...)`` call in a module under ``mcp_sync/``
is read with :mod:`ast`; its one argument must be ``__name__`` or a name of
:data:`PUBLIC_LOGGERS`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import mcp_sync

PACKAGE = Path(mcp_sync.__file__).parent

PUBLIC_LOGGERS: dict[str, str] = {
    "mcp_sync.server_log": (
        "carries the log messages an MCP server sends its client (notifications/message), not mcp_sync's own: "
        "the README names it for applications to configure"
    ),
}
"""Logger names that are not a module's, and why each is public."""


def logger_calls(tree: ast.Module) -> list[ast.Call]:
    """The ``logging.getLogger(...)`` and (imported) ``getLogger(...)`` calls of a module."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "getLogger")
            or (isinstance(node.func, ast.Name) and node.func.id == "getLogger")
        )
    ]


def argument(call: ast.Call) -> ast.expr | None:
    """The logger name a ``getLogger`` call passes (positional or ``name=``), ``None`` for none or too many."""
    if len(call.args) == 1 and not call.keywords:
        return call.args[0]
    if not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "name":
        return call.keywords[0].value
    return None


def named_after_its_module(call: ast.Call) -> bool:
    """Whether a ``getLogger`` call passes ``__name__``."""
    name = argument(call)
    return isinstance(name, ast.Name) and name.id == "__name__"


def public_name(call: ast.Call) -> str | None:
    """The public logger name a ``getLogger`` call passes, if it passes one of :data:`PUBLIC_LOGGERS`."""
    name = argument(call)
    if isinstance(name, ast.Constant) and name.value in PUBLIC_LOGGERS:
        return str(name.value)
    return None


def scan() -> tuple[list[str], set[str]]:
    """Every logger not named after its module nor public, as ``path:line: call``, and the public names used."""
    found: list[str] = []
    used: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for call in logger_calls(ast.parse(path.read_text(encoding="utf-8"))):
            public = public_name(call)
            if public is not None:
                used.add(public)
            elif not named_after_its_module(call):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{call.lineno}: {ast.unparse(call)}")
    return found, used


def test_every_logger_is_named_after_its_module() -> None:
    found, _ = scan()
    assert not found, "loggers not named after their module (getLogger(__name__)):\n" + "\n".join(found)


def test_every_public_logger_name_is_still_used() -> None:
    _, used = scan()
    stale = sorted(set(PUBLIC_LOGGERS) - used)
    assert not stale, f"public logger names no module uses any more (remove them from PUBLIC_LOGGERS): {stale}"


def test_the_scan_sees_a_badly_named_logger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner reports a logger named otherwise, passes ``__name__`` and public names, and sees a stale one."""
    root = tmp_path / "mcp_sync"
    root.mkdir()
    (root / "__init__.py").write_text("import logging\nlog = logging.getLogger(__name__)\n")
    (root / "bad.py").write_text(
        "import logging\n"
        "from logging import getLogger\n"
        "one = logging.getLogger('mcp_sync.http')\n"
        "two = getLogger()\n"
        "three = logging.getLogger(name=__name__)\n"
        "four = logging.getLogger(__name__ + '.wire')\n"
        "five = logging.getLogger('mcp_sync.public')\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    public = {"mcp_sync.public": "a test", "mcp_sync.gone": "a test"}
    monkeypatch.setattr(sys.modules[__name__], "PUBLIC_LOGGERS", public)
    found, used = scan()
    assert found == [
        "mcp_sync/bad.py:3: logging.getLogger('mcp_sync.http')",
        "mcp_sync/bad.py:4: getLogger()",
        "mcp_sync/bad.py:6: logging.getLogger(__name__ + '.wire')",
    ]
    assert used == {"mcp_sync.public"}
