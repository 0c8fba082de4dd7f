"""IPython integration: rich display formatters (``%load_ext mcp_sync`` turns them on), and a person in a notebook.

:func:`in_notebook` tells a Jupyter kernel; :func:`show_link` shows an
address as a link in the running cell, :func:`show_log` a server log message.
The forms that answer an elicitation there are in :mod:`mcp_sync.client.forms`
and :mod:`mcp_sync.client.widget_form`.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol.types import LoggingMessageNotificationParams


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
    from .render import DISPLAYS, MODELS  # the renderers name the content models: loaded when a shell is set up

    formatters = shell.display_formatter.formatters
    for name, to_html, to_text in DISPLAYS:  # by name: IPython looks the class up when it meets one
        formatters["text/html"].for_type_by_name(MODELS, name, to_html)
        formatters["text/plain"].for_type_by_name(MODELS, name, _pretty(to_text))
    return True


# ------------------------------------------------------------------ a person in a notebook


def running_shell() -> Any:
    """The running IPython shell, or ``None`` (IPython is not imported when nothing runs it)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


def in_notebook(shell: Any = None) -> bool:
    """Whether this runs in a Jupyter kernel (a notebook, JupyterLab, Colab, VS Code): its shell is a ZMQ one."""
    shell = shell if shell is not None else running_shell()
    return any(cls.__name__ == "ZMQInteractiveShell" for cls in type(shell).__mro__)


def display(value: object) -> None:
    """IPython's ``display`` (the notebook shows ``value`` in the cell that runs)."""
    show: Callable[[object], None] = importlib.import_module("IPython.display").display
    show(value)


class Link:
    """An address a notebook shows as a link that opens a new tab (and as text elsewhere)."""

    def __init__(self, url: str, text: str = "Open this address to go on:") -> None:
        self.url = url
        self.text = text

    def _repr_html_(self) -> str:
        link = escape(self.url, quote=True)
        return f'<p>{escape(self.text)} <a href="{link}" target="_blank" rel="noopener">{link}</a></p>'

    def __repr__(self) -> str:
        return f"{self.text} {self.url}"


def show_link(url: str) -> None:
    """Show ``url`` as a clickable link in the running cell."""
    display(Link(url))


def _log_text(params: LoggingMessageNotificationParams) -> str:
    data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False, default=str)
    return f"[{params.level}] {params.logger + ': ' if params.logger else ''}{data}"


def show_log(params: LoggingMessageNotificationParams) -> None:
    """A server log message as a line on stderr, which a notebook shows in the cell that is running (the call's)."""
    print(_log_text(params), file=sys.stderr, flush=True)
