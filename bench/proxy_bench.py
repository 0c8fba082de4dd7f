"""Proxy overhead: sequential ``tools/call`` round trips to ``examples/echo_server.py``, direct and through proxies.

Four ways to reach the same echo server (spawned over stdio each time):

- ``direct``: our client, over stdio;
- ``proxy in-process``: our client, in memory, to ``mcp_sync.proxy(server command)`` in this process;
- ``mcp-sync proxy (stdio)``: our client to ``mcp-sync proxy "python echo_server.py"`` over stdio (two pipes);
- ``mcp-sync proxy (http)``: our client to ``mcp-sync proxy ... --transport http`` on the loopback.

Each echoes ``"hello"`` ``--calls`` times after a warm-up, and reports calls/s and the p50 and p99
latency. The upstream client speaks whatever era the echo server offers (2026-07-28 here); ``--era``
chooses the era of the measuring client.

Usage::

    python bench/proxy_bench.py [--calls 2000] [--era auto|handshake|stateless]
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchlib import percentile

import mcp_sync
from mcp_sync import MCPClient

ROOT = Path(__file__).resolve().parent.parent
ECHO = [sys.executable, str(ROOT / "examples" / "echo_server.py")]
PROXY = [sys.executable, "-m", "mcp_sync", "proxy", shlex.join(ECHO)]


@contextlib.contextmanager
def direct(era: str) -> Iterator[MCPClient]:
    with mcp_sync.connect(ECHO, era=era) as client:
        yield client


@contextlib.contextmanager
def in_process(era: str) -> Iterator[MCPClient]:
    with mcp_sync.proxy(ECHO) as front, mcp_sync.connect(front, era=era) as client:
        yield client


@contextlib.contextmanager
def bridge_stdio(era: str) -> Iterator[MCPClient]:
    with mcp_sync.connect(PROXY, era=era, inherit_env=True) as client:
        yield client


@contextlib.contextmanager
def bridge_http(era: str) -> Iterator[MCPClient]:
    process = subprocess.Popen(
        [*PROXY, "--transport", "http", "--port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        url = process.stderr.readline().split(" on ")[1].split()[0]
        with mcp_sync.connect(url, era=era) as client:
            yield client
    finally:
        process.terminate()
        process.wait(10)


def measure(open_client: Callable[[str], contextlib.AbstractContextManager[MCPClient]], era: str, calls: int) -> str:
    with open_client(era) as client:
        for _ in range(min(200, calls)):  # warm-up
            client.call_tool("echo", {"text": "hello"})
        samples = []
        started = time.perf_counter()
        for _ in range(calls):
            before = time.perf_counter()
            result = client.call_tool("echo", {"text": "hello"})
            samples.append(time.perf_counter() - before)
        elapsed = time.perf_counter() - started
        assert result.text == "hello"
        negotiated = client.negotiated_era
    p50, p99 = percentile(samples, 50) * 1000, percentile(samples, 99) * 1000
    return f"{calls / elapsed:9.0f} calls/s   p50 {p50:6.3f} ms   p99 {p99:6.3f} ms   ({negotiated})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--era", default="auto", choices=["auto", "handshake", "stateless"])
    args = parser.parse_args()
    ways = {
        "direct": direct,
        "proxy in-process": in_process,
        "mcp-sync proxy (stdio)": bridge_stdio,
        "mcp-sync proxy (http)": bridge_http,
    }
    print(f"{args.calls} sequential echo calls, client era {args.era}")
    for name, way in ways.items():
        print(f"{name:24} {measure(way, args.era, args.calls)}", flush=True)


if __name__ == "__main__":
    main()
