"""Open streams benchmark: many idle server-to-client streams held by one server process, mcp_sync against the SDK.

The row of the speed table it measures: 2,000 idle open streams on one
process with RSS within 300 MiB, a notification reaching all of them within
1 s, and new calls still served at normal latency.

Each server runs in a child process on 127.0.0.1 with an ``echo`` tool, a
``register`` tool and a ``touch`` tool that sends one tools-list-changed
notification to every client:

- ``mcp_sync``: :func:`~mcp_sync.serve_http` with
  ``max_connections`` and ``max_sessions`` raised above N (by default it
  serves 256 connections and 1,000 sessions). ``touch`` registers or unregisters a
  dummy tool, which notifies every session (and every listen stream that
  asked for tool changes); ``register`` does nothing.
- ``SDK``: the SDK's ``MCPServer.streamable_http_app`` under uvicorn (JSON
  answers by default, ``--sdk-mode sse`` for its default mode) with
  ``max_sessions`` raised and its ``subscriptions/listen`` handler replaced
  by one with ``max_subscriptions`` raised (the default refuses beyond
  1,024). The SDK has no call that notifies every handshake-era session, so
  ``register`` keeps the calling session and ``touch`` sends
  ``send_tool_list_changed()`` to each kept one, then publishes
  ``ToolsListChanged`` on the server's subscription bus for listen streams.

The streams are raw sockets in this process, not client objects, and one of
two kinds:

- ``get`` (handshake era, 2025-11-25): per stream, ``initialize``,
  ``notifications/initialized`` and a ``register`` call on one shared
  keep-alive connection, then ``GET`` with ``Accept: text/event-stream`` and
  the session id on a socket of its own, open once its headers arrived;
- ``listen`` (2026-07-28): per stream, a ``subscriptions/listen`` POST asking
  for ``toolsListChanged`` on a socket of its own, open once its
  acknowledgement arrived.

Figures, per server and kind, each from a fresh server process: its RSS and
thread count before opening the streams and ``--settle`` seconds after the
last one opened (from /proc; our idle handler threads end 30 s after their
last request, so ``--settle 35`` shows the steady state), the time to open
them, p50/p99 of sequential ``echo`` calls (on a session of their own) with
no stream open and with all open, and for the notification: the time the
server's ``touch`` spent handing it to every client (its own measure, which it
returns), and the time from sending ``touch`` until the first stream, the
median one and every stream received it (the median of ``--triggers``
triggers, each measured after the previous one's events were read; the
figures of each trigger are printed too).

Usage::

    python bench/streams_bench.py [--streams 2000] [--kinds get,listen] [--calls 200] [--triggers 3]
        [--settle 1] [--sdk-mode json|sse] [--sdk-python PATH] [--servers mcp_sync,SDK]

Without ``--sdk-python`` the SDK is installed into the peers' cache (see
``tests/peers.py``). Both processes and the server children raise their
open-file limit to the hard limit.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import resource
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from benchlib import percentile, rss_kib  # noqa: E402

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
PATH = "/mcp"
MARK = b"tools/list_changed"

RAISE_NOFILE = """
import resource
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (_hard, _hard))
"""

OUR_SERVER = (
    RAISE_NOFILE
    + """
import logging, sys, time
from mcp_sync import MCPServer
from mcp_sync import serve_http
logging.disable(logging.INFO)
port, streams = int(sys.argv[1]), int(sys.argv[2])
server = MCPServer("bench-streams")
@server.tool(structured_output=False)
def echo(text: str) -> str:
    "Return the text unchanged."
    return text
@server.tool(structured_output=False)
def register() -> str:
    "Nothing to do: the server knows its sessions."
    return "ok"
def dummy(arguments, ctx):
    return "dummy"
@server.tool(structured_output=False)
def touch() -> str:
    "Change the tool list, which notifies every client once; the seconds that took."
    started = time.perf_counter()
    if server.get_tool("dummy") is None:
        server.register_tool("dummy", dummy)
    else:
        server.unregister_tool("dummy")
    return repr(time.perf_counter() - started)
