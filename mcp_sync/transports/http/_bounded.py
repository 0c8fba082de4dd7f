"""One HTTP exchange bounded in total time and in size: how the OAuth client and the token verifiers ask.

The timeout of ``requests`` bounds the connection and each read, not the
whole: a server that sends its headers, or its body, a byte at a time holds
the exchange for ever. Here a watchdog thread shuts the exchange's
connection down once its time is up (see :func:`~._common.taking`), and
the body is read a piece at a time (what has come) and at most
``max_bytes`` of it is kept.

Example::

    try:
        answer = exchange(new_session(), "GET", url, timeout=5.0, max_bytes=1 << 20)
    except AnswerTooSlow:
        ...  # not connected, answered and read within 5 s in all
"""

from __future__ import annotations

import threading
import time
from typing import Any

import requests
import urllib3.exceptions

from ._common import JOIN_TIMEOUT, shut_down, taking

__all__ = ["AnswerTooLong", "AnswerTooSlow", "BadAnswer", "exchange"]

_CHUNK = 64 * 1024
_AGAIN = 0.05
"""Seconds between later shutdowns, once the time is up: a connection still connecting had no socket to shut down."""


class BadAnswer(requests.RequestException):
    """An answer given up on: too long or too slow."""


class AnswerTooLong(BadAnswer):
    """An answer longer than the exchange's ``max_bytes``."""


class AnswerTooSlow(BadAnswer):
    """An exchange not finished (connected, answered and read whole) within its ``timeout``."""


class _Watchdog:
    """A thread that shuts down the connection noted last once ``seconds`` have passed, until the block ends."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._connection: Any = None
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="mcp-sync-http-deadline", daemon=True)

    def note(self, connection: Any) -> None:
        """The exchange goes on ``connection`` now (``None``: it let go of it, which another may take)."""
        with self._lock:
            self._connection = connection

    def _watch(self) -> None:
        wait = self.seconds
        while not self._ended.wait(wait):
            with self._lock:  # never once the exchange let go of the connection: see note()
                self.fired = True
                shut_down(self._connection)
            wait = _AGAIN

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._ended.set()
        self._thread.join(JOIN_TIMEOUT)


def exchange(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    whole: bool = True,
    **options: Any,
) -> requests.Response:
    """Send one request and read its answer within ``timeout`` seconds in all; the response, its body read.

    ``whole=False``: only the status and headers are waited for, the body
    is the caller's to read (or close). Raises :class:`AnswerTooSlow` when
    the time is up (a read timeout too), :class:`AnswerTooLong` for a body
    over ``max_bytes``, and what ``requests`` raises otherwise. ``options``
    go to :meth:`requests.Session.request`.

    Only the connections of a :class:`~._common.ClosableAdapter` (the
    sessions :func:`~._common.new_session` makes) can be shut down: with a
    session of other adapters, the headers are bounded per read only, and the
    body is given up on after the first piece that comes too late.
    """
    deadline = time.monotonic() + timeout
    watchdog = _Watchdog(timeout)
    body = bytearray()  # (grown in place: a trickled answer comes in many small pieces)
    try:
        with watchdog, taking(watchdog.note):
            response = session.request(method, url, timeout=timeout, stream=True, **options)
            if whole:
                with response:
                    while chunk := response.raw.read1(_CHUNK, decode_content=True):
                        body += chunk
                        if len(body) > max_bytes:
                            raise AnswerTooLong(f"the answer is longer than {max_bytes} bytes")
                        if time.monotonic() > deadline:
                            break  # the watchdog could not shut this connection down: see above
    except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
        if watchdog.fired or isinstance(exc, (requests.ReadTimeout, urllib3.exceptions.ReadTimeoutError)):
            raise AnswerTooSlow(f"the answer did not finish within {timeout:g} s") from None
        raise
    if watchdog.fired or time.monotonic() > deadline:
        # Late, even if it looks whole: a body without a length, cut short by the shutdown, would.
        response.close()
        raise AnswerTooSlow(f"the answer did not finish within {timeout:g} s")
    if whole:
        response._content = bytes(body)  # what requests keeps of a body it read itself
    return response
