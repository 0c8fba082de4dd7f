"""The public API of mcp_sync, and the ``public-api`` directive that documents it.

One rule in one place: :data:`PUBLIC_MODULES` names the modules users import
from, :func:`public_names` says which of their names are public, and
:func:`home` says on which module's page an object re-exported by several is
documented in full (the others link to it). The reference pages use the
directive; ``tests/docs/test_docs_site.py`` checks the built site against the
same functions.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

PUBLIC_MODULES = [
    "mcp_sync.client",
    "mcp_sync.client.auth",
    "mcp_sync.server",
    "mcp_sync.server.authorization",
    "mcp_sync.server.authorization.tokens",
    "mcp_sync.server.authorization.verifiers",
    "mcp_sync.server.scale.redis_backend",
    "mcp_sync.server.scale.redis_events",
    "mcp_sync.errors",
    "mcp_sync.compose",
    "mcp_sync.testing",
    "mcp_sync.llm",
    "mcp_sync.apps",
    "mcp_sync.display.render",
    "mcp_sync.cli",
    "mcp_sync.types",
    "mcp_sync",
]
"""The modules whose names are public, in the order that decides an object's :func:`home` (the first that has it)."""

TYPES_SOURCES = [
    "mcp_sync.protocol.types.base",
    "mcp_sync.protocol.types.tool",
    "mcp_sync.protocol.types.content",
    "mcp_sync.protocol.types.client_features",
    "mcp_sync.protocol.types.server_features",
    "mcp_sync.protocol.types.utilities",
    "mcp_sync.protocol.messages",
]
"""Where ``mcp_sync.types`` takes its names from (it star-imports the models and looks the envelopes up lazily)."""


def defined_names(module: ModuleType) -> list[str]:
    """The names a module without ``__all__`` defines at its top level (classes, functions, assignments), in order."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in dict.fromkeys(names) if not name.startswith("_") and name != "logger"]


@cache
def public_names(module_name: str) -> tuple[str, ...]:
    """The public names of one of :data:`PUBLIC_MODULES`: its ``__all__``, else what it defines."""
    if module_name == "mcp_sync.types":
        names = [name for source in TYPES_SOURCES for name in defined_names(importlib.import_module(source))]
        return tuple(dict.fromkeys(names))
    module = importlib.import_module(module_name)
    found = getattr(module, "__all__", None)
    return tuple(found) if found is not None else tuple(defined_names(module))


def value(module_name: str, name: str) -> Any:
    return getattr(importlib.import_module(module_name), name)


def identity(module_name: str, name: str) -> tuple[str, ...]:
    """What makes two public names the same thing: the object for classes and functions, else the path itself."""
    obj = value(module_name, name)
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return (getattr(obj, "__module__", ""), getattr(obj, "__qualname__", name))
    return (module_name, name)


@cache
def homes() -> dict[tuple[str, ...], str]:
    """Each public object -> the module whose page documents it in full."""
    found: dict[tuple[str, ...], str] = {}
    for module_name in PUBLIC_MODULES:
        for name in public_names(module_name):
            found.setdefault(identity(module_name, name), f"{module_name}.{name}")
    return found


def home(module_name: str, name: str) -> str:
    """The dotted path under which ``module_name.name`` is documented in full."""
    return homes()[identity(module_name, name)]


def directive_for(obj: Any) -> str:
    if inspect.isclass(obj):
        return "autoclass"
    if inspect.isroutine(obj):
        return "autofunction"
    return "autodata"


class PublicAPI(SphinxDirective):
    """``.. public-api:: mcp_sync.client``: the module's docstring, then each public name.

    A name documented in full elsewhere (see :func:`home`) gets a line linking there.
    """

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0]
        lines = [f".. automodule:: {module_name}", "   :no-members:", ""]
        elsewhere = []
        for name in public_names(module_name):
            target = home(module_name, name)
            if target != f"{module_name}.{name}":
                elsewhere.append(f"* ``{name}``: :py:obj:`{target}`")
                continue
            kind = directive_for(value(module_name, name))
            lines += [f".. {kind}:: {module_name}.{name}"]
            if kind == "autoclass":
                lines += ["   :members:", "   :show-inheritance:"]
            lines.append("")
        if elsewhere:
            lines += [".. rubric:: Also here, documented with their home module", "", *elsewhere, ""]
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=self.get_source_info()[0]), container)
        return container.children


def written_on_a_page(app: Sphinx, node: nodes.Element) -> bool:
    """Whether a cross-reference was written on a guide (checked), not found in a docstring or a signature."""
    source = node.source or ""
    return source.endswith(".rst") and "reference" not in Path(source).relative_to(app.srcdir).parts[:1]


def only_pages_are_nitpicked(app: Sphinx, env: Any, node: nodes.Element, contnode: nodes.Element) -> Any:
    """Docstrings and signatures name private helpers the reference leaves out: shown as text, not as errors.

    A reference written on a guide page still warns when it finds nothing (``nitpicky``), so guides link only
    to what the reference documents.
    """
    if node.get("refdomain") == "py" and not written_on_a_page(app, node):
        return contnode
    return None


def no_inherited_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant, alias or attribute without a docstring of its own shows nothing, not its type's (``dict``'s)."""
    inherited = getattr(obj, "__doc__", None)  # an instance's, or an alias's (dict[str, Any] gives dict's)
    if what in ("data", "attribute") and inherited and " ".join(" ".join(lines).split()) == " ".join(inherited.split()):
        lines.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("public-api", PublicAPI)
    app.connect("missing-reference", only_pages_are_nitpicked)
    app.connect("autodoc-process-docstring", no_inherited_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
