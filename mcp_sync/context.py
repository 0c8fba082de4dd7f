"""Compatibility path: the handler context now lives in :mod:`mcp_sync.server.context`."""

from .server.context import Context, Elicited, ProgressReporter

__all__ = ["Context", "Elicited", "ProgressReporter"]
