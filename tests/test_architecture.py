"""The package's layers, enforced: which layer may import which, and no import cycle.

Every import inside ``mcp_sync`` (module level, inside functions, and under
``TYPE_CHECKING``) is read from the source with :mod:`ast` and checked
against :data:`MAY_IMPORT`. Modules directly under ``mcp_sync/`` form the
composition level (``connect``, ``cli``, ``compose``, the package itself and
the public faces ``types`` and ``errors``) and may import anything; nothing
in a layer imports them. Each package's docstring states its row of the table
(its ``May import:`` and ``Must not import:`` lines), and is held to it.
"""

from __future__ import annotations

import ast
import re
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
    "llm": {"llm", "client", "runtime", "protocol"},
    "apps": {"apps", "client", "runtime", "protocol"},
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


def packages() -> dict[str, Path]:
    """Every package of ``mcp_sync`` (the composition level and each layer's packages and sub-packages)."""
    return {name: path for name, path in modules().items() if path.name == "__init__.py"}


def rule_of(package: str) -> dict[str, set[str]]:
    """What each rule line of ``package``'s docstring must name, by :data:`MAY_IMPORT` and :data:`SERVER_HOSTING`.

    The lines start with ``May import:``, ``Must not import:`` and ``Hosting:``. A sub-package has its layer's
    row; the composition level's ``May import:`` says ``anything``. An empty set: the docstring must have no such
    line (nothing is forbidden to the composition level; only the server hosts).
    """
    source = layer(package)
    hosts = {name.rpartition(".")[2] for name in SERVER_HOSTING if f"mcp_sync.{name.rpartition('.')[0]}" == package}
    return {
        "May import:": {"anything"} if source is None else MAY_IMPORT[source],
        "Must not import:": set() if source is None else set(MAY_IMPORT) - MAY_IMPORT[source],
        "Hosting:": hosts | {"transports"} if hosts else set(),
    }


def named_on(docstring: str, label: str) -> list[set[str]]:
    """For each line of ``docstring`` that starts with ``label``, the names in double backquotes on it.

    A line that goes on with the word ``anything`` names ``anything``.
    """
    found = []
    for line in docstring.splitlines():
        text = line.strip()
        if text.startswith(label):
            rest = text[len(label) :].strip()
            found.append(
                set(re.findall(r"``([\w.]+)``", rest)) | ({"anything"} if rest.startswith("anything") else set())
            )
    return found


def docstring_disagreements(package: str, docstring: str | None) -> list[str]:
    """Where ``package``'s docstring states a layer rule other than the table's (or states none)."""
    found = []
    for label, expected in rule_of(package).items():
        lines = named_on(docstring or "", label)
        if not expected:
            if lines:
                found.append(f"{package}: a {label!r} line, where the table has none")
        elif len(lines) != 1:
            found.append(f"{package}: {len(lines)} lines start with {label!r}, not one")
        elif lines[0] != expected:
            found.append(f"{package}: {label!r} names {sorted(lines[0])}, the table {sorted(expected)}")
    return found


def package_disagreements(package: str) -> list[str]:
    """:func:`docstring_disagreements` of the docstring of ``package``'s ``__init__.py``."""
    tree = ast.parse(packages()[package].read_text(encoding="utf-8"))
    return docstring_disagreements(package, ast.get_docstring(tree))


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
            ".testing",
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


@pytest.mark.parametrize("package", sorted(packages()))
def test_each_package_docstring_states_its_row_of_the_table(package: str) -> None:
    """The ``May import:`` and ``Must not import:`` lines of the package's docstring name exactly its row's layers.

    So the docstrings and :data:`MAY_IMPORT` cannot drift apart: a layer added to or taken from a row fails here
    until the docstrings of that layer's packages say so too.
    """
    assert package_disagreements(package) == []


def test_the_docstring_check_sees_a_disagreement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check refuses a missing, doubled, short, long or misplaced rule line, and finds the package that has one."""
    display = "Display.\n\nMay import: ``display``, ``protocol``.\n"
    display += "Must not import: ``runtime``, ``transports``, ``client``, ``server``, ``llm``, ``apps``, "
    display += "nor the composition level.\n"
    assert docstring_disagreements("mcp_sync.display", display) == []
    assert docstring_disagreements("mcp_sync.display.charts", display) == []  # a sub-package has its layer's row
    assert docstring_disagreements("mcp_sync.client", display) == [
        "mcp_sync.client: 'May import:' names ['display', 'protocol'], the table "
        "['client', 'display', 'protocol', 'runtime', 'transports']",
        "mcp_sync.client: 'Must not import:' names ['apps', 'client', 'llm', 'runtime', 'server', 'transports'], "
        "the table ['apps', 'llm', 'server']",
    ]
    short = display.replace("``display``, ``protocol``", "``display``")
    assert docstring_disagreements("mcp_sync.display", short) == [
        "mcp_sync.display: 'May import:' names ['display'], the table ['display', 'protocol']"
    ]
    long = display.replace("``protocol``.", "``protocol``, ``runtime``.")
    assert docstring_disagreements("mcp_sync.display", long) == [
        "mcp_sync.display: 'May import:' names ['display', 'protocol', 'runtime'], the table ['display', 'protocol']"
    ]
    assert docstring_disagreements("mcp_sync.display", None) == [
        "mcp_sync.display: 0 lines start with 'May import:', not one",
        "mcp_sync.display: 0 lines start with 'Must not import:', not one",
    ]
    assert docstring_disagreements("mcp_sync.display", display + "May import: ``display``, ``protocol``.\n") == [
        "mcp_sync.display: 2 lines start with 'May import:', not one"
    ]
    assert docstring_disagreements("mcp_sync.display", display + "Hosting: ``stdio`` may import ``transports``.\n") == [
        "mcp_sync.display: a 'Hosting:' line, where the table has none"
    ]
    server = "May import: ``server``, ``runtime``, ``protocol``.\n"
    server += "Must not import: ``client``, ``transports``, ``display``, ``llm``, ``apps``.\n"
    assert docstring_disagreements("mcp_sync.server", server) == [
        "mcp_sync.server: 0 lines start with 'Hosting:', not one"
    ]
    assert docstring_disagreements("mcp_sync.server", server + "Hosting: ``stdio`` also ``transports``.\n") == []
    assert docstring_disagreements("mcp_sync", "May import: anything.\n") == []
    assert docstring_disagreements("mcp_sync", "May import: ``protocol``.\n") == [
        "mcp_sync: 'May import:' names ['protocol'], the table ['anything']"
    ]

    root = tmp_path / "mcp_sync"
    (root / "protocol" / "types").mkdir(parents=True)
    (root / "__init__.py").write_text('"""May import: anything."""\n')
    rule = '"""May import: ``protocol``.\n'
    rule += 'Must not import: ``client``, ``server``, ``display``, ``runtime``, ``llm``, ``apps``, ``{}``.\n"""\n'
    (root / "protocol" / "__init__.py").write_text(rule.format("transports"))
    (root / "protocol" / "types" / "__init__.py").write_text(rule.format("types"))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    assert sorted(packages()) == ["mcp_sync", "mcp_sync.protocol", "mcp_sync.protocol.types"]
    assert [line for name in packages() for line in package_disagreements(name)] == [
        "mcp_sync.protocol.types: 'Must not import:' names "
        "['apps', 'client', 'display', 'llm', 'runtime', 'server', 'types'], "
        "the table ['apps', 'client', 'display', 'llm', 'runtime', 'server', 'transports']"
    ]


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
