"""What ``StreamableHTTPApp`` costs per request, without any HTTP server: CPU per call and a profile.

A real client (ours, in each era) connects to ``examples.scaled_app`` hosted
by the embedded server, through a recorder that keeps the environ and body of
its ``tools/call`` POST. That request is then replayed ``--calls`` times
straight into the same app, as a host that lets another thread write a
response calls it (``--host embedded``: the embedded server, gunicorn's
gthread and sync workers; a request served alone runs on the calling thread)
or as one that does not (``--host other``: waitress, say; every request hops
to a handler thread and back). Printed: the process's CPU time per call (all
threads: the hop's included); with ``--profile``, the functions taking most
of it (cProfile, every thread); with ``--instructions N1 N2``, the
instructions per call counted by callgrind, ``(I(N2) - I(N1)) / (N2 - N1)``
(start-up cancels out; the machine's load does not move it; about a minute
per run).

Usage::

    python bench/http_app_profile.py [--calls 5000] [--era handshake|stateless] [--host embedded|other]
        [--profile] [--instructions N1 N2] [--tree PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
# --tree PATH: measure that tree's mcp_sync (and examples) instead of this one's
TREE = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv else str(ROOT)
sys.path.insert(0, TREE)

from benchlib import callgrind_instructions  # noqa: E402

from examples.scaled_app import application  # noqa: E402
from mcp_sync.client import http_client  # noqa: E402
from mcp_sync.server.http.wsgi import CONNECTION_SOCKET, WRITE_FROM_ANY_THREAD, WSGIServer  # noqa: E402

recorded: list[tuple[dict[str, Any], bytes]] = []


def recorder(environ: dict[str, Any], start_response: Any) -> Any:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    if b'"tools/call"' in body:
        kept = {k: v for k, v in environ.items() if k not in ("wsgi.input", CONNECTION_SOCKET, WRITE_FROM_ANY_THREAD)}
        recorded.append((kept, body))
    environ["wsgi.input"] = io.BytesIO(body)
    return application(environ, start_response)


def replay(environ: dict[str, Any], body: bytes, embedded: bool) -> bytes:
    env = dict(environ)
    env["wsgi.input"] = io.BytesIO(body)
    if embedded:
        env[WRITE_FROM_ANY_THREAD] = True
    got: list[str] = []
    result = application(env, lambda status, headers, exc_info=None: got.append(status))
    out = b"".join(result)
    close = getattr(result, "close", None)
    if close is not None:
        close()
    assert got == ["200 OK"], (got, out)
    return out


def instructions(args: argparse.Namespace, calls: int) -> int:
    """The instructions callgrind counts for a whole run of ``calls`` calls (start-up included)."""
    command = [sys.executable, str(HERE), "--tree", args.tree, "--era", args.era, "--host", args.host]
    return callgrind_instructions([*command, "--calls", str(calls), "--warm", "20"])


thread_profilers: list[cProfile.Profile] = []


def profile_thread(*_: object) -> None:
    """Called at a new thread's first event: profile the rest of the thread."""
    profiler = cProfile.Profile()
    thread_profilers.append(profiler)
    profiler.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--era", default="handshake", choices=["handshake", "stateless"])
    parser.add_argument("--host", default="embedded", choices=["embedded", "other"])
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--tree", default=str(ROOT))
    parser.add_argument("--instructions", nargs=2, type=int, metavar=("N1", "N2"))
    args = parser.parse_args()
    if args.instructions:
        n1, n2 = args.instructions
        first, second = (instructions(args, n) for n in (n1, n2))
        print(f"{args.era} {args.host} {args.tree}: {(second - first) / (n2 - n1):,.0f} instructions per call")
        return
    logging.disable(logging.INFO)
    if args.profile:
        threading.setprofile(profile_thread)  # threads started from now on (the app's handler threads) are profiled
    with WSGIServer(recorder) as server, http_client(server.url + "/mcp", era=args.era) as client:
        client.call_tool("echo", {"text": "hello"})
        environ, body = recorded[-1]
        embedded = args.host == "embedded"
        for _ in range(args.warm):
            replay(environ, body, embedded)
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(args.calls):
            replay(environ, body, embedded)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if profiler is not None:
            profiler.disable()
        per_call = f"{cpu / args.calls * 1e6:.1f} us CPU per call, {wall / args.calls * 1e6:.1f} us wall"
        print(f"{args.era} {args.host}: {per_call}")
        if profiler is not None:
            stream = io.StringIO()
            pstats.Stats(profiler, *thread_profilers, stream=stream).sort_stats("tottime").print_stats(args.top)
            print(stream.getvalue())
    application.close()


if __name__ == "__main__":
    main()
