"""Who may do what: the facts of a request that an :data:`Authorizer` decides on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session import ServerSession


@dataclass(frozen=True)
class RequestInfo:
    """What an authorizer sees of a request."""

    method: str
    params: dict[str, Any]
    session: ServerSession


Authorizer = Callable[[RequestInfo], bool]
