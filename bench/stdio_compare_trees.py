"""Two checkouts of mcp_sync side by side over stdio: CPU and context switches per call, connect, close, RSS.

On a shared machine wall-clock figures swing too much to compare two trees
run by run, so this script interleaves them round after round and reports,
besides calls per second, what the load moves less: the CPU time of the
client process and of the server process per call (from ``time.process_time``
and ``/proc/<pid>/stat``) and the server's context switches per call (summed
over its threads from ``/proc/<pid>/task/*/status``). Each tree runs its own
``examples/echo_server.py`` child, from a virtualenv where ``pip install .``
put mcp_sync (``benchlib.user_python``); the client is this tree's (the
``--after`` tree is put first on ``sys.path``), in the handshake and the
stateless era. Connect is spawn plus handshake; close is ``client.close()``,
which returns once the server process has exited.

Usage::

    git worktree add /tmp/before <commit>
    python bench/stdio_compare_trees.py --before /tmp/before --after . --rounds 5 --calls 3000
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import user_python


def server_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_switches(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        total += sum(int(n) for n in re.findall(r"ctxt_switches:\s+(\d+)", text))
    return total


def server_rss_mib(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else float("nan")


def one_run(tree: Path, era: str, calls: int) -> dict[str, float]:
    from mcp_sync.client import stdio_client

    env = {"PYTHONPATH": str(tree)}  # on top of the safe default environment (bytecode caches used)
    command = [user_python(), str(tree / "examples" / "echo_server.py")]
    started = time.perf_counter()
    client = stdio_client(command, env=env, era=era)
    connect = time.perf_counter() - started
    transport: Any = client._dispatcher.transport if client._dispatcher else None
    pid = transport.process.pid
    for _ in range(100):
        client.call_tool("echo", {"text": "hello"})
    server_cpu, switches, client_cpu = server_cpu_seconds(pid), server_switches(pid), time.process_time()
    started = time.perf_counter()
    for _ in range(calls):
        client.call_tool("echo", {"text": "hello"})
    wall = time.perf_counter() - started
    figures = {
        "calls/s": calls / wall,
        "client CPU us/call": 1e6 * (time.process_time() - client_cpu) / calls,
        "server CPU us/call": 1e6 * (server_cpu_seconds(pid) - server_cpu) / calls,
        "server switches/call": (server_switches(pid) - switches) / calls,
        "server RSS MiB": server_rss_mib(pid),
        "connect ms": connect * 1000,
    }
    started = time.perf_counter()
    client.close()
    figures["close ms"] = (time.perf_counter() - started) * 1000
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    sys.path.insert(0, str(trees["after"]))
    results: dict[tuple[str, str, str], list[float]] = {}
    for round_ in range(args.rounds):
        for name, tree in trees.items():
            for era in ("handshake", "stateless"):
                for key, value in one_run(tree, era, args.calls).items():
                    results.setdefault((key, era, name), []).append(value)
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    print(f"stdio, {args.calls} sequential echo calls per run, medians of {args.rounds} interleaved rounds")
    print(f"  before: {trees['before']}\n  after:  {trees['after']}\n")
    print(f"{'':24}{'era':>11}{'before':>10}{'after':>10}{'after/before':>14}")
    for key in dict.fromkeys(k for k, _, _ in results):
        for era in ("handshake", "stateless"):
            before = statistics.median(results[(key, era, "before")])
            after = statistics.median(results[(key, era, "after")])
            ratio = after / before if before else float("nan")
            print(f"{key:24}{era:>11}{before:10.1f}{after:10.1f}{ratio:14.2f}")


if __name__ == "__main__":
    main()
