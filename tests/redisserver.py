"""A real Redis server for the tests, on a free loopback port, without persistence.

:class:`RedisServer` starts ``redis-server --port P --save '' --appendonly no``
(found on the ``PATH``, Debian's package in CI: ``.ci/run`` installs it) and
stops it; it can be stopped and started again on the same port, to take Redis
away from running servers and give it back. When ``redis-server`` is missing
the test skips, or fails where peers are required (CI: see
:func:`peers.required`).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import peers

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """``redis-server`` on ``127.0.0.1:port``; :attr:`url` is its ``redis://`` URL (database 0)."""

    def __init__(self, executable: str, log: Path) -> None:
        self.executable = executable
        self.log = log
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it answers ``PING`` (at most ``START_TIMEOUT``)."""
        argv = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with open(self.log, "ab") as sink:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as conn:
                conn.settimeout(1.0)
                conn.sendall(b"PING\r\n")
                if conn.recv(64).startswith(b"+PONG"):
                    return
            time.sleep(0.05)  # nothing to wait on but the port: a short pause between attempts
        self.stop()
        raise AssertionError(f"redis-server did not start on {self.port}:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        """Stop it (SIGKILL: as if the machine went away) and reap it."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
        if process is not None:
            process.wait(STOP_TIMEOUT)


def redis_server_executable() -> str:
    """The path of ``redis-server``; skips the test (or fails it, where peers are required) when missing."""
    path = shutil.which("redis-server")
    if path is None:
        peers.unavailable("`redis-server` is not installed (Debian: apt-get install redis-server)")
    return path


@contextlib.contextmanager
def running_redis(log: Path) -> Iterator[RedisServer]:
    """A started :class:`RedisServer`, stopped at the end whatever happens."""
    server = RedisServer(redis_server_executable(), log)
    server.start()
    try:
        yield server
    finally:
        server.stop()
