"""The package's layers, enforced: which layer may import which, and no import cycle.

Every import inside ``mcp_sync`` (module level, inside functions, and under
``TYPE_CHECKING``) is read from the source with :mod:`ast` and checked
against :data:`MAY_IMPORT`. Modules directly under ``mcp_sync/`` form the
composition level (``connect``, ``cli``, ``compose``, the package itself and
the public faces ``types`` and ``errors``) and may import anything; nothing
in a layer imports them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_sync

PACKAGE = Path(mcp_sync.__file__).parent

MAY_IMPORT = {
    "protocol": {"protocol"},
    "runtime": {"runtime", "protocol"},
    "transports": {"transports", "runtime", "protocol"},
    "display": {"display", "protocol"},
    "client": {"client", "transports", "runtime", "protocol", "display"},
    "server": {"server", "runtime", "protocol"},
}
"""Layer -> the layers its modules may import (the composition level may import anything)."""

SERVER_HOSTING = ("server.stdio",)
"""The server modules that host a server on a transport, and so may import ``transports``: only stdio hosting, on
the stdio framing (the HTTP server is its own carrier; outbound HTTP is in ``runtime.http``)."""

IO_MODULES = {"socket", "subprocess", "http", "requests", "sseclient", "asyncio", "urllib3", "selectors", "select"}
"""Standard and third-party modules that do I/O; the pure layer and the roles' cores import none."""

PURE = [
    "mcp_sync.protocol.types",
    "mcp_sync.protocol.messages",
    "mcp_sync.protocol.versions",
    "mcp_sync.protocol.stateless",
]
PURE += ["mcp_sync.protocol.headers", "mcp_sync.protocol.schema", "mcp_sync.server.core", "mcp_sync.client.core"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path, known: set[str]) -> Iterator[tuple[str, bool, int]]:
    """``(imported module, under TYPE_CHECKING, line)`` for each import of a module of the package."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def resolve(base: str, name: str) -> str:
        full = f"{base}.{name}" if base else name
        return full if full in known else base  # ``from . import x``: a module, or a name of the package

    def visit(node: ast.AST, typing_only: bool) -> Iterator[tuple[str, bool, int]]:
        if isinstance(node, ast.If) and is_type_checking(node):
            for child in node.body:
                yield from visit(child, True)
            for child in node.orelse:
                yield from visit(child, typing_only)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                root = ".".join([*base, node.module] if node.module else base)
            else:
                root = node.module or ""
            if root == "mcp_sync" or root.startswith("mcp_sync."):
                for alias in node.names:
                    yield resolve(root, alias.name), typing_only, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mcp_sync"):
                    yield alias.name, typing_only, node.lineno
        for child in ast.iter_child_nodes(node):
            yield from visit(child, typing_only)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False)


def layer(module: str) -> str | None:
    """The layer of a module (``None``: the composition level)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in MAY_IMPORT) else None


def graph(*, typing_edges: bool) -> dict[str, set[str]]:
    known = set(modules())
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in modules().items():
        for target, typing_only, _ in imports(path, known):
            if target != name and (typing_edges or not typing_only):
                edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def violations() -> list[str]:
    known = set(modules())
    found = []
    for name, path in modules().items():
        source = layer(name)
        if source is None:
            continue
        for target, _, line in imports(path, known):
            hosting = name[len("mcp_sync.") :].startswith(SERVER_HOSTING)
            allowed = MAY_IMPORT[source] | ({"transports"} if hosting else set())
            if layer(target) not in allowed:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {name} ({source}) imports {target}")
    return found


def test_every_module_has_a_layer_or_is_composition() -> None:
    composition = sorted(name for name in modules() if layer(name) is None)
    assert composition == sorted(
        f"mcp_sync{suffix}"
        for suffix in (
            "",
            ".__main__",
            ".cli",
            ".connect",
            ".errors",
            ".compose",
            ".types",
        )
    )


def test_no_import_runs_up_a_layer() -> None:
    assert violations() == []


def test_no_import_cycle_at_run_time() -> None:
    """Counting imports inside functions: no cycle at all, inside a layer or across layers."""
    assert cycles(graph(typing_edges=False)) == []


def test_typing_only_cycles_stay_inside_one_package() -> None:
    for component in cycles(graph(typing_edges=True)):
        packages = {name.rpartition(".")[0] for name in component}
        assert len(packages) == 1, component


def test_the_checks_see_a_violation_and_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner finds an upward import inside a function, and a cycle, when there is one."""
    root = tmp_path / "mcp_sync"
    (root / "protocol").mkdir(parents=True)
    (root / "client").mkdir()
    (root / "__init__.py").write_text("")
    (root / "protocol" / "__init__.py").write_text("")
    (root / "client" / "__init__.py").write_text("")
    (root / "protocol" / "types.py").write_text("def f():\n    from ..client.core import MCPClient\n")
    (root / "client" / "core.py").write_text("from ..protocol import types\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    assert violations() == [
        "mcp_sync/protocol/types.py:2: mcp_sync.protocol.types (protocol) imports mcp_sync.client.core"
    ]
    assert cycles(graph(typing_edges=False)) == [{"mcp_sync.protocol.types", "mcp_sync.client.core"}]


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_load_no_io_module(module: str) -> None:
    """Importing a pure module, in a fresh interpreter, loads no I/O module (directly or through others).

    Two views, so the answer does not depend on what the installed pydantic
    happens to load itself: every ``import`` statement a module of the package
    runs while it loads is seen through ``builtins.__import__`` (an I/O module
    already loaded by a dependency still counts), and every I/O module that
    importing ``module`` adds to ``sys.modules`` counts too.
    """
    code = (
        "import builtins, sys, pydantic\n"
        f"io = {IO_MODULES!r}\n"
        "before = set(sys.modules)\n"
        "found = set()\n"
        "real = builtins.__import__\n"
        "def spy(name, globals=None, locals=None, fromlist=(), level=0):\n"
        "    importer = (globals or {}).get('__name__') or ''\n"
        "    if level == 0 and importer.startswith('mcp_sync') and name.split('.')[0] in io:\n"
        "        found.add(importer + ' imports ' + name)\n"
        "    return real(name, globals, locals, fromlist, level)\n"
        "builtins.__import__ = spy\n"
        f"import {module}\n"
        "builtins.__import__ = real\n"
        "found |= {'loaded ' + m for m in set(sys.modules) - before if m.split('.')[0] in io}\n"
        "print(','.join(sorted(found)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""
