"""Soak: minutes of mixed load on one server, checking that its resources stay flat and no client sees an error.

Targets (``--target``, both by default, in turn), serving ``bench/soak_app.py``:

- ``embedded``: :func:`~mcp_sync.start_http` in a child process, in memory;
- ``gunicorn``: ``gunicorn -k gthread --threads 32 -w W --keep-alive 0``
  (every request on a new connection, so a client's requests spread over the
  workers) with a ``redis-server`` started here on a free port; every
  ``--kill-every`` seconds one worker other than the first is killed with
  SIGKILL and the run waits for gunicorn to start its replacement.

``--clients`` threads each hold a handshake-era client (2025-11-25, a session
with its GET stream, subscribed to a resource of its own) and a 2026-07-28
client (stateless requests, a ``subscriptions/listen`` stream on another
resource), and repeat, until the time is up: tool calls (with progress), a
resource update raised through the other client and awaited on each stream,
a call cancelled once the server said it started, a task-augmented call
polled to completion, and a session opened and dropped (with DELETE, without
DELETE, or a 2026-07-28 client opened and closed).

Sampled every few seconds: the server's RSS, threads and open file
descriptors (summed over the master and its workers, from /proc), Redis's
keys (their count; what lasts, keys without a TTL and their members; the
longest TTL), and this process's threads and descriptors. On gunicorn
the sums depend on the ages of the workers killed at random (a new worker
starts from nothing), so they are shown, and what is judged is the worker
the soak never kills, the first one: it serves the whole run, half the load
and all of it while the other restarts, the resumes of streams cut by a
kill among it. Its threads are counted without gunicorn's gthread pool,
which starts a thread per connection up to ``--threads`` and keeps it
(shown apart). Each worker writes what it holds every second (threads by
name and by what they do, idle in a pool or where they wait; descriptors
by kind), and the report shows it for the start, middle and end.

What clients leave behind (idle sessions, finished tasks, SSE streams on
Redis) lasts ``--idle`` seconds, and on Redis a stream's note of a
notification a minute, so the first of those plus 10 s are warm-up; so is,
on gunicorn, the first half of the run, while the pools of a worker fill up
to the concurrency the load reaches. Growth is judged while the load lasts
(not as the clients close). Start, middle and end of the rest are each the
median of three samples; growth is judged on the trend (the least-squares
slope times the length of the rest). The run fails (exit 1) if a judged
figure's trend grew beyond what is allowed (printed), if this process
keeps a thread or descriptor after closing its clients, or on any client
error not expected by design. Expected: a call we cancelled, and what fails
while a worker we killed goes (an operation that overlapped a kill, or a
listen stream it broke: 2026-07-28 listens do not resume, they are opened
again). A kill excuses no update lost on a GET stream, once the touch that
raised it was answered: a handshake session's GET stream resumes from the
session's shared stream, whichever worker died. The server's log is summed
up at WARNING and above.

Usage::

    PYTHONPATH=. python bench/soak.py [--minutes 10] [--target embedded|gunicorn|both] [--clients 4]
        [--workers 2] [--kill-every 15] [--idle 30]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import requests.adapters
from soak_servers import Target, children, embedded, gunicorn, measure, redis_kinds, server_log
from workers_bench import START_TIMEOUT

from mcp_sync.client import MCPClient, Subscription, http_client
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.server.scale.redis_events import ONCE_TTL

CALL_TIMEOUT = 30.0
HEARD_TIMEOUT = 15.0
JOIN_TIMEOUT = 60.0
TOLERANCE = {"rss_mib": (0.15, 16.0), "threads": (0.25, 8), "fds": (0.25, 16), "lasting": (0.25, 50)}
"""Growth allowed over the steady part of a run, per kind of figure: (a fraction of the start, or at least this)."""
UNJUDGED = {"kept pool_threads", "redis keys", "redis longest_ttl"}
"""Shown, not judged by their trend: gunicorn's gthread pool, which grows to ``--threads`` as connections come and
stays; Redis's key count, most of it keys that expire, as many as the load makes in their TTL (the keys that last
are judged, ``redis lasting``); the longest TTL, judged against the warm-up instead."""


class SoakError(Exception):
    """What a client saw that is wrong without being an exception of mcp_sync's (a wrong answer, a missed update)."""


class LostUpdate(SoakError):
    """An update the server raised (the touch was answered) that the GET stream never delivered: never excused."""


# ------------------------------------------------------------------ what happened