serve_http(server, port=port, max_connections=streams + 64, max_sessions=streams + 64)
"""
)

SDK_SERVER = (
    RAISE_NOFILE
    + """
import socket, sys, time, warnings
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import ListenHandler
from mcp_types import SubscriptionsListenRequestParams
warnings.simplefilter("ignore")  # the SDK flags the handshake-era features as deprecated
port, streams, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
server = MCPServer("sdk-streams")
sessions = []  # the handshake-era sessions that called register
@server.tool(structured_output=False)
def echo(text: str) -> str:
    "Return the text unchanged."
    return text
@server.tool(structured_output=False)
async def register(ctx: Context) -> str:
    "Keep this session: the SDK has no call that notifies every session."
    sessions.append(ctx.session)
    return "ok"
@server.tool(structured_output=False)
async def touch(ctx: Context) -> str:
    "Notify every kept session (GET streams) and every listen stream; the seconds that took."
    started = time.perf_counter()
    for session in list(sessions):
        await session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return repr(time.perf_counter() - started)
# The default listen handler refuses more than 1,024 streams.
server._lowlevel_server.add_request_handler(
    "subscriptions/listen",
    SubscriptionsListenRequestParams,
    ListenHandler(server._subscriptions, max_subscriptions=streams + 64),
)
app = server.streamable_http_app(json_response=mode == "json", max_sessions=streams + 64)
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(1024)
config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
uvicorn.Server(config).run(sockets=[listener])
"""
)

ROWS = [
    ("opened", "streams open", "higher"),
    ("open_s", "time to open them (s)", "lower"),
    ("rss_before_mib", "server RSS before (MiB)", "lower"),
    ("rss_after_mib", "server RSS with streams (MiB)", "lower"),
    ("kib_per_stream", "  KiB per stream", "lower"),
    ("threads_before", "server threads before", "lower"),
    ("threads_after", "server threads with streams", "lower"),
    ("notify_loop_ms", "notify: server's send loop (ms)", "lower"),
    ("notify_first_ms", "notify: first stream (ms)", "lower"),
    ("notify_median_ms", "notify: median stream (ms)", "lower"),
    ("notify_all_ms", "notify: all streams (ms)", "lower"),
    ("p50_idle_ms", "echo p50, no streams (ms)", "lower"),
    ("p99_idle_ms", "echo p99, no streams (ms)", "lower"),
    ("p50_ms", "echo p50, streams open (ms)", "lower"),
    ("p99_ms", "echo p99, streams open (ms)", "lower"),
]


def raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


@contextlib.contextmanager
def child(argv: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    # stderr goes to a file: the SDK logs a line per session, which would fill a pipe and stall it.
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    errors.seek(0)
                    tail = errors.read()[-2000:]
                    raise RuntimeError(f"the server exited with code {process.returncode}: {tail!r}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nothing accepted connections on port {port} within 60 s")
                time.sleep(0.05)
            yield process
        finally:
            process.kill()
            process.wait(10)


def rpc(request_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def answer_of(body: bytes, content_type: str) -> dict[str, Any]:
    """The JSON-RPC response in a JSON body or an SSE stream."""
    if content_type.startswith("application/json"):
        answer: dict[str, Any] = json.loads(body)
        return answer
    for line in body.decode().splitlines():
        if line.startswith("data:") and line[5:].strip():  # a priming event has empty data
            message = json.loads(line[5:])
            if "result" in message or "error" in message:
                found: dict[str, Any] = message
                return found
    raise RuntimeError(f"no response in the SSE body {body[:300]!r}")


class Poster:
    """Handshake-era POSTs on one keep-alive connection (opened again when the server closed it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.ids = 0

    def post(self, body: bytes, session: str | None) -> tuple[int, dict[str, Any] | None, str | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session is not None:
            headers["Mcp-Session-Id"] = session
            headers["MCP-Protocol-Version"] = HANDSHAKE
        for attempt in range(2):
            try:
                self.connection.request("POST", PATH, body, headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):  # an idle keep-alive the server closed
                self.connection.close()
                if attempt:
                    raise
            except BaseException:
                self.connection.close()  # ready for the next request
                raise
        if response.status == 202 or not data:
            return response.status, None, response.getheader("Mcp-Session-Id")
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:300]!r}")
        answer = answer_of(data, response.getheader("Content-Type") or "")
        return response.status, answer, response.getheader("Mcp-Session-Id")

    def call(self, method: str, params: dict[str, Any], session: str | None) -> dict[str, Any]:
        self.ids += 1
        _, answer, _ = self.post(rpc(self.ids, method, params), session)
        if answer is None or "result" not in answer:
            raise RuntimeError(f"{method} failed: {answer}")
        result: dict[str, Any] = answer["result"]
        return result

    def session(self) -> str:
        """A new handshake-era session: initialize, then notifications/initialized."""
        self.ids += 1
        params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        _, answer, session = self.post(rpc(self.ids, "initialize", params), None)
        if session is None or answer is None or "result" not in answer:
            raise RuntimeError(f"initialize failed: {answer}")
        self.post(rpc(None, "notifications/initialized"), session)
        return session

    def tool(self, name: str, session: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call("tools/call", {"name": name, "arguments": arguments or {}}, session)
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result}")
        return result

    def close(self) -> None:
        self.connection.close()


