"""The context a tool, resource or prompt handler receives.

>>> def slow(arguments, ctx):
...     for step in range(3):
...         if ctx.cancelled.is_set():
...             break
...         ctx.progress(step + 1, 3)
...     return "done"
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .types import ClientCapabilities, Implementation, LoggingLevel, RequestId

if TYPE_CHECKING:
    from .session import ServerSession

__all__ = ["Context", "ProgressReporter"]

ProgressReporter = Callable[[float, "float | None", "str | None"], None]


class Context:
    """What a handler knows about the call it serves, and how it talks back.

    ``cancelled`` is set when the client cancels the call or goes away;
    ``progress()`` reports progress when the client asked for it; ``log()``
    sends a log message; ``session`` (``None`` for local calls such as
    :meth:`MCPServer.invoke_tool`) reaches the client for sampling, roots and
    elicitation.
    """

    def __init__(
        self,
        *,
        request_id: RequestId | None = None,
        cancelled: threading.Event | None = None,
        session: ServerSession | None = None,
        progress: ProgressReporter | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.request_id = request_id
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        self.session = session
        self.meta = meta or {}
        self._progress = progress

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version, as it sent them at initialize."""
        return None if self.session is None else self.session.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do."""
        return ClientCapabilities() if self.session is None else self.session.client_capabilities

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (a no-op unless the caller asked for progress)."""
        if self._progress is not None:
            self._progress(progress, total, message)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client, subject to its log level."""
        if self.session is not None:
            self.session.log(level, data, logger)
