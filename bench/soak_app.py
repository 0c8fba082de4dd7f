"""The server ``bench/soak.py`` soaks: tools for each kind of load, served embedded or under gunicorn.

Like ``examples/scaled_app.py``, with what a soak needs besides: a slow tool
that stops when cancelled, a tool that must run as a task, and short
lifetimes for what a client may leave behind (an idle session, a finished
task, an SSE stream on Redis), so that a run of minutes reaches its steady
state and stays there: ``SOAK_IDLE_SECONDS`` (30 by default) for all.

Under gunicorn (the backend from ``MCP_SYNC_REDIS_URL``), from ``bench/``::

    gunicorn -k gthread --threads 32 -w 2 -b 127.0.0.1:8000 'soak_app:make_app()'

With ``SOAK_INVENTORY_DIR`` set (the soak sets it), each worker writes what
it holds to ``<pid>.json`` there every second: its threads by name and by
what they do, its descriptors by kind (:func:`inventory`).

Embedded (:func:`~mcp_sync.start_http`, in memory), printing its URL, until
its stdin closes::

    python bench/soak_app.py
"""

from __future__ import annotations

import collections
import contextlib
import gc
import json
import os
import re
import sys
import threading
import types
from pathlib import Path

from mcp_sync import Context, MCPServer, StreamableHTTPApp, start_http
from mcp_sync.server.scale.redis_backend import RedisBackend
from mcp_sync.server.scale.redis_events import RedisEventStore

IDLE_SECONDS = float(os.environ.get("SOAK_IDLE_SECONDS", "30"))

server = MCPServer("soak", "1.0")
server.tasks.ttl_ms = int(IDLE_SECONDS * 1000)  # finished tasks nobody reads again go within the steady state


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


@server.tool(structured_output=False)
def progress(steps: int, ctx: Context) -> str:
    """Report progress once per step, then finish."""
    for step in range(1, steps + 1):
        ctx.progress(step, steps)
    return f"{steps} steps"


@server.tool(structured_output=False)
def slow(seconds: float, ctx: Context) -> str:
    """Tell the client it started (one progress step), then wait ``seconds`` unless cancelled first."""
    ctx.progress(0, 1, "started")
    return "stopped" if ctx.cancelled.wait(seconds) else "done"


@server.tool(structured_output=False, task="required")
def job(seconds: float, ctx: Context) -> str:
    """A short job that always runs as a task."""
    return "stopped" if ctx.cancelled.wait(seconds) else f"job of {seconds:g} s done"


@server.tool(structured_output=False)
def touch(uri: str) -> str:
    """Mark the resource ``uri`` updated: its subscribers hear of it, on every worker."""
    server.mark_resource_updated(uri)
    return uri


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note, for clients to subscribe to."""
    return f"note {name}"


def remote_ports() -> dict[str, int]:
    """This process's TCP sockets by inode: the port of their other end (0: none, a listening socket)."""
    ends = {}
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/self/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                ends[fields[9]] = int(fields[2].rsplit(":", 1)[1], 16)
    return ends


def waiting_for_work(frame: types.FrameType | None) -> bool:
    """Whether a thread of one of our pools waits for its next task (a pool keeps an idle thread a while).

    Its innermost Python frame is then the pool's own: the queue it waits on is C code. A busy one runs a task."""
    return frame is not None and frame.f_code.co_filename.endswith(os.path.join("runtime", "workers.py"))


def doing(frame: types.FrameType | None) -> str:
    """What a thread of ours does, for the inventory: `` (idle)`` in a pool, else where its wait is (if waiting)."""
    if waiting_for_work(frame):
        return " (idle)"
    while frame is not None and not any(ours in frame.f_code.co_filename for ours in ("mcp_sync", "soak_app")):
        frame = frame.f_back  # out of the standard library's waits
    return "" if frame is None else f" in {frame.f_code.co_name}"


def inventory(redis_port: int) -> dict[str, dict[str, int]]:
    """This worker's threads by name (numbers masked) and descriptors by kind: what a soak's figures are made of."""
    # No collection while the frames are built: on CPython 3.11 one started there (holding the thread list's lock)
    # may run a finalizer that waits for a thread that waits for that lock, and the whole worker hangs.
    enabled = gc.isenabled()
    gc.disable()
    try:
        frames = sys._current_frames()
    finally:
        if enabled:
            gc.enable()
    threads = collections.Counter(
        re.sub(r"\d+", "N", t.name) + doing(frames.get(t.ident or 0)) for t in threading.enumerate()
    )
    fds: collections.Counter[str] = collections.Counter()
    ends = remote_ports()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile (the listing itself, among others)
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                remote = ends.get(target[8:-1], 0)
                target = "socket to redis" if remote == redis_port else "socket listening" if not remote else "socket"
            fds[re.sub(r"\[\d+\]|\d+", "N", target)] += 1
    return {"threads": dict(threads), "fds": dict(fds)}


def write_inventory(folder: Path, redis_port: int, every: float) -> None:
    """Write this worker's inventory to ``folder/<pid>.json`` every ``every`` seconds, for the soak to read."""
    path = folder / f"{os.getpid()}.json"
    while True:
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(inventory(redis_port)))
        scratch.replace(path)  # the soak never reads half a file
        threading.Event().wait(every)


def make_app() -> StreamableHTTPApp:
    """The WSGI app (gunicorn's ``'soak_app:make_app()'``); made in each worker, after every registration.

    On Redis, SSE streams outlive their last event by ``SOAK_IDLE_SECONDS`` too (the default is an hour): the
    POST streams a killed worker's copies of sessions leave behind would pile up for an hour otherwise.
    """
    url = os.environ.get("MCP_SYNC_REDIS_URL")
    if not url:
        return StreamableHTTPApp(server, session_idle_timeout=IDLE_SECONDS)
    folder = os.environ.get("SOAK_INVENTORY_DIR")
    if folder:  # one daemon thread per worker, a constant in the figures it reports
        redis_port = int(url.rsplit(":", 1)[1].split("/")[0])
        args = (Path(folder), redis_port, 1.0)
        threading.Thread(target=write_inventory, args=args, name="soak-inventory", daemon=True).start()
    backend = RedisBackend(url)
    store = RedisEventStore(backend, ttl=IDLE_SECONDS)
    return StreamableHTTPApp(server, session_idle_timeout=IDLE_SECONDS, backend=backend, event_store=store)


if __name__ == "__main__":
    with start_http(server, session_idle_timeout=IDLE_SECONDS) as running:
        print(running.url, flush=True)
        sys.stdin.read()  # until the soak closes our stdin (or goes away)