@dataclass
class Stream:
    """One open stream: its socket and what arrived on it since the last reset."""

    sock: socket.socket
    data: bytearray = field(default_factory=bytearray)


def read_head(sock: socket.socket, until: bytes, timeout: float) -> bytes:
    """Read (blocking) until ``until`` arrived after the response head; what arrived so far."""
    sock.settimeout(timeout)
    data = bytearray()
    while True:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0 and (not until or data.find(until, head_end) >= 0):
            return bytes(data)
        if head_end >= 0 and not data.startswith(b"HTTP/1.1 200"):
            return bytes(data)
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(data)
        data += chunk


def open_get(port: int, poster: Poster) -> socket.socket:
    session = poster.session()
    poster.tool("register", session)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {HANDSHAKE}\r\n\r\n".encode()
    )
    return check_stream(sock, read_head(sock, b"", 10))


def open_listen(port: int, number: int) -> socket.socket:
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = rpc(number, "subscriptions/listen", {"_meta": meta, "notifications": {"toolsListChanged": True}})
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {STATELESS}\r\n"
        f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return check_stream(sock, read_head(sock, b"subscriptions/acknowledged", 10))


def check_stream(sock: socket.socket, head: bytes) -> socket.socket:
    if not head.startswith(b"HTTP/1.1 200") or b"text/event-stream" not in head.lower():
        sock.close()
        raise RuntimeError(f"the stream was refused: {head[:200]!r}")
    return sock


def timed_calls(poster: Poster, session: str, calls: int) -> tuple[float, float]:
    latencies = []
    for _ in range(calls):
        t = time.perf_counter()
        result = poster.tool("echo", session, {"text": "hello"})
        latencies.append(time.perf_counter() - t)
        assert result["content"][0]["text"] == "hello", result
    return percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000


def drain(selector: selectors.BaseSelector, quiet: float, limit: float = 2.0) -> int:
    """Read what the streams have until none sends for ``quiet`` seconds (at most ``limit``); how many ended.

    The limit matters: with thousands of streams, their pings may never leave a quiet moment.
    """
    ended = 0
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        ready = selector.select(quiet)
        if not ready:
            break
        for key, _ in ready:
            stream: Stream = key.data
            try:
                chunk = stream.sock.recv(65536)
            except BlockingIOError:
                continue
            if not chunk:
                selector.unregister(stream.sock)
                ended += 1
    return ended


