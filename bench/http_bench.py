"""HTTP benchmark: mcp_sync against the official ``mcp`` SDK over Streamable HTTP, side by side in one run.

Every server runs in its own process on 127.0.0.1 and serves an ``echo``
tool, declared alike on both sides as ``echo(text: str) -> str`` with
``structured_output=False``: it returns its text as text content only, with
no ``structuredContent`` copy and no ``outputSchema``. Before printing
anything the benchmark checks that shape in every column (for the ceiling,
its fixed answer), and stops if they differ. Every client makes the same
calls, each echoing ``"hello"``:

- ``mcp_sync -> mcp_sync``: our client (in this process) and our server
  (:func:`mcp_sync.serve_http` in a child);
- ``SDK -> SDK (sse)`` and ``SDK -> SDK (json)``: the SDK's client
  (``bench/sdk_http_client.py``) and the SDK's server
  (``bench/sdk_http_server.py``) in its default mode and in JSON-response
  mode;
- ``mcp_sync -> SDK (sse|json)``: our client against the SDK's servers;
- ``gunicorn (handshake|stateless)``: our client and our server hosted
  the other way, ``examples/scaled_app.py`` under ``gunicorn -k gthread``
  (one worker, 32 threads, connections kept alive; the worker's CPU counted);
- ``ceiling``: a bare ``requests.Session`` POST loop against a bare
  ``http.server`` handler that answers a fixed JSON body;
- ``gunicorn bare WSGI``: the same loop against ``bench/bare_wsgi.py``, a
  WSGI app answering that body, under the same gunicorn as ours: the floor
  of the gunicorn columns (printed last, with ours over it);
- ``requests floor``: our embedded server (a 2026-07-28 ``tools/call``)
  called with nothing but ``requests.Session.send`` of one request prepared
  once (the environment's proxy settings given, worked out once, as our
  client does), the body read whole and decoded: the least a client built on
  ``requests`` spends per call, whose figures bound ours with N clients
  (printed last, with ours over it).

Figures: connect time (the median of five, after one that warms up; for us
the handshake and the tool listing that :class:`~mcp_sync.client.MCPClient`
does on connect, for the ceiling a new connection's first POST); sequential
``tools/call`` round trips per second with their p50 and p99; calls per
second of N clients calling at once (N threads, each with its own
connection, for us and for the ceiling; N tasks for the SDK), with the p50
and p99 of those calls; and in both parts the server process's CPU time
(user and system, from /proc) per call, with N clients also the client
process's (this one for ours and the ceiling, the SDK's client script for
the SDK), and the cores that keeps busy: the threads of one Python process
share one interpreter lock, so a client near 1 core is what bounds the
calls per second there, not the server. Our client runs in both eras
against our server: ``handshake`` (initialize, then a session) and
``stateless`` (2026-07-28). The SDK's client runs in ``legacy`` mode (the
handshake) and in its default ``auto`` mode (2026-07-28 with its own
server). The last table divides our figures by the best SDK -> SDK figure
of each row.

Usage::

    python bench/http_bench.py [--calls 2000] [--clients 8] [--sdk-python PATH]

Without ``--sdk-python`` the SDK is installed into the peers' cache (see
``tests/peers.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from benchlib import WORKLOAD, check_echo_shapes, child_pids, cpu_seconds, echo_shape, percentile  # noqa: E402

from mcp_sync.client import http_client  # noqa: E402
from mcp_sync.client.core import MCPClient  # noqa: E402

SDK_SERVER = HERE / "sdk_http_server.py"

OUR_SERVER = """
import logging, sys
from mcp_sync import MCPServer
from mcp_sync import serve_http
logging.disable(logging.INFO)
server = MCPServer("bench-echo")
@server.tool(structured_output=False)
def echo(text: str) -> str:
    "Return the text unchanged."
    return text
serve_http(server, port=int(sys.argv[1]))
"""

BARE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}'
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
STATELESS_REVISION = "2026-07-28"
STATELESS_REQUEST = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": "hello"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "requests-floor", "version": "1"},
            },
        },
    }
).encode()
"""The same call in 2026-07-28, which our server answers without a session (the requests floor's call)."""

ROWS = [
    ("connect_s", "connect (s)", "lower"),
    ("sequential_per_s", "sequential calls/s", "higher"),
    ("p50_ms", "  p50 (ms)", "lower"),
    ("p99_ms", "  p99 (ms)", "lower"),
    ("server_cpu_seq_us", "  server CPU per call (us)", "lower"),
    ("concurrent_per_s", "N clients at once, calls/s", "higher"),
    ("concurrent_p50_ms", "  p50 (ms)", "lower"),
    ("concurrent_p99_ms", "  p99 (ms)", "lower"),
    ("server_cpu_conc_us", "  server CPU per call (us)", "lower"),
    ("client_cpu_conc_us", "  client CPU per call (us)", "lower"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_accepting(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing accepted connections on port {port} within {timeout:.0f} s")


@contextlib.contextmanager
def child(argv: list[str], port: int, cwd: Path | None = None, env: dict[str, str] | None = None) -> Iterator[int]:
    """A server in a child process, accepting on ``port``; gives its process id."""
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=cwd, env=env
    )
    try:
        wait_accepting(port, process)
        yield process.pid
    finally:
        process.kill()
        process.wait(10)


def sdk_server(python: str, mode: str) -> tuple[contextlib.AbstractContextManager[int], str]:
    port = free_port()
    argv = [python, str(SDK_SERVER), "--port", str(port), "--mode", mode]
    return child(argv, port), f"http://127.0.0.1:{port}/mcp"


def our_server() -> tuple[contextlib.AbstractContextManager[int], str]:
    port = free_port()
    return child([sys.executable, "-c", OUR_SERVER, str(port)], port), f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def gunicorn_worker(port: int, app: str = "examples.scaled_app:application") -> Iterator[int]:
    """``app`` (``examples.scaled_app``) under gunicorn gthread (one worker, in memory), accepting on ``port``; gives
    the worker's process id (the master only watches it)."""
    argv = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "32", "-w", "1", "--keep-alive", "5"]
    argv += ["-b", f"127.0.0.1:{port}", app]
    env = {key: value for key, value in os.environ.items() if key != "MCP_SYNC_REDIS_URL"}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{HERE}"  # (bench/ for bare_wsgi)
    with child(argv, port, cwd=ROOT, env=env) as master:
        deadline = time.monotonic() + 60
        while not child_pids(master) and time.monotonic() < deadline:
            time.sleep(0.05)  # (the master listens before it forks its worker)
        (worker,) = child_pids(master)
        try:
            yield worker
        finally:
            os.kill(master, signal.SIGINT)  # a quick shutdown: the master stops its worker, then child() kills it
            while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline + 70:
                time.sleep(0.05)


def our_gunicorn() -> tuple[contextlib.AbstractContextManager[int], str]:
    port = free_port()
    return gunicorn_worker(port), f"http://127.0.0.1:{port}/mcp"


def bare_gunicorn() -> tuple[contextlib.AbstractContextManager[int], str]:
    """``bench/bare_wsgi.py`` under the same gunicorn: gunicorn's own cost per request, the floor of ours there."""
    port = free_port()
    return gunicorn_worker(port, "bare_wsgi:application"), f"http://127.0.0.1:{port}/mcp"


def bare_server() -> tuple[contextlib.AbstractContextManager[int], str]:
    port = free_port()
    return child([sys.executable, "-c", BARE_SERVER, str(port)], port), f"http://127.0.0.1:{port}/mcp"


def timed_loop(call: Callable[[], Any], calls: int, server_pid: int) -> dict[str, float]:
    latencies = []
    cpu = cpu_seconds(server_pid)
    for _ in range(calls):
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    return {
        "sequential_per_s": calls / sum(latencies),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "server_cpu_seq_us": (cpu_seconds(server_pid) - cpu) / calls * 1e6,
    }


def concurrently(
    make: Callable[[], Callable[[], Any]], close: Callable[[Any], None], calls: int, clients: int, server_pid: int
) -> dict[str, float]:
    """``clients`` threads, each with a connection of its own, calling at once: calls/s, latencies, server CPU.

    Connecting, warming up and closing are outside the measured window.
    """
    per_client = calls // clients
    start = threading.Barrier(clients + 1)
    through = threading.Barrier(clients + 1)
    latencies: list[float] = []

    def work() -> None:
        call = make()
        call()  # connected and warm
        start.wait()
        own = []
        for _ in range(per_client):
            t = time.perf_counter()
            call()
            own.append(time.perf_counter() - t)
        latencies.extend(own)
        through.wait()
        close(call)

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
    t = time.perf_counter()
    through.wait()
    elapsed = time.perf_counter() - t
    server_cpu, client_cpu = cpu_seconds(server_pid) - cpu, time.process_time() - own_cpu
    for thread in threads:
        thread.join()
    return {
        "concurrent_per_s": per_client * clients / elapsed,
        "concurrent_p50_ms": percentile(latencies, 50) * 1000,
        "concurrent_p99_ms": percentile(latencies, 99) * 1000,
        "server_cpu_conc_us": server_cpu / (per_client * clients) * 1e6,
        "client_cpu_conc_us": client_cpu / (per_client * clients) * 1e6,
    }


def connect_time(connect: Callable[[], Any], close: Callable[[Any], None]) -> float:
    """The median of five connects (a first one warms up what is done once per process)."""
    close(connect())
    times = []
    for _ in range(5):
        started = time.perf_counter()
        connection = connect()
        times.append(time.perf_counter() - started)
        close(connection)
    return statistics.median(times)


def measure_ours(url: str, calls: int, clients: int, era: str, server_pid: int) -> dict[str, Any]:
    def connect() -> MCPClient:
        return http_client(url, transport="streamable", era=era)

    results: dict[str, Any] = {"connect_s": connect_time(connect, MCPClient.close)}
    client = connect()
    warm = client.call_tool("echo", {"text": "warm up"})
    tool = next(tool for tool in client.list_tools().tools if tool.name == "echo")
    results["echo_shape"] = echo_shape(warm.to_wire(), tool.to_wire())
    results.update(timed_loop(lambda: client.call_tool("echo", {"text": "hello"}), calls, server_pid))
    client.close()
    owners: dict[int, MCPClient] = {}

    def make() -> Callable[[], Any]:
        own = connect()

        def call() -> Any:
            return own.call_tool("echo", {"text": "hello"})

        owners[id(call)] = own
        return call

    results.update(concurrently(make, lambda call: owners[id(call)].close(), calls, clients, server_pid))
    return results


def measure_sdk(python: str, url: str, calls: int, clients: int, mode: str, server_pid: int) -> dict[str, Any]:
    command = [python, str(HERE / "sdk_http_client.py"), url, str(calls), str(clients), mode, str(server_pid)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True, cwd=HERE)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def measure_ceiling(
    url: str, calls: int, clients: int, server_pid: int, *, body: bytes = REQUEST, prepared: bool = False
) -> dict[str, Any]:
    """A bare ``requests.Session`` POSTing ``body``: ``Session.post`` each time, or (``prepared``) ``Session.send``
    of one request prepared once, with the environment's settings worked out once, which skips what ``post`` works
    out again for every call."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if prepared:
        headers.update({"MCP-Protocol-Version": STATELESS_REVISION, "Mcp-Method": "tools/call", "Mcp-Name": "echo"})

    def poster(session: requests.Session) -> Callable[[], Any]:
        if not prepared:
            return lambda: session.post(url, data=body, headers=headers, timeout=10).json()
        request = session.prepare_request(requests.Request("POST", url, data=body, headers=headers))
        # The environment's proxy, CA and certificate settings worked out once, as our client does: without them
        # Session.send reads the proxy variables of the environment again on every call (a third of its time here).
        settings = session.merge_environment_settings(url, {}, None, None, None)
        kept = {key: settings[key] for key in ("proxies", "verify", "cert")}
        return lambda: json.loads(session.send(request, timeout=10, **kept).content)

    def connect() -> requests.Session:
        session = requests.Session()
        poster(session)()
        return session

    results: dict[str, Any] = {"connect_s": connect_time(connect, requests.Session.close)}
    session = connect()
    post = poster(session)
    results["echo_shape"] = echo_shape(post()["result"], None)  # a bare server lists no tools
    results.update(timed_loop(post, calls, server_pid))
    session.close()
    sessions: dict[int, requests.Session] = {}

    def make() -> Callable[[], Any]:
        own = requests.Session()
        call = poster(own)
        sessions[id(call)] = own
        return call

    results.update(concurrently(make, lambda call: sessions[id(call)].close(), calls, clients, server_pid))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    args = parser.parse_args()
    if args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()

    columns: dict[str, dict[str, Any]] = {}
    for era in ("handshake", "stateless"):
        server, url = our_server()
        with server as pid:
            columns[f"ours ({era})"] = measure_ours(url, args.calls, args.clients, era, pid)
    for era in ("handshake", "stateless"):
        server, url = our_gunicorn()
        with server as pid:
            columns[f"gunicorn ({era})"] = measure_ours(url, args.calls, args.clients, era, pid)
    for server_mode, client_modes in (("json", ("legacy", "auto")), ("sse", ("legacy", "auto"))):
        server, url = sdk_server(args.sdk_python, server_mode)
        with server as pid:
            for mode in client_modes:
                columns[f"SDK {server_mode} ({mode})"] = measure_sdk(
                    args.sdk_python, url, args.calls, args.clients, mode, pid
                )
            if server_mode == "json":
                columns["ours -> SDK json"] = measure_ours(url, args.calls, args.clients, "auto", pid)
    server, url = bare_server()
    with server as pid:
        columns["ceiling"] = measure_ceiling(url, args.calls, args.clients, pid)
    server, url = bare_gunicorn()
    with server as pid:
        columns["gunicorn bare WSGI"] = measure_ceiling(url, args.calls, args.clients, pid)
    server, url = our_server()
    with server as pid:
        columns["requests floor"] = measure_ceiling(
            url, args.calls, args.clients, pid, body=STATELESS_REQUEST, prepared=True
        )
    check_echo_shapes({name: column.pop("echo_shape") for name, column in columns.items()})

    names = list(columns)
    print(f"Streamable HTTP on 127.0.0.1, {args.calls} echo calls, N = {args.clients} clients at once")
    print(f"workload: {WORKLOAD}")
    print('payload: "hello" (5 characters) in every call; the ceiling answers a fixed text-only result')
    print("columns: client -> server; 'SDK json (legacy)' is the SDK's client in legacy mode against its JSON server")
    width = max(19, *(len(name) + 2 for name in names))
    print(f"{'':28}" + "".join(f"{name:>{width}}" for name in names))
    for key, label, _ in ROWS:
        print(f"{label:28}" + "".join(f"{columns[name][key]:{width}.3f}" for name in names))
    sdk = [name for name in names if name.startswith("SDK ")]
    print("\nours / the best SDK -> SDK figure of each row (> 1: mcp_sync is better; the best SDK column named;")
    print(" o: embedded server, g: gunicorn gthread):")
    for key, label, better in ROWS:
        pick = max if better == "higher" else min
        best = pick(sdk, key=lambda name: columns[name][key])
        ratios = []
        for host in ("ours", "gunicorn"):
            for era in ("handshake", "stateless"):
                ours, theirs = columns[f"{host} ({era})"][key], columns[best][key]
                ratios.append(f"{host[0]}/{era} {ours / theirs if better == 'higher' else theirs / ours:5.2f}x")
        print(f"  {label.strip():26} " + "   ".join(ratios) + f"   (best SDK: {best})")
    floor = columns["gunicorn bare WSGI"]
    print("\nserver CPU per call, ours under gunicorn over a bare WSGI app under the same gunicorn (its floor):")
    for key, label in (("server_cpu_seq_us", "sequential"), ("server_cpu_conc_us", "N clients at once")):
        shares = [f"{era} {columns[f'gunicorn ({era})'][key] / floor[key]:5.2f}x" for era in ("handshake", "stateless")]
        best = min((name for name in names if name.startswith("SDK json")), key=lambda name: columns[name][key])
        print(
            f"  {label:26} " + "   ".join(shares) + f"   (the floor / {best}: {floor[key] / columns[best][key]:.2f}x)"
        )
    print("\nN clients at once, cores the client process kept busy (CPU per call x calls/s; one lock: ~1 at most):")
    busy = [(name, columns[name]["client_cpu_conc_us"] * columns[name]["concurrent_per_s"] / 1e6) for name in names]
    print("  " + "   ".join(f"{name} {cores:.2f}" for name, cores in busy))
    floor = columns["requests floor"]
    print("\nN clients at once, ours over the requests floor (Session.send of a prepared request, to our server):")
    for key, label, better in (
        row for row in ROWS if row[0] in ("concurrent_per_s", "concurrent_p99_ms", "client_cpu_conc_us")
    ):
        pick = max if better == "higher" else min
        best = pick(sdk, key=lambda name: columns[name][key])
        shares = [
            f"{host[0]}/{era} {columns[f'{host} ({era})'][key] / floor[key]:5.2f}x"
            for host in ("ours", "gunicorn")
            for era in ("handshake", "stateless")
        ]
        bound = f"(the floor / {best}: {floor[key] / columns[best][key]:.2f}x)"
        print(f"  {label.strip():26} " + "   ".join(shares) + f"   {bound}")


if __name__ == "__main__":
    main()
