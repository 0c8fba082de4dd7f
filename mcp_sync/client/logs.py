"""Where the server's log messages go when no handler is given and no notebook shows them: :func:`forward_to_logging`.

>>> from mcp_sync.types import LoggingMessageNotificationParams
>>> forward_to_logging(LoggingMessageNotificationParams(level="debug", logger="db", data="connected"))
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol.types import LoggingMessageNotificationParams

__all__ = ["PYTHON_LEVELS", "forward_to_logging"]

server_log = logging.getLogger("mcp_sync.server_log")

PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
"""The Python logging level of each MCP log level."""


def forward_to_logging(params: LoggingMessageNotificationParams) -> None:
    """Log a server's message on the ``mcp_sync.server_log`` logger, at the Python level of its MCP level."""
    server_log.log(PYTHON_LEVELS[params.level], "%s%s", f"[{params.logger}] " if params.logger else "", params.data)
