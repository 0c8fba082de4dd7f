"""The client's cache of 2026-07-28 results, each kept for as long as its ``ttlMs`` says."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


class ResponseCache:
    """Results of cacheable requests, fresh for the ``ttlMs`` their server gave.

    A result is keyed by its method and its parameters without ``_meta``; one
    without a positive ``ttlMs`` is not kept. Every cached result is this
    client's own (the client holds one authorization context), so
    ``"private"`` results are kept like ``"public"`` ones.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, str, dict[str, Any]]] = {}

    @staticmethod
    def key(method: str, params: Mapping[str, Any] | None) -> str:
        salient = {name: value for name, value in (params or {}).items() if name != "_meta"}
        return json.dumps([method, salient], sort_keys=True, separators=(",", ":"), default=str)

    def get(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The fresh result of an identical earlier request, if there is one."""
        key = self.key(method, params)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if self._clock() >= entry[0]:
                del self._entries[key]
                return None
            copy: dict[str, Any] = json.loads(json.dumps(entry[2]))  # callers may change what they get
            return copy

    def store(self, method: str, params: Mapping[str, Any] | None, result: dict[str, Any]) -> None:
        """Keep ``result`` while its ``ttlMs`` lasts."""
        ttl = result.get("ttlMs")
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
            return
        with self._lock:
            self._entries[self.key(method, params)] = (self._clock() + ttl / 1000.0, method, result)

    def invalidate(self, *methods: str) -> None:
        """Forget the results of ``methods`` (all results when none is named)."""
        with self._lock:
            for key in [k for k, (_, method, _) in self._entries.items() if not methods or method in methods]:
                del self._entries[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
