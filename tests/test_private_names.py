"""No module of ``mcp_sync`` touches another module's private (underscore) names.

Every module under ``mcp_sync/`` is read with :mod:`ast`. ``X._name`` (one
leading underscore, not a dunder; also ``getattr``/``hasattr``/``delattr``
of ``X`` and the constant ``"_name"``) is an access to a private name unless
``X`` is ``self``, ``cls`` or ``super()``, or ``_name`` is the module's own:
a function, class or method it defines, a name it assigns at module or
class level (``__slots__`` entries included), or an attribute it assigns
anywhere (``self._name = ...``, ``obj._name = ...``). ``from mod import
_name`` always takes another module's private name.

Two kinds of access are not private. :data:`PUBLIC_PROTOCOLS` are public
protocols that happen to be spelled with an underscore. :data:`ALLOWED` are
private hooks of third-party libraries that the package needs and that no
public API replaces, each with its reason; an entry no access uses any more
fails the suite, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_sync

PACKAGE = Path(mcp_sync.__file__).parent

PUBLIC_PROTOCOLS = re.compile(r"_(replace|asdict|fields|field_defaults|make)|_repr_[a-z]+_")
"""Names spelled private that are public protocols: :func:`~collections.namedtuple`'s methods and attributes, and
IPython's rich display methods (``_repr_html_``, ``_repr_mimebundle_``, ...)."""

# ClosableAdapter (runtime.http) must know which connection a thread's request holds, from the moment its pool hands
# it out until it goes back, to shut it down when the request's time is up; a widget form (client.widget_form) needs
# a kernel subshell of its own while its cell runs. Tracing reads the provider on every request.
ALLOWED: dict[tuple[str, str], str] = {
    ("mcp_sync.runtime.http", "_get_conn"): "urllib3 has no public hook for a pool handing out a connection",
    ("mcp_sync.runtime.http", "_put_conn"): "urllib3 has no public hook for a connection going back to its pool",
    ("mcp_sync.runtime.tracing", "_TRACER_PROVIDER"): "get_tracer_provider() reads os.environ each call (~1.7 us)",
    ("mcp_sync.client.widget_form", "_create_subshell"): "ipykernel makes subshells publicly only for a frontend",
    ("mcp_sync.client.widget_form", "_delete_subshell"): "ipykernel ends subshells publicly only for a frontend",
}
"""``(module, attribute)`` -> why ``module`` may use that private name of a third-party library."""

ATTRIBUTE_FUNCTIONS = ("getattr", "hasattr", "delattr")
"""Builtins whose second argument, a constant string, names an attribute read (or removed) like ``X.name``."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_private(name: str) -> bool:
    """Whether ``name`` is private: a leading underscore, and not a dunder (``__init__``) nor a public protocol."""
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and not dunder and not PUBLIC_PROTOCOLS.fullmatch(name)


def slots(node: ast.AST) -> set[str]:
    """The names a ``__slots__ = (...)`` assignment declares (none for any other statement)."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return set()
    if not any(isinstance(target, ast.Name) and target.id == "__slots__" for target in targets):
        return set()
    return {item.value for item in ast.walk(value) if isinstance(item, ast.Constant) and isinstance(item.value, str)}


def own_names(tree: ast.Module) -> set[str]:
    """The names a module defines: see the module's docstring."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
    # Assignments in the module's and its classes' own scopes; a function's local variables are nobody's attributes.
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        names |= slots(node)
        pending.extend(ast.iter_child_nodes(node))
    return names


def is_own_object(node: ast.expr) -> bool:
    """Whether ``node`` is ``self``, ``cls`` or ``super()``: how a class reaches its own (and its bases') members."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def private_uses(tree: ast.Module) -> Iterator[tuple[int, int, str, str]]:
    """``(line, column, private name, source text)`` for each use of a private name not the module's own."""
    own = own_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if is_private(alias.name):
                    source = f"from {'.' * node.level}{node.module or ''} import {alias.name}"
                    yield node.lineno, node.col_offset, alias.name, source
            continue
        if isinstance(node, ast.Attribute):
            owner, name = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            owner, name = node.args[0], node.args[1].value
        else:
            continue
        if is_private(name) and name not in own and not is_own_object(owner):
            yield node.lineno, node.col_offset, name, ast.unparse(node)


def scan() -> tuple[list[str], set[tuple[str, str]]]:
    """Every use of another module's private name, as ``path:line: source``, and the :data:`ALLOWED` entries used."""
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, _, name, source in sorted(private_uses(tree)):
            if (module, name) in ALLOWED:
                used.add((module, name))
            else:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {source}")
    return found, used


def test_no_module_uses_another_modules_private_names() -> None:
    found, _ = scan()
    assert not found, "uses of another module's private names:\n" + "\n".join(found)


def test_every_allowed_private_name_is_still_used() -> None:
    _, used = scan()
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"allowed private names no module uses any more (remove them from ALLOWED): {stale}"


def test_the_scan_sees_private_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner reports what the rule forbids, lets the rest pass, and notices a stale allowance."""
    root = tmp_path / "mcp_sync"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "bad.py").write_text(
        "from .other import _helper, public\n"  # 1: another module's private name, imported
        "import other\n"
        "class Box:\n"
        "    __slots__ = ('_slot',)\n"
        "    _level = 0\n"  # 5
        "    def _own(self): return self._anything, super()._base(), type(self)._level\n"
        "    @classmethod\n"
        "    def make(cls): return cls._anything\n"
        "_table = {}\n"
        "def use(box, point):\n"  # 10
        "    box._slot, box._own(), other._table, point._replace(x=1), box._repr_html_(), box.__dict__\n"
        "    point._mark = 1\n"
        "    _local = point._mark\n"
        "    other._secret(), getattr(other, '_hidden', None), hasattr(box, '_own'), getattr(box, name)\n"
        "    return other._local, other._tolerated\n"  # 15
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", root)
    stale = ("mcp_sync.gone", "_hook")
    monkeypatch.setattr(sys.modules[__name__], "ALLOWED", {("mcp_sync.bad", "_tolerated"): "a test", stale: "a test"})
    found, used = scan()
    assert found == [
        "mcp_sync/bad.py:1: from .other import _helper",
        "mcp_sync/bad.py:14: other._secret",
        "mcp_sync/bad.py:14: getattr(other, '_hidden', None)",
        "mcp_sync/bad.py:15: other._local",
    ]
    assert set(ALLOWED) - used == {stale}
