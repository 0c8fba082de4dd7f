"""IPython integration: rich display formatters and ``%load_ext mcp_sync.notebook``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .render import DISPLAYS


def _pretty(to_text: Callable[[Any], str]) -> Callable[[Any, Any, bool], None]:
    def pretty(value: Any, printer: Any, cycle: bool) -> None:
        printer.text(to_text(value))

    return pretty


def enable_rich_display(shell: Any = None) -> bool:
    """Show tool results, resource contents and prompts richly in IPython ``shell`` (default: the running one).

    Returns whether there was a shell to set up. Calling it again is harmless.
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is None:
            return False
    formatters = shell.display_formatter.formatters
    for model, to_html, to_text in DISPLAYS:
        formatters["text/html"].for_type(model, to_html)
        formatters["text/plain"].for_type(model, _pretty(to_text))
    return True


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext mcp_sync.notebook``: see :func:`enable_rich_display`."""
    enable_rich_display(ipython)