class Tally:
    """Counts of operations done, expected failures and unexpected errors; and when workers were killed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done: collections.Counter[str] = collections.Counter()
        self.expected: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.kills: list[float] = []

    def killed_since(self, began: float) -> bool:
        """Whether a worker was killed since ``began`` (or within the second before: a dying stream's last words)."""
        with self.lock:
            return any(t >= began - 1.0 for t in self.kills)

    def run(self, kind: str, step: Callable[[], object]) -> None:
        """Run one operation and file its outcome under ``kind``."""
        began = time.monotonic()
        try:
            step()
        except Exception as exc:
            message = re.sub(r"[0-9a-f]{8,}|\d+", "N", str(exc))[:160]  # ids and figures vary; the kind does not
            entry = f"{kind}: {type(exc).__name__}: {message}"
            cancelled = isinstance(exc, MCPError) and exc.code == MCP_CODES.REQUEST_CANCELLED and kind == "cancel"
            killed = not isinstance(exc, LostUpdate) and self.killed_since(began)
            with self.lock:
                if cancelled:
                    self.expected["call cancelled by us"] += 1
                elif killed:
                    self.expected[f"worker killed: {entry}"] += 1
                else:
                    self.errors[entry] += 1
        else:
            with self.lock:
                self.done[kind] += 1


class Heard:
    """Resource updates heard, by URI."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.counts: collections.Counter[str] = collections.Counter()

    def add(self, uri: str) -> None:
        with self.changed:
            self.counts[uri] += 1
            self.changed.notify_all()

    def count(self, uri: str) -> int:
        with self.changed:
            return self.counts[uri]

    def wait_beyond(self, uri: str, count: int, where: str, timeout: float = HEARD_TIMEOUT) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: self.counts[uri] > count, timeout):
                raise SoakError(f"no resources/updated of {uri} on the {where} within {timeout:g} s")


class NoDelete(requests.Session):
    """A session whose DELETE never goes: the client drops its MCP session without ending it, as a crash would."""

    def __init__(self) -> None:
        super().__init__()
        self.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=16))

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        if (args[0] if args else kwargs.get("method")) == "DELETE":
            raise requests.ConnectionError("the soak drops this session without DELETE")
        return super().request(*args, **kwargs)


# ------------------------------------------------------------------ the load


class Worker:
    """One client thread: a long-lived client of each era, each with its stream, and the cycle of operations."""

    def __init__(self, index: int, url: str, tally: Tally) -> None:
        self.url = url
        self.tally = tally
        self.heard = Heard()
        self.own = {"handshake": f"notes://{index}-get", "stateless": f"notes://{index}-listen"}
        self.clients: dict[str, MCPClient] = {}
        self.made: dict[str, float] = {}
        self.listening: Subscription | None = None
        self.listen_opened = 0.0
        self.turn = 0

    def client(self, era: str) -> MCPClient:
        """The long-lived client of ``era``, made again if the last one closed (with its stream and subscription)."""
        client = self.clients.get(era)
        if client is not None and client.initialized:
            return client
        if client is not None:  # its transport closed: the client gives up on a server it could not reach
            client.close()
            killed = self.tally.killed_since(self.made[era])
            with self.tally.lock:
                counts = self.tally.expected if killed else self.tally.errors
                counts[f"a long-lived {era} client closed{' by a killed worker' if killed else ''}, made again"] += 1
        self.made[era] = time.monotonic()
        client = new_client(self.url, era)
        self.clients[era] = client
        if era == "handshake":
            client.on_notification("notifications/resources/updated", lambda params: self.heard.add(params["uri"]))
            client.subscribe_resource(self.own["handshake"], timeout=CALL_TIMEOUT)
            self.get_stream_open(client)
        else:
            self.listening = None
        return client

    def get_stream_open(self, client: MCPClient) -> None:
        """Wait until the new session's GET stream is open: an update raised before is nobody's to keep, in memory."""
        uri = self.own["handshake"]
        for _ in range(int(HEARD_TIMEOUT / 0.5)):
            before = self.heard.count(uri)
            client.call_tool("touch", {"uri": uri}, timeout=CALL_TIMEOUT)
            with contextlib.suppress(SoakError):
                return self.heard.wait_beyond(uri, before, "GET stream", 0.5)
        raise SoakError(f"the GET stream of a new session heard nothing within {HEARD_TIMEOUT:g} s")

    def listen(self) -> Subscription:
        """The 2026-07-28 client's listen stream, opened again once it ended."""
        if self.listening is not None and self.listening.done.is_set():
            ended, self.listening = self.listening, None
            ended.close()
            if not self.tally.killed_since(self.listen_opened):
                raise SoakError(f"the listen stream ended: {ended.error!r}")
            with self.tally.lock:
                self.tally.expected["listen stream ended by a killed worker, opened again"] += 1
        if self.listening is None:
            self.listen_opened = time.monotonic()
            self.listening = self.client("stateless").listen(
                resource_uris=[self.own["stateless"]],
                on_notification=lambda method, params: self.heard.add(params["uri"]),
                timeout=CALL_TIMEOUT,
            )
        return self.listening

    def calls(self, era: str) -> None:
        client = self.client(era)
        text = f"{era} {self.turn}"
        answer = client.call_tool("echo", {"text": text}, timeout=CALL_TIMEOUT).text
        if answer != text:
            raise SoakError(f"echo answered {answer!r} to {text!r}")
        steps: list[float] = []
        client.call_tool("progress", {"steps": 3}, timeout=CALL_TIMEOUT, progress=lambda p: steps.append(p.progress))
        if steps != [1, 2, 3]:
            raise SoakError(f"progress steps heard: {steps}")

    def update(self, era: str) -> None:
        """Raise an update of ``era``'s resource through the other client (so on any worker) and await it."""
        if era == "stateless":
            self.listen()
        uri = self.own[era]
        before = self.heard.count(uri)
        self.client("stateless" if era == "handshake" else "handshake").call_tool(
            "touch", {"uri": uri}, timeout=CALL_TIMEOUT
        )
        if era == "stateless":
            self.heard.wait_beyond(uri, before, "listen stream")
            return
        try:
            self.heard.wait_beyond(uri, before, "GET stream")
        except SoakError as exc:
            raise LostUpdate(str(exc)) from None

    def cancel(self, era: str) -> None:
        """A call cancelled as soon as the server says it started; answered instead, it is an error."""
        started = threading.Event()
        self.client(era).call_tool(
            "slow", {"seconds": CALL_TIMEOUT}, timeout=CALL_TIMEOUT, cancel=started, progress=lambda p: started.set()
        )
        raise SoakError("a call cancelled mid-flight was answered")

    def task(self, era: str) -> None:
        task = self.client(era).start_tool("job", {"seconds": 0.1}, timeout=CALL_TIMEOUT)
        if task.task_id is None:
            raise SoakError("a task-required tool was answered without a task")
        answer = task.result(timeout=CALL_TIMEOUT).text
        if answer != "job of 0.1 s done":
            raise SoakError(f"the task ended with {answer!r}")

    def churn(self) -> None:
        """A session opened and dropped: with DELETE, without DELETE, or a 2026-07-28 client (no session)."""
        how = ("delete", "drop", "stateless")[self.turn % 3]
        with contextlib.ExitStack() as stack:
            session = stack.enter_context(NoDelete()) if how == "drop" else None
            client = stack.enter_context(
                new_client(self.url, "stateless" if how == "stateless" else "handshake", session)
            )
            client.call_tool("echo", {"text": how}, timeout=CALL_TIMEOUT)

    def run(self, until: float) -> None:
        steps: list[tuple[str, Callable[[], object]]] = []
        for era in ("handshake", "stateless"):
            stream = "GET stream update" if era == "handshake" else "listen stream update"
            steps += [
                (f"calls {era}", functools.partial(self.calls, era)),
                (stream, functools.partial(self.update, era)),
                ("cancel", functools.partial(self.cancel, era)),
                (f"task {era}", functools.partial(self.task, era)),
            ]
        steps.append(("session churn", self.churn))
        try:
            while time.monotonic() < until:
                for kind, step in steps:
                    if time.monotonic() >= until:
                        break
                    self.tally.run(kind, step)
                self.turn += 1
        finally:
            if self.listening is not None:
                self.listening.close()
            for client in self.clients.values():
                client.close()


def new_client(url: str, era: str, session: requests.Session | None = None) -> MCPClient:
    return http_client(url, era=era, timeout=CALL_TIMEOUT, session=session, elicitation_provider=None)


def killer(target: Target, tally: Tally, every: float, stopping: threading.Event) -> None:
    """Kill one worker with SIGKILL every ``every`` seconds and wait for gunicorn to replace it."""
    chooser = random.Random(26)
    while not stopping.wait(every):  # the schedule of kills: waiting on time is the point here
        workers = [pid for pid in children(target.master) if pid != target.kept]
        if target.kept not in children(target.master):
            with tally.lock:
                tally.errors["the worker never killed by the soak died"] += 1
            return
        if not workers:
            continue
        victim = chooser.choice(workers)
        with tally.lock:
            tally.kills.append(time.monotonic())
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and not stopping.is_set():
            now = children(target.master)
            if victim not in now and len(now) >= target.workers:
                break
            time.sleep(0.05)  # only /proc to poll
        else:
            if not stopping.is_set():  # the run ended meanwhile: nothing to say
                with tally.lock:
                    tally.errors[f"gunicorn did not replace a killed worker within {START_TIMEOUT:g} s"] += 1


# ------------------------------------------------------------------ the figures


@dataclass
class Sample:
    at: float
    figures: dict[str, float]
    workers: dict[int, dict[str, Any]]


def client_figures() -> dict[str, float]:
    return {"client threads": threading.active_count(), "client fds": len(os.listdir("/proc/self/fd"))}


def sampler(target: Target, every: float, samples: list[Sample], kinds: list[Any], stopping: threading.Event) -> None:
    """Sample every ``every`` seconds; keep the kinds of Redis keys of the last sample (under load)."""
    began = time.monotonic()
    while True:
        samples.append(Sample(time.monotonic() - began, measure(target) | client_figures(), target.inventory()))
        if target.redis_port is not None:
            kinds[:] = [redis_kinds(target.redis_port)]
        if stopping.wait(every):
            return


def median_of(samples: list[Sample], name: str) -> float:
    return statistics.median(s.figures[name] for s in samples)


def slope_per_minute(samples: list[Sample], name: str) -> float:
    xs, ys = [s.at for s in samples], [s.figures[name] for s in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return 60 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0


def describe(held: dict[str, Any]) -> str:
    """A worker's threads and descriptors, by kind, most first."""
    parts = []
    for what in ("threads", "fds"):
        counts = collections.Counter(held[what])
        parts.append(f"{what} {counts.total()}: " + ", ".join(f"{n} {kind}" for kind, n in counts.most_common()))
    return "; ".join(parts)


def report(
    target: Target, samples: list[Sample], window: tuple[float, float], tally: Tally, leftover: list[str]
) -> bool:
    """Print the table and the verdict; whether the target passed. Growth is judged over ``window`` (seconds
    into the run): after the warm-up, while the load lasts."""
    warmup, load_end = window
    steady = [s for s in samples if warmup <= s.at <= load_end]
    judged = len(steady) >= 9
    if not judged:
        steady = samples  # shown, not judged: nothing has settled yet
    middle = len(steady) // 2
    parts = {"start": steady[:3], "middle": steady[middle - 1 : middle + 2], "end": steady[-3:]}
    print(f"\n{target.name}: {len(samples)} samples, steady from {steady[0].at:.0f} s to {steady[-1].at:.0f} s")
    if not judged:
        print(f"NOT JUDGED: the run is shorter than its warm-up ({warmup:g} s) and 9 samples; growth is shown only")
    # A leak is a trend: the least-squares line over the steady samples, less noisy than any two of them.
    minutes = (steady[-1].at - steady[0].at) / 60
    print(f"{'figure':<17} {'start':>8} {'middle':>8} {'end':>8} {'slope/min':>10} {'trend':>8} {'allowed':>8}")
    failures = list(leftover)
    # On gunicorn the sums over workers depend on the ages of those killed at random: shown; the kept worker judged.
    sums = {name for name in samples[0].figures if name.startswith("server ")}
    unjudged = UNJUDGED | (sums if target.kept else set())
    for name in samples[0].figures:
        start, mid, end = (median_of(part, name) for part in parts.values())
        fraction, least = TOLERANCE.get(name.split()[1], (0.0, 0.0))
        allowed = max(start * fraction, least)
        slope = slope_per_minute(steady, name)
        shown = "shown" if name in unjudged else f"{allowed:8.1f}"
        print(f"{name:<17} {start:8.1f} {mid:8.1f} {end:8.1f} {slope:+10.2f} {slope * minutes:+8.1f} {shown:>8}")
        if judged and name not in unjudged and slope * minutes > allowed:
            failures.append(f"{name} grew {slope * minutes:+.1f} over {minutes:.1f} min (allowed {allowed:.1f})")
    longest = max((s.figures.get("redis longest_ttl", 0.0) for s in samples), default=0.0)
    if longest > warmup:  # what lives that long would still be there after the warm-up: it is not a leftover
        failures.append(f"a Redis key lived {longest:g} s, longer than the warm-up's {warmup:g} s")
    for part, chosen in parts.items():
        for pid, held in sorted(chosen[-1].workers.items()):
            print(f"  {part} worker {pid}, {held['age']:.0f} s old: {describe(held)}")
    print("operations done: " + ", ".join(f"{kind} {n}" for kind, n in sorted(tally.done.items())))
    for title, counts in (("expected by design", tally.expected), ("UNEXPECTED ERRORS", tally.errors)):
        print(f"{title}: {sum(counts.values())}")
        for entry, n in counts.most_common():
            print(f"  {n:6d}  {entry}")
    if tally.errors:
        failures.append(f"{sum(tally.errors.values())} unexpected client errors")
    verdict = "PASS: flat, no unexpected errors" if not failures else "FAIL: " + "; ".join(failures)
    print(f"VERDICT {target.name}: {verdict}", flush=True)
    return not failures


def soak(target: Target, args: argparse.Namespace, baseline: dict[str, float]) -> bool:
    tally = Tally()
    samples: list[Sample] = []
    stopping = threading.Event()
    seconds = args.minutes * 60
    kinds: list[collections.Counter[str]] = []
    sampling = (target, args.sample_every, samples, kinds, stopping)
    helpers = [threading.Thread(target=sampler, args=sampling, name="soak-sample")]
    if target.name == "gunicorn" and args.kill_every > 0:
        helpers.append(
            threading.Thread(target=killer, args=(target, tally, args.kill_every, stopping), name="soak-kill")
        )
    until = time.monotonic() + seconds
    workers = [Worker(i, target.url, tally) for i in range(args.clients)]
    threads = [threading.Thread(target=w.run, args=(until,), name=f"soak-client-{i}") for i, w in enumerate(workers)]
    for thread in helpers + threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + JOIN_TIMEOUT)
    stopping.set()  # the sampler's last sample comes after every client closed
    for thread in helpers:
        thread.join(JOIN_TIMEOUT)
    stuck = [thread.name for thread in threads + helpers if thread.is_alive()]
    leftover = [f"threads still running: {stuck}"] if stuck else []
    # Every client is closed: this process holds what it held before the run (threads end as they close).
    deadline = time.monotonic() + 10.0
    while client_figures() != baseline and time.monotonic() < deadline:
        # The socket of a cancelled handshake-era call outlives its client until the cycle collector runs: the
        # exception that ended its read keeps the reading frame alive (reported; not the soak's to fix).
        gc.collect()
        time.sleep(0.05)  # closing is done; what it started winds down: poll /proc
    after = client_figures()
    print(f"\nclient after close: {after} (before the run: {baseline})")
    leftover += [
        f"{name} {after[name]:g} after close, {baseline[name]:g} before"
        for name in after
        if after[name] > baseline[name]
    ]
    if kinds:
        print("redis keys by kind, under load:")
        for kind, n in sorted(kinds[0].items()):
            print(f"  {n:6d}  {kind}")
    # Leftovers live --idle seconds; on Redis, a stream's note of a server-wide notification lives ONCE_TTL;
    # gunicorn's thread pools fill up to their bound over the first minutes (see the module docstring).
    warmup = max(args.idle, ONCE_TTL if target.redis_port is not None else 0) + 10
    if target.name == "gunicorn":
        warmup = max(warmup, seconds / 2)
    return report(target, samples, (warmup, seconds), tally, leftover)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="per target (fractions allowed)")
    parser.add_argument("--target", choices=("embedded", "gunicorn", "both"), default="both")
    parser.add_argument("--clients", type=int, default=4, help="client threads")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--kill-every", type=float, default=15.0, help="seconds between worker kills (0: none)")
    parser.add_argument("--idle", type=float, default=30.0, help="lifetime of idle sessions and finished tasks (s)")
    parser.add_argument("--sample-every", type=float, default=0.0, help="seconds (default: a 40th of the run)")
    args = parser.parse_args()
    args.sample_every = args.sample_every or max(1.0, args.minutes * 60 / 40)
    print(
        f"soak: {args.minutes:g} min per target, {args.clients} client threads, {args.workers} gunicorn workers,"
        f" a worker killed every {args.kill_every:g} s, leftovers live {args.idle:g} s, {os.cpu_count()} CPUs"
    )
    passed = True
    names = ("embedded", "gunicorn") if args.target == "both" else (args.target,)
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "server.log"
            starting = embedded(args.idle, log) if name == "embedded" else gunicorn(args.idle, args.workers, log)
            with starting as target:
                passed = soak(target, args, client_figures()) and passed  # the server's pipes are in the baseline
            server_log(log)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