def notify_all(
    poster: Poster, session: str, selector: selectors.BaseSelector, streams: list[Stream]
) -> tuple[list[float], float]:
    """Send ``touch``; the seconds until each stream received the notification, and the server's own loop."""
    for stream in streams:
        stream.data.clear()
    waiting = {stream.sock.fileno() for stream in streams}
    arrivals: list[float] = []
    # touch is answered on another thread, so that the arrivals are read as they come.
    answers: list[dict[str, Any]] = []
    trigger = threading.Thread(target=lambda: answers.append(poster.tool("touch", session)))
    started = time.perf_counter()
    trigger.start()
    deadline = started + 30
    while waiting and time.perf_counter() < deadline:
        for key, _ in selector.select(max(0.0, deadline - time.perf_counter())):
            stream = key.data
            try:
                chunk = stream.sock.recv(65536)
            except BlockingIOError:
                continue
            if not chunk:
                selector.unregister(stream.sock)
                waiting.discard(key.fd)
                continue
            stream.data += chunk
            if key.fd in waiting and MARK in stream.data:
                waiting.discard(key.fd)
                arrivals.append(time.perf_counter() - started)
    trigger.join(30)
    if waiting:
        print(f"    {len(waiting)} stream(s) got no notification within 30 s", file=sys.stderr)
    loop = float(answers[0]["content"][0]["text"]) if answers else float("nan")
    return arrivals, loop


