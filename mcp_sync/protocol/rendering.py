"""The seam through which wire models show themselves richly (Jupyter's HTML, IPython's text).

The wire models know nothing of presentation: their ``_repr_html_`` and
``_repr_pretty_`` ask the renderer set here, which the package sets when it
is imported (``mcp_sync/__init__.py`` installs one that loads
:mod:`mcp_sync.display` on first use). So a bare ``CallToolResult`` renders
richly in a notebook, and ``protocol`` imports nothing from the layers above.

>>> previous = set_renderer(lambda kind, model: f"{kind}: {model}")
>>> render("text/plain", 42)
'text/plain: 42'
>>> _ = set_renderer(None); render("text/plain", 42) is None
True
>>> _ = set_renderer(previous)  # the package's own renderer again
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Renderer", "render", "set_renderer"]

Renderer = Callable[[str, object], "str | None"]
"""Renders a model as ``kind`` (``"text/html"`` or ``"text/plain"``); ``None``: no rich form."""

_renderer: Renderer | None = None


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
