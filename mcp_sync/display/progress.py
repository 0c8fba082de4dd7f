"""The progress bar of ``call_tool(..., progress=True)``: tqdm on stderr when installed, plain lines otherwise.

In a Jupyter kernel with tqdm and ipywidgets installed, the bar is the
notebook's widget (``tqdm.notebook``, as ``tqdm.auto`` would choose).
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from typing import Any, TextIO

from ..protocol.types import (
    ProgressNotificationParams,
)


def _load_tqdm(notebook: bool = False) -> Any:
    """tqdm's bar class (its notebook widget with ``notebook`` and ipywidgets), or ``None`` without tqdm."""
    try:
        text_bar = importlib.import_module("tqdm").tqdm
    except ImportError:
        return None
    if not notebook:
        return text_bar
    try:
        importlib.import_module("ipywidgets")
    except ImportError:
        return text_bar  # tqdm.notebook would fail at the first bar without its widgets
    return importlib.import_module("tqdm.notebook").tqdm


def _whole(number: float | None) -> float | None:
    """``3.0`` as ``3``, so that a bar shows ``3/10`` rather than ``3.0/10.0``."""
    return int(number) if number is not None and float(number).is_integer() else number


class ProgressBar:
    """A progress callback that shows a tool call's progress on ``stream`` (default: ``sys.stderr``).

    ``notebook`` (default: whether this runs in a Jupyter kernel) picks the
    notebook's widget bar when tqdm and ipywidgets are installed.

    With tqdm installed it draws a tqdm bar, made at the first
    notification; without, it writes one line per notification, like
    ``add: 3/10 (30%) adding``. :meth:`close` ends the bar; notifications
    after that are ignored.

    >>> import io
    >>> from mcp_sync.types import ProgressNotificationParams as P
    >>> out = io.StringIO()
    >>> bar = ProgressBar("count", stream=out, use_tqdm=False)
    >>> bar(P(progress_token=1, progress=3, total=10, message="counting"))
    >>> bar(P(progress_token=1, progress=4))
    >>> bar.close()
    >>> print(out.getvalue(), end="")
    count: 3/10 (30%) counting
    count: 4
    """

    def __init__(
        self, label: str, *, stream: TextIO | None = None, use_tqdm: bool = True, notebook: bool | None = None
    ) -> None:
        self.label = label
        self._stream = stream
        self._use_tqdm = use_tqdm
        self._notebook = notebook
        self._bar: Any = None
        self._closed = False
        self._lock = threading.Lock()

    @functools.cached_property
    def _tqdm(self) -> Any:
        """tqdm's bar class, or ``None`` for plain lines: looked up at the first notification, so that a call
        that reports no progress (most of ``mcp-sync call``'s) never imports tqdm, which costs more than the call."""
        if not self._use_tqdm:
            return None
        notebook = self._notebook
        if notebook is None:
            from .ipython import in_notebook

            notebook = in_notebook()
        return _load_tqdm(notebook)

    @property
    def stream(self) -> TextIO:
        """Where the progress goes."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, params: ProgressNotificationParams) -> None:
        with self._lock:
            if self._closed:
                return
            if self._tqdm is None:
                self._write_line(params)
            else:
                self._update_bar(params)

    def _update_bar(self, params: ProgressNotificationParams) -> None:
        total = _whole(params.total)
        if self._bar is None:
            self._bar = self._tqdm(total=total, desc=self.label, file=self.stream, leave=True)
        bar = self._bar
        bar.total = total
        bar.n = _whole(params.progress)
        if params.message:
            bar.set_postfix_str(params.message, refresh=False)
        bar.refresh()

    def _write_line(self, params: ProgressNotificationParams) -> None:
        line = f"{self.label}: {params.progress:g}"
        if params.total:
            line += f"/{params.total:g} ({params.progress / params.total:.0%})"
        if params.message:
            line += f" {params.message}"
        stream = self.stream
        stream.write(line + "\n")
        stream.flush()

    def close(self) -> None:
        """End the bar (idempotent)."""
        with self._lock:
            self._closed = True
            bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()
