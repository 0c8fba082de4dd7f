"""A handshake-era session as the processes of a server share it: :class:`SessionRecord` and :class:`SessionUpdate`.

What a :class:`~mcp_sync.server.backend.Backend` that shares sessions stores
(see its module). A module of its own, loaded when a session is first
shared or changed (a subscription, a log level): a stdio server, and an HTTP
one that shares nothing, may never need it, and its two frozen dataclasses
cost a process's start about half a millisecond.

>>> SessionUpdate(log_level="info").to_wire()["log_level"]
'info'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SessionRecord", "SessionUpdate"]


@dataclass(frozen=True)
class SessionRecord:
    """What any process needs to serve a handshake-era session it did not open.

    ``capabilities`` and ``client_info`` are as the client sent them (wire
    form); ``principal`` is who opened the session (``None`` without a token
    verifier); ``stream`` is the id of its GET stream in a shared event store,
    where the notifications addressed to the session go whoever holds a copy
    of it (``None`` when the store is not shared).

    >>> record = SessionRecord("abc", "2025-11-25", capabilities={"sampling": {}}, subscriptions=frozenset({"notes://1"}))
    >>> sorted(record.subscriptions)
    ['notes://1']
    """

    session_id: str
    revision: str
    capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: frozenset[str] = frozenset()
    principal: str | None = None
    stream: str | None = None


@dataclass(frozen=True)
class SessionUpdate:
    """One change a request made to a handshake-era session: a log level set, subscriptions added or dropped.

    A backend keeps it as that change alone (never by writing the whole
    record again), so that two processes changing one session at once both
    keep theirs; the copies of the session apply it in the order it was kept.

    >>> SessionUpdate.from_wire(SessionUpdate(unsubscribed=frozenset({"notes://1"})).to_wire()).unsubscribed
    frozenset({'notes://1'})
    """

    log_level: str | None = None
    """The level the client chose (``logging/setLevel``); ``None``: unchanged."""
    subscribed: frozenset[str] = frozenset()
    unsubscribed: frozenset[str] = frozenset()

    def to_wire(self) -> dict[str, Any]:
        """The change as it is passed on (JSON)."""
        return {
            "log_level": self.log_level,
            "subscribed": sorted(self.subscribed),
            "unsubscribed": sorted(self.unsubscribed),
        }

    @classmethod
    def from_wire(cls, fields: dict[str, Any]) -> SessionUpdate:
        """The change passed on as ``fields``."""
        return cls(
            fields.get("log_level"),
            frozenset(fields.get("subscribed") or ()),
            frozenset(fields.get("unsubscribed") or ()),
        )
