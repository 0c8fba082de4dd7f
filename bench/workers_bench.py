"""Calls per second of ``examples.scaled_app`` under gunicorn: 1, 2 and 4 workers on Redis, one process in memory.

Our client, ``--clients`` threads (8 by default) each with a client of its
own, calls ``echo`` for ``--seconds`` seconds in each era: ``handshake`` (one
session per client, shared by the workers through Redis) and ``stateless``
(2026-07-28). The server is ``gunicorn -k gthread --threads T -w N
--keep-alive K examples.scaled_app:application`` on 127.0.0.1 (``T`` is 32 by
default: each handshake-era client's GET stream holds a thread of the worker
it reached, so 8 threads per worker would leave none for calls); with
``--keep-alive 0`` (the default) every request opens a new connection, so the
requests of one client spread over the workers, as behind a load balancer
that balances per request. ``memory`` is one worker without
``MCP_SYNC_REDIS_URL`` (nothing shared). Redis is a ``redis-server`` started
here on a free port, without persistence.

Usage::

    PYTHONPATH=. python bench/workers_bench.py [--seconds 5] [--clients 8] [--keep-alive 0] [--threads 32]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from mcp_sync.client import http_client

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
CALL_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return
        time.sleep(0.05)  # only the port to wait on
    raise SystemExit(f"nothing listens on {port} after {START_TIMEOUT} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    executable = shutil.which("redis-server")
    if executable is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    argv = [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_listening(port, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(process)


@contextlib.contextmanager
def gunicorn(workers: int, keep_alive: int, threads: int, redis_url: str | None) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads), "-w", str(workers)]
    argv += ["--keep-alive", str(keep_alive), "-b", f"127.0.0.1:{port}", "examples.scaled_app:application"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCP_SYNC_REDIS_URL", None)
    if redis_url is not None:
        env["MCP_SYNC_REDIS_URL"] = redis_url
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def calls_per_second(url: str, era: str, clients: int, seconds: float) -> tuple[float, int]:
    """Calls per second of ``clients`` threads calling ``echo`` for ``seconds``; and the errors."""
    counts = [0] * clients
    errors = [0] * clients
    start = threading.Barrier(clients + 1, timeout=START_TIMEOUT * 3)
    stop_at = [0.0]

    def run(index: int) -> None:
        with http_client(url, era=era, timeout=CALL_TIMEOUT) as client:  # type: ignore[arg-type]
            client.call_tool("echo", {"text": "warm"})
            start.wait()
            while time.monotonic() < stop_at[0]:
                try:
                    client.call_tool("echo", {"text": "hello"})
                    counts[index] += 1
                except Exception:
                    errors[index] += 1

    threads = [threading.Thread(target=run, args=(i,), name=f"bench-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    stop_at[0] = time.monotonic() + START_TIMEOUT * 3  # until the barrier: every client connected
    start.wait()
    began = time.monotonic()
    stop_at[0] = began + seconds
    for thread in threads:
        thread.join(seconds + CALL_TIMEOUT * 2)
    elapsed = time.monotonic() - began
    return sum(counts) / elapsed, sum(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--keep-alive", type=int, default=0)
    parser.add_argument("--threads", type=int, default=32)
    args = parser.parse_args()
    rows: list[tuple[str, str, float, int]] = []
    with redis_server() as redis_url:
        for label, workers, url_of_redis in (
            ("memory, 1 process", 1, None),
            ("redis, 1 worker", 1, redis_url),
            ("redis, 2 workers", 2, redis_url),
            ("redis, 4 workers", 4, redis_url),
        ):
            with gunicorn(workers, args.keep_alive, args.threads, url_of_redis) as url:
                for era in ("handshake", "stateless"):
                    rate, errors = calls_per_second(url, era, args.clients, args.seconds)
                    rows.append((label, era, rate, errors))
                    print(f"{label:<20} {era:<10} {rate:8.0f} calls/s  errors {errors}", flush=True)
    print()
    print(
        f"{args.clients} client threads, --threads {args.threads}, {args.seconds:g} s per cell,"
        f" --keep-alive {args.keep_alive}, {os.cpu_count()} CPUs"
    )
    print(f"{'server':<20} {'era':<10} {'calls/s':>8}")
    for label, era, rate, errors in rows:
        print(f"{label:<20} {era:<10} {rate:8.0f}" + (f"  ({errors} errors)" if errors else ""))


if __name__ == "__main__":
    main()
