"""What a handler gets from :meth:`Context.elicit <mcp_sync.server.Context.elicit>`: :class:`Elicited`.

A module of its own, loaded at the first ``elicit()``: a frozen dataclass
costs a process's start about a fifth of a millisecond, and most servers
never ask their user anything. Import it from :mod:`mcp_sync.server`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

__all__ = ["Elicited"]

T = TypeVar("T")


@dataclass(frozen=True)
class Elicited(Generic[T]):
    """The user's answer to :meth:`Context.elicit`.

    ``action`` is ``"accept"``, ``"decline"`` or ``"cancel"``; ``data`` is
    the answer (an instance of the model asked for, or a dict for a plain
    schema) when accepted, else ``None``.
    """

    action: Literal["accept", "decline", "cancel"]
    data: T | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted and answered."""
        return self.action == "accept"
