"""The client's defaults for a person at hand, chosen from where the code runs.

- In a Jupyter kernel: the server's questions (elicitation) are answered in
  the cell's output, with a widget form when ipywidgets is installed and
  ``input()`` boxes otherwise; server log messages show in the cell that
  made the call.
- In an interactive terminal (stdin and stderr are terminals): the
  questions are asked on the terminal, one field at a time.
- Anywhere else (a web worker, a script without a terminal, CI): no one to
  ask, so no default elicitation provider (the capability is not declared,
  and the server gets the protocol's answer) and log messages go to the
  ``mcp_sync.server_log`` logger.

The environment variable ``MCP_SYNC_INTERACTIVE=0`` (or ``off``, ``no``,
``false``) turns the interactive defaults off everywhere; so does
``elicitation_provider=None`` for one client.

>>> import os
>>> os.environ[SETTING] = "off"
>>> where() is None and default_elicitation_provider() is None
True
>>> del os.environ[SETTING]
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Literal

from ..display.ipython import in_notebook

if TYPE_CHECKING:
    from .core import ElicitationProvider, LogHandler

__all__ = [
    "SETTING",
    "default_elicitation_provider",
    "default_log_handler",
    "where",
]

SETTING = "MCP_SYNC_INTERACTIVE"
"""The environment variable that turns the interactive defaults off (``0``, ``off``, ``no``, ``false``)."""

_OFF = {"0", "off", "no", "false", "never"}


def _is_terminal(stream: object) -> bool:
    """Whether a standard stream is a terminal (``None`` under pythonw and some services: not one)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if isatty is not None else False


def where() -> Literal["notebook", "terminal"] | None:
    """Where a person can answer: ``"notebook"``, ``"terminal"``, or ``None`` (nobody, or the setting is off)."""
    if os.environ.get(SETTING, "").strip().lower() in _OFF:
        return None
    if in_notebook():
        return "notebook"
    if _is_terminal(sys.stdin) and _is_terminal(sys.stderr):
        return "terminal"
    return None


def default_elicitation_provider() -> ElicitationProvider | None:
    """The provider that asks the person where this runs (see the module's description), or ``None``."""
    place = where()
    if place == "notebook":
        from .widget_form import notebook_form

        return notebook_form()
    if place == "terminal":
        from .forms import TerminalForm

        return TerminalForm()
    return None


def default_log_handler() -> LogHandler | None:
    """In a notebook, log messages shown in the running cell; elsewhere ``None`` (the ``logging`` default)."""
    if where() != "notebook":
        return None
    from ..display.ipython import show_log

    return show_log
