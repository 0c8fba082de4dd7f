"""Two checkouts of the HTTP server side by side: server CPU per call and latencies, interleaved.

The machine is shared, so one run of each tree says little; this script
alternates the two trees round after round. Each round starts the tree's
server (``serve_http`` with an ``echo`` tool, as ``bench/http_bench.py``
does) in a child process with that tree on ``PYTHONPATH``, and drives it
from this process with this tree's client: ``--clients`` clients, each with
its own session (own connection), calling ``echo`` at once, in the handshake
and the stateless era. It reports calls/s, p50 and p99 and the server
process's CPU time per call (user and system, from ``/proc``), then medians.
``--profile DIR`` records the server of each run with ``py-spy`` (raw
folded stacks) into DIR.

Usage::

    git -C /work/main archive main | tar -x -C /tmp/http_base
    python bench/http_compare_trees.py --before /tmp/http_base --after . --rounds 5 --calls 4000
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from benchlib import cpu_seconds, percentile  # noqa: E402
from http_bench import OUR_SERVER, free_port, wait_accepting  # noqa: E402

from mcp_sync.client import http_client  # noqa: E402


def one_run(tree: Path, era: str, calls: int, clients: int, profile: Path | None) -> dict[str, float]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    server = subprocess.Popen(  # in the tree: "-c" puts the working directory first on the path, before PYTHONPATH
        [sys.executable, "-c", OUR_SERVER, str(port)],
        env=env,
        cwd=tree,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    spy: subprocess.Popen[bytes] | None = None
    try:
        wait_accepting(port, server)
        url = f"http://127.0.0.1:{port}/mcp"
        per_client = calls // clients
        start = threading.Barrier(clients + 1)
        through = threading.Barrier(clients + 1)
        latencies: list[float] = []

        def work() -> None:
            client = http_client(url, transport="streamable", era=era)
            for _ in range(20):
                client.call_tool("echo", {"text": "hello"})
            start.wait()
            own = []
            for _ in range(per_client):
                t = time.perf_counter()
                client.call_tool("echo", {"text": "hello"})
                own.append(time.perf_counter() - t)
            latencies.extend(own)
            through.wait()
            client.close()

        threads = [threading.Thread(target=work) for _ in range(clients)]
        for thread in threads:
            thread.start()
        start.wait()
        if profile is not None:
            out = profile / f"{tree.name}-{era}-{time.time_ns()}.txt"
            spy = subprocess.Popen(
                ["py-spy", "record", "-p", str(server.pid), "-r", "500", "-f", "raw", "-o", str(out), "--nonblocking"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        cpu = cpu_seconds(server.pid)
        t = time.perf_counter()
        through.wait()
        elapsed = time.perf_counter() - t
        used = cpu_seconds(server.pid) - cpu
        for thread in threads:
            thread.join()
        done = per_client * clients
        return {
            "calls/s": done / elapsed,
            "p50 ms": percentile(latencies, 50) * 1000,
            "p99 ms": percentile(latencies, 99) * 1000,
            "server CPU us/call": used / done * 1e6,
        }
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
            spy.wait(30)
        server.kill()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--eras", default="handshake,stateless")
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    trees = (("before", args.before.resolve()), ("after", args.after.resolve()))
    for number in range(args.rounds):
        for label, tree in trees:
            for era in args.eras.split(","):
                figures = one_run(tree, era, args.calls, args.clients, args.profile)
                results.setdefault((era, label), []).append(figures)
                shown = "  ".join(f"{key} {value:7.1f}" for key, value in figures.items())
                print(f"round {number + 1} {label:6} {era:9} {shown}", flush=True)
    print("\nmedians (after/before):")
    for era in args.eras.split(","):
        for key in results[(era, "before")][0]:
            old = statistics.median(row[key] for row in results[(era, "before")])
            new = statistics.median(row[key] for row in results[(era, "after")])
            print(f"  {era:9} {key:20} before {old:8.1f}  after {new:8.1f}  ({new / old:.2f}x)")


if __name__ == "__main__":
    main()
