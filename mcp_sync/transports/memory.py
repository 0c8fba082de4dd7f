"""Two transports joined in memory: a client and a server in one process, encoded and decoded as on a wire.

>>> client_end, server_end = InMemoryTransport.pair()
>>> client_end.closed
False
"""

from __future__ import annotations

import queue
import threading

from ..protocol.jsonrpc import decode_message, encode_message
from ..protocol.types import JSONRPCMessage
from ..runtime.transport import BaseTransport

_CLOSE = object()


class InMemoryTransport(BaseTransport):
    """One end of an in-process connection; make both ends with :meth:`pair`.

    Each message is encoded to JSON and decoded again on the way, exactly as
    on a real wire, and delivered on the receiving end's own reader thread,
    which starts when its first handler is registered (messages sent before
    then wait in its inbox).

    >>> client_end, server_end = InMemoryTransport.pair()
    """

    def __init__(self) -> None:
        super().__init__()
        self._inbox: queue.SimpleQueue[bytes | object] = queue.SimpleQueue()
        self._peer: InMemoryTransport | None = None
        self._reader: threading.Thread | None = None

    @classmethod
    def pair(cls) -> tuple[InMemoryTransport, InMemoryTransport]:
        """Two connected transports: what one sends, the other receives."""
        left, right = cls(), cls()
        left._peer, right._peer = right, left
        return left, right

    def _write(self, message: JSONRPCMessage) -> None:
        assert self._peer is not None
        self._peer._inbox.put(encode_message(message))

    def _handlers_changed(self) -> None:
        with self._lock:
            if self._reader is not None or self._closed.is_set():
                return
            # Started under the lock: a concurrent close() (which takes the
            # lock first) then always finds a started reader to join.
            self._reader = threading.Thread(target=self._read_loop, name="mcp-sync-inmemory-reader", daemon=True)
            self._reader.start()

    def _read_loop(self) -> None:
        while True:
            item = self._inbox.get()
            if item is _CLOSE:
                break
            assert isinstance(item, bytes)
            self._deliver(decode_message(item))
        self._closed_by_peer(None)

    def _owns(self, thread: threading.Thread) -> bool:
        return thread is self._reader

    def _shutdown(self) -> None:
        assert self._peer is not None
        self._peer._inbox.put(_CLOSE)
        self._inbox.put(_CLOSE)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5.0)
