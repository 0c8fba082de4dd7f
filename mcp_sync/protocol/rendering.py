"""The seam through which wire models show themselves richly (Jupyter's HTML, IPython's text).

The wire models know nothing of presentation: their ``_repr_html_`` and
``_repr_pretty_`` ask the renderer set here, which the package sets when it
is imported (``mcp_sync/__init__.py`` installs one that loads
:mod:`mcp_sync.display` on first use). So a bare ``CallToolResult`` renders
richly in a notebook, and ``protocol`` imports nothing from the layers above.
A model may also have a MIME bundle of its own (``_repr_mimebundle_``), asked
of the bundler set here: the package's shows the result of a call of a tool
that has an app, made by a client that hosts apps, as that app's widget.

>>> previous = set_renderer(lambda kind, model: f"{kind}: {model}")
>>> render("text/plain", 42)
'text/plain: 42'
>>> _ = set_renderer(None); render("text/plain", 42) is None
True
>>> _ = set_renderer(previous)  # the package's own renderer again
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Bundle", "Bundler", "Renderer", "bundle", "render", "set_bundler", "set_renderer"]

Renderer = Callable[[str, object], "str | None"]
"""Renders a model as ``kind`` (``"text/html"`` or ``"text/plain"``); ``None``: no rich form."""

Bundle = tuple[dict[str, Any], dict[str, Any]]
"""A MIME bundle as IPython takes it: the data by MIME type, and its metadata."""
Bundler = Callable[[object], "Bundle | None"]
"""Gives a model MIME types of its own beside its HTML and text (a widget's view); ``None``: none."""

_renderer: Renderer | None = None
_bundler: Bundler | None = None


def set_renderer(renderer: Renderer | None) -> Renderer | None:
    """Make ``renderer`` the one every wire model's rich display goes through (``None``: plain reprs).

    Returns the renderer it replaces, so a caller can put it back.
    """
    global _renderer
    previous, _renderer = _renderer, renderer
    return previous


def render(kind: str, model: object) -> str | None:
    """``model`` rendered as ``kind`` by the renderer set, or ``None`` when there is none."""
    return None if _renderer is None else _renderer(kind, model)


def set_bundler(bundler: Bundler | None) -> Bundler | None:
    """Make ``bundler`` the one wire models' ``_repr_mimebundle_`` asks (``None``: none); returns the one replaced.

    >>> previous = set_bundler(lambda model: ({"text/markdown": f"**{model}**"}, {}))
    >>> bundle(42)
    ({'text/markdown': '**42**'}, {})
    >>> _ = set_bundler(None); bundle(42) is None
    True
    >>> _ = set_bundler(previous)
    """
    global _bundler
    previous, _bundler = _bundler, bundler
    return previous


def bundle(model: object) -> Bundle | None:
    """The MIME types ``model`` shows as besides its HTML and text, by the bundler set (``None``: none)."""
    return None if _bundler is None else _bundler(model)
