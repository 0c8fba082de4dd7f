"""Two checkouts of mcp_sync side by side: is a change faster or slower?

Single benchmark runs on a shared 2-core machine swing by 20% or more, so a
before/after claim needs runs interleaved on the same machine. This script
alternates between two source trees (``--before`` and ``--after``), each
round running the same workload in a fresh interpreter with that tree first
on ``PYTHONPATH``: our client against our ``serve_http`` server in a child
process, 1,500 sequential ``echo`` calls and 2,000 calls from 8 threads, in
the handshake and the stateless era. It prints each run and the medians: calls per
second, and the client process's CPU per call (all its threads).

Usage::

    git worktree add /tmp/before <commit>
    python bench/compare_trees.py --before /tmp/before --after . --rounds 4
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

WORKLOAD = r'''
import socket, subprocess, sys, threading, time
import mcp_sync

SERVER = """
import sys
from mcp_sync import MCPServer
from mcp_sync import serve_http
server = MCPServer("bench")
@server.tool()
def echo(text: str) -> str:
    return text
serve_http(server, port=int(sys.argv[1]))
"""
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
child = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stderr=subprocess.DEVNULL)
url = f"http://127.0.0.1:{port}/mcp"
try:
    for _ in range(100):
        try:
            mcp_sync.connect(url).close()
            break
        except mcp_sync.MCPError:
            time.sleep(0.1)
    client = mcp_sync.connect(url, era=sys.argv[1])
    for _ in range(100):
        client.call_tool("echo", {"text": "x"})
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(1500):
        client.call_tool("echo", {"text": "x"})
    sequential = 1500 / (time.perf_counter() - started)
    sequential_cpu = (time.process_time() - cpu) / 1500 * 1e6

    def calls() -> None:
        for _ in range(250):
            client.call_tool("echo", {"text": "x"})

    threads = [threading.Thread(target=calls) for _ in range(8)]
    started, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    parallel = 2000 / (time.perf_counter() - started)
    parallel_cpu = (time.process_time() - cpu) / 2000 * 1e6
    client.close()
    print(f"sequential {sequential:.0f} parallel {parallel:.0f} cpu {sequential_cpu:.0f} {parallel_cpu:.0f}")
finally:
    child.terminate()
    child.wait(10)
'''


def run(tree: Path, era: str) -> tuple[float, float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # In the tree: "-c" puts the working directory first on the path, before PYTHONPATH (the server's child too).
    command = [sys.executable, "-c", WORKLOAD, era]
    out = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, timeout=300)
    match = re.search(r"sequential (\d+) parallel (\d+) cpu (\d+) (\d+)", out.stdout)
    if match is None:
        raise SystemExit(f"{tree} ({era}) failed:\n{out.stderr}")
    return float(match[1]), float(match[2]), float(match[3]), float(match[4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for round_number in range(args.rounds):
        for label, tree in (("before", args.before.resolve()), ("after", args.after.resolve())):
            for era in ("handshake", "stateless"):
                figures = run(tree, era)  # (trees from before 50b3369 spelled them legacy/modern)
                results.setdefault((era, label), []).append(figures)
                sequential, parallel, sequential_cpu, parallel_cpu = figures
                rates = f"sequential {sequential:5.0f}/s  8 threads {parallel:5.0f}/s"
                cpu = f"client CPU per call {sequential_cpu:4.0f} / {parallel_cpu:4.0f} us"
                print(f"round {round_number + 1} {label:6} {era:9} {rates}  {cpu}")
    print("\nmedians (after/before):")
    rows = ((0, "calls/s, sequential"), (1, "calls/s, 8 threads"), (2, "client CPU/call (us), sequential"))
    for era in ("handshake", "stateless"):
        before, after = results[(era, "before")], results[(era, "after")]
        for index, what in (*rows, (3, "client CPU/call (us), 8 threads")):
            old = statistics.median(row[index] for row in before)
            new = statistics.median(row[index] for row in after)
            print(f"  {era:9} {what:32} before {old:5.0f}  after {new:5.0f}  ({new / old:.2f}x)")


if __name__ == "__main__":
    main()