def measure(
    argv: list[str], port: int, kind: str, count: int, calls: int, triggers: int, settle: float, show: bool
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with child(argv, port) as process:
        poster = Poster(port)
        session = poster.session()
        poster.tool("register", session)  # this session gets the notification too, on no stream
        timed_calls(poster, session, 50)  # warm up
        results["p50_idle_ms"], results["p99_idle_ms"] = timed_calls(poster, session, calls)
        before = rss_kib(process.pid)
        results["threads_before"] = threads_of(process.pid)
        socks: list[socket.socket] = []
        started = time.perf_counter()
        try:
            for number in range(count):
                socks.append(open_get(port, poster) if kind == "get" else open_listen(port, number + 1))
        except (OSError, RuntimeError) as error:
            results["failure"] = f"stream {len(socks) + 1} of {count}: {error}"
            print(f"    stopped opening streams at {len(socks)}: {error}", file=sys.stderr)
        results["open_s"] = time.perf_counter() - started
        results["opened"] = len(socks)
        selector = selectors.DefaultSelector()
        streams = [Stream(sock) for sock in socks]
        for stream in streams:
            stream.sock.setblocking(False)
            selector.register(stream.sock, selectors.EVENT_READ, stream)
        try:
            ended = drain(selector, 0.5)
            time.sleep(settle)  # let the server settle before reading its memory
            after = rss_kib(process.pid)
            results["threads_after"] = threads_of(process.pid)
            results["rss_before_mib"] = before / 1024
            results["rss_after_mib"] = after / 1024
            results["kib_per_stream"] = (after - before) / max(1, len(streams))
            results["p50_ms"], results["p99_ms"] = timed_calls(poster, session, calls)
            rounds = []
            loops: list[float] = []
            for round_number in range(triggers):
                arrivals, loop = notify_all(poster, session, selector, streams)
                loops.append(loop)
                if show and round_number == 0 and streams:
                    print(f"    first stream received: {bytes(streams[0].data)!r}", file=sys.stderr)
                rounds.append(sorted(arrivals) or [float("nan")])
                if len(arrivals) < len(streams):
                    results["failure"] = f"{len(streams) - len(arrivals)} stream(s) missed a notification"
                ended += drain(selector, 0.3)
            rounds.sort(key=lambda arrivals: arrivals[-1])
            middle = rounds[len(rounds) // 2]  # the trigger whose last arrival is the median
            results["notify_first_ms"] = middle[0] * 1000
            results["notify_median_ms"] = statistics.median(middle) * 1000
            results["notify_all_ms"] = middle[-1] * 1000
            results["notify_loop_ms"] = statistics.median(loops) * 1000
            results["notify_all_each_ms"] = [round(r[-1] * 1000, 1) for r in rounds]
            if ended:
                results["failure"] = f"{ended} stream(s) ended while idle"
        finally:
            selector.close()
            for sock in socks:
                sock.close()
            poster.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--kinds", default="get,listen", help="get (handshake era), listen (2026-07-28) or both")
    parser.add_argument("--servers", default="mcp_sync,SDK")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--triggers", type=int, default=3)
    parser.add_argument("--sdk-mode", choices=["json", "sse"], default="json")
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    parser.add_argument(
        "--settle", type=float, default=1.0, help="seconds to wait after opening before reading RSS and threads"
    )
    parser.add_argument("--show-event", action="store_true", help="print what the first stream received")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # end the server children on the way out
    raise_nofile()
    needed = 2 * args.streams + 100
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        raise SystemExit(f"the open-file limit is below {needed}: raise the hard limit (ulimit -Hn)")
    servers = args.servers.split(",")
    if "SDK" in servers and args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()

    columns: dict[str, dict[str, Any]] = {}
    for kind in args.kinds.split(","):
        for name in servers:
            port = free_port()
            if name == "mcp_sync":
                argv = [sys.executable, "-c", OUR_SERVER, str(port), str(args.streams)]
            else:
                argv = [args.sdk_python, "-c", SDK_SERVER, str(port), str(args.streams), args.sdk_mode]
            label = f"{name} {kind}"
            print(f"  {label}: opening {args.streams} streams...", file=sys.stderr, flush=True)
            columns[label] = measure(
                argv, port, kind, args.streams, args.calls, args.triggers, args.settle, args.show_event
            )

    names = list(columns)
    print(
        f"Idle open streams on one server process, 127.0.0.1: {args.streams} asked; get = handshake-era GET "
        f"({HANDSHAKE}), listen = subscriptions/listen ({STATELESS}); SDK server mode {args.sdk_mode!r}"
    )
    print(
        f"echo latency: {args.calls} sequential calls on one session; notify: median of {args.triggers} "
        "triggers, from sending touch until every stream received tools/list_changed; "
        f"RSS and threads read {args.settle:g} s after the last stream opened"
    )
    print(f"{'':32}" + "".join(f"{name:>18}" for name in names))
    for key, label, _ in ROWS:
        cells = "".join(f"{columns[name].get(key, float('nan')):18.1f}" for name in names)
        print(f"{label:32}" + cells)
    for name in names:
        column = columns[name]
        if "notify_all_each_ms" in column:
            print(f"  {name}: notify all, each trigger (ms): {column['notify_all_each_ms']}")
        if "failure" in column:
            print(f"  {name}: {column['failure']}")
    print("\ngoal: RSS with streams <= 300 MiB, all streams notified within 1 s, echo latency as with no streams")
    for name in names:
        column = columns[name]
        if "p50_ms" not in column:
            continue
        print(
            f"  {name:18} RSS {column['rss_after_mib']:.0f} MiB, notified all in {column['notify_all_ms']:.0f} ms, "
            f"echo p50 {column['p50_ms'] / column['p50_idle_ms']:.2f}x and p99 "
            f"{column['p99_ms'] / column['p99_idle_ms']:.2f}x their values without streams"
        )
    print("\nmcp_sync compared with the SDK (> 1: mcp_sync is better):")
    for kind in args.kinds.split(","):
        ours, theirs = columns.get(f"mcp_sync {kind}"), columns.get(f"SDK {kind}")
        if ours is None or theirs is None:
            continue
        ratios = []
        for key, label, better in ROWS:
            if key in ("opened", "threads_before", "threads_after") or key not in ours or key not in theirs:
                continue
            mine, other = ours[key], theirs[key]
            ratio = (mine / other if better == "higher" else other / mine) if mine and other else float("nan")
            ratios.append(f"{label.strip()} {ratio:.2f}x")
        print(f"  {kind}: " + "; ".join(ratios))


if __name__ == "__main__":
    main()
