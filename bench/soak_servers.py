"""The servers ``bench/soak.py`` soaks, and what it reads of them: processes from /proc, keys from Redis."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import child_pids as children
from workers_bench import ROOT, START_TIMEOUT, free_port, redis_server, stop, wait_listening

HERE = Path(__file__).resolve().parent


@dataclass
class Target:
    name: str
    url: str
    master: int
    redis_port: int | None = None
    workers: int = 0
    inventories: Path | None = None
    kept: int | None = None
    """On gunicorn, the worker never killed: its growth over the run is judged (a killed worker starts afresh)."""

    def inventory(self) -> dict[int, dict[str, Any]]:
        """Each live worker's age in seconds and what it last said it holds (threads and descriptors by kind)."""
        found: dict[int, dict[str, Any]] = {}
        if self.inventories is None:
            return found
        for pid in children(self.master):
            with contextlib.suppress(OSError, ValueError):  # gone meanwhile, or not written yet
                held = json.loads((self.inventories / f"{pid}.json").read_text())
                found[pid] = {"age": age(pid), **held}
        return found

    def pids(self) -> list[int]:
        """The master and its workers."""
        return [self.master, *children(self.master)]


def age(pid: int) -> float:
    """Seconds since process ``pid`` started."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def embedded(idle: float, log: Path) -> Iterator[Target]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOAK_IDLE_SECONDS": str(idle)}
    argv = [sys.executable, str(HERE / "soak_app.py")]
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink, start_new_session=True
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        readable, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        url = process.stdout.readline().decode().strip() if readable else ""
        if not url:
            raise SystemExit(f"the embedded server did not say its URL within {START_TIMEOUT:g} s")
        yield Target("embedded", url, process.pid)
    finally:
        process.stdin.close()  # it stops when its stdin closes; stop() is for one that does not
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(START_TIMEOUT)
        stop(process)
        process.stdout.close()


@contextlib.contextmanager
def gunicorn(idle: float, workers: int, log: Path) -> Iterator[Target]:
    with redis_server() as redis_url:
        port = free_port()
        argv = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "32", "-w", str(workers)]
        argv += ["--keep-alive", "0", "-b", f"127.0.0.1:{port}", "--chdir", str(HERE), "soak_app:make_app()"]
        inventories = log.parent / "inventories"
        inventories.mkdir()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SOAK_IDLE_SECONDS": str(idle), "MCP_SYNC_REDIS_URL": redis_url}
        env["SOAK_INVENTORY_DIR"] = str(inventories)
        with open(log, "wb") as sink:
            process = subprocess.Popen(argv, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_listening(port, process)
            redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
            target = Target("gunicorn", f"http://127.0.0.1:{port}/mcp", process.pid, redis_port, workers, inventories)
            target.kept = wait_workers(target)[0]
            yield target
        finally:
            stop(process)


def wait_workers(target: Target) -> list[int]:
    """The workers of ``target`` once all have started (its first request may find some still booting)."""
    deadline = time.monotonic() + START_TIMEOUT
    while len(found := sorted(children(target.master))) < target.workers:
        if time.monotonic() > deadline:
            raise SystemExit(f"gunicorn started {len(found)} of {target.workers} workers in {START_TIMEOUT:g} s")
        time.sleep(0.05)  # only /proc to poll
    return found


def server_log(log: Path) -> None:
    """What the server logged at WARNING and above (and its tracebacks' last lines), counted, ids and figures masked."""
    counts: collections.Counter[str] = collections.Counter()
    lines = log.read_text(errors="replace").splitlines()
    for number, line in enumerate(lines):
        ends_traceback = number > 0 and lines[number - 1].startswith(" ") and not line.startswith((" ", "Traceback"))
        if re.search(r"WARNING|ERROR|CRITICAL|Exception", line) or ends_traceback:
            counts[re.sub(r"\[[^]]*\] |[0-9a-f]{8,}|\d+", "N", line)[:200]] += 1
    print(f"server log: {len(lines)} lines, {sum(counts.values())} at WARNING or above or ending a traceback")
    for entry, n in counts.most_common(15):
        print(f"  {n:6d}  {entry}")


def status_field(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def redis_figures(port: int) -> dict[str, float]:
    """Redis's key count, what lasts in it, and the longest time to live of a key that expires.

    A key that expires cannot leak: how many there are follows the rate of
    what makes them times their TTL, which swings with the load by hundreds
    (the count is shown, not judged). What can leak is a key without a TTL,
    or a member added to one and never taken out (the sessions set, the task
    indexes): ``redis lasting`` counts those keys and their members, and is
    judged; so is ``redis longest_ttl``, which no key may exceed the warm-up.
    """
    import redis  # the [redis] extra, needed by the gunicorn target anyway

    lasting = longest = 0
    with redis.Redis(port=port, socket_timeout=5.0) as keys:
        sizes = {b"set": keys.scard, b"zset": keys.zcard, b"hash": keys.hlen, b"list": keys.llen, b"stream": keys.xlen}
        total = keys.dbsize()
        for key in keys.scan_iter(count=1000):
            ttl = keys.ttl(key)
            if ttl >= 0:
                longest = max(longest, ttl)
            elif ttl == -1:  # (-2: gone meanwhile)
                size = sizes.get(keys.type(key))
                lasting += 1 + (size(key) if size is not None else 0)
    return {"redis keys": total, "redis lasting": lasting, "redis longest_ttl": longest}


def redis_kinds(port: int) -> collections.Counter[str]:
    """The keys in Redis by kind (ids masked), with whether they expire."""
    import redis  # the [redis] extra, needed by the gunicorn target anyway

    kinds: collections.Counter[str] = collections.Counter()
    with redis.Redis(port=port, socket_timeout=5.0) as keys:
        for key in keys.scan_iter(count=1000):
            kind = re.sub(r"(?<=:)[\w-]{12,}|(?<=:once:)\d+|(?<=:task:)[\w-]+", "ID", key.decode(errors="replace"))
            kinds[f"{kind} ({'expires' if keys.ttl(key) >= 0 else 'no TTL'})"] += 1
    return kinds


def measure(target: Target) -> dict[str, float]:
    """The server's RSS, threads and descriptors over its processes (and of the kept worker); Redis's keys."""
    figures = {"server rss_mib": 0.0, "server threads": 0.0, "server fds": 0.0}
    for pid in target.pids():
        with contextlib.suppress(OSError):  # a worker killed meanwhile
            for name, value in process_figures(pid).items():
                figures[f"server {name}"] += value
    if target.kept is not None:
        figures |= {f"kept {name}": value for name, value in process_figures(target.kept).items()}
        held = target.inventory().get(target.kept, {}).get("threads", {})
        # gunicorn's gthread pool starts threads as connections come, up to --threads, and keeps them: shown apart
        pool = sum(n for name, n in held.items() if name.startswith("ThreadPoolExecutor"))
        figures["kept threads"] -= pool
        figures["kept pool_threads"] = pool
    if target.redis_port is not None:
        figures |= redis_figures(target.redis_port)
    return figures


def process_figures(pid: int) -> dict[str, float]:
    """One process's RSS (MiB), threads and open descriptors."""
    return {
        "rss_mib": status_field(pid, "VmRSS") / 1024,
        "threads": status_field(pid, "Threads"),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }
