"""stdio benchmark: mcp_sync against the official ``mcp`` SDK, side by side in one run.

Both sides run an equivalent echo server (``examples/echo_server.py`` for
us, ``bench/sdk_stdio_server.py`` for the SDK) whose ``echo(text: str) -> str``
is declared alike, with ``structured_output=False``: it returns its text as
text content only, with no ``structuredContent`` copy and no ``outputSchema``.
Before printing anything the benchmark checks that shape on both sides, and
stops if they differ. The workload is the same on both sides: cold connect
(spawn plus handshake; the median of ``--connects`` connections, each to a
new server process, for one sample swings by a fifth between runs),
sequential ``tools/call`` round trips, the server's resident memory after
them, 16 calls in flight (16 threads for us, 16 tasks for the SDK), all
echoing ``"hello"``, then a 1 MB and a 10 MB echo (strings of ``x``), the
server's resident memory again, and close. Our client runs in both eras:
``handshake`` (initialize first) and ``stateless`` (2026-07-28, each request
self-describing); the SDK's client in the mode given.

Two ceilings: a JSON line echoed by a trivial Python child (the pipe
alone), and a bare JSON-RPC loop between two Python processes (the client
encodes a ``tools/call`` request, the child decodes it and answers a
text-only result, the client decodes that and checks the id), which is
the least any JSON-RPC implementation must do per call. And a floor: that
loop's child with one pydantic model validating the arguments and one
building the result, whose cold connect and resident memory no server built
on pydantic goes under, and whose calls/s (as a share of the bare loop's)
none goes over. Each share of the bare loop is taken against a loop child
run in turns with what it measures (blocks of 100 calls each): our two
eras' sequential calls and the loop's in turn, then the pydantic child's
and another loop's, so that what is compared met the same load. The bare
loop's figure printed is the median of those two.

Usage::

    python bench/stdio_bench.py [--calls 3000] [--connects 5] [--sdk-python PATH] [--sdk-mode auto|legacy]

Without ``--sdk-python`` the SDK is installed into the peers' cache (see
``tests/peers.py``). Our server and the children of the ceilings and the
floor run from a virtualenv where ``pip install .`` put mcp_sync, as the
SDK's server runs from one where pip put ``mcp`` (``benchlib.user_python``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from benchlib import (  # noqa: E402
    PYDANTIC_RESULT_MODELS,
    WORKLOAD,
    check_echo_shapes,
    echo_shape,
    percentile,
    rss_kib,
    tree_environment,
    user_python,
)

from mcp_sync.client import MCPClient, stdio_client  # noqa: E402
from mcp_sync.transports.stdio import ProcessTransport  # noqa: E402

ROWS = [
    ("connect_s", "cold connect (s)", "lower"),
    ("close_s", "close (s)", "lower"),
    ("sequential_per_s", "sequential calls/s", "higher"),
    ("p50_ms", "  p50 latency (ms)", "lower"),
    ("p99_ms", "  p99 latency (ms)", "lower"),
    ("calls_rss_mib", "server RSS after calls (MiB)", "lower"),
    ("inflight16_per_s", "16 in flight, calls/s", "higher"),
    ("echo_1mb_s", "1 MB echo (s)", "lower"),
    ("echo_10mb_s", "10 MB echo (s)", "lower"),
    ("server_rss_mib", "server RSS at the end (MiB)", "lower"),
]


def measure_ours(calls: int, connects: int) -> dict[str, dict[str, Any]]:
    """Every row for our client in each era: the sequential calls of both eras and of a bare loop run in turns.

    Each era connects ``connects`` times (the median is its cold connect); the last connection stays for the rest.
    """
    columns: dict[str, dict[str, Any]] = {}
    clients = {}
    command = [user_python(), str(ROOT / "examples" / "echo_server.py")]
    for era in ("handshake", "stateless"):
        results: dict[str, Any] = {}
        columns[era] = results
        samples = []
        for attempt in range(connects):
            started = time.perf_counter()
            client = stdio_client(command, env=tree_environment(), era=era)
            samples.append(time.perf_counter() - started)
            if attempt < connects - 1:
                client.close()
        clients[era] = client
        results["connect_s"] = statistics.median(samples)
        warm = client.call_tool("echo", {"text": "warm up"})
        tool = next(tool for tool in client.list_tools().tools if tool.name == "echo")
        results["echo_shape"] = echo_shape(warm.to_wire(), tool.to_wire())

    # Blocks of each era's calls and of the bare loop's in turn: all three meet the same load.
    latencies: dict[str, list[float]] = {era: [] for era in clients}
    loop = LoopChild(JSONRPC_CHILD)
    for start in range(0, calls, BLOCK):
        block = min(BLOCK, calls - start)
        for era, client in clients.items():
            for _ in range(block):
                t = time.perf_counter()
                client.call_tool("echo", {"text": "hello"})
                latencies[era].append(time.perf_counter() - t)
        loop.run(block)
    loop_per_s = loop.close()
    for era, client in clients.items():
        results = columns[era]
        results["loop_per_s"] = loop_per_s
        results["sequential_per_s"] = calls / sum(latencies[era])
        results["p50_ms"] = percentile(latencies[era], 50) * 1000
        results["p99_ms"] = percentile(latencies[era], 99) * 1000
        measure_the_rest(client, calls, results)
    return columns


def measure_the_rest(client: MCPClient, calls: int, results: dict[str, Any]) -> None:
    """The rows after the sequential calls: RSS, calls in flight, large echoes, close."""
    transport = client._dispatcher.transport if client._dispatcher else None
    assert isinstance(transport, ProcessTransport)
    results["calls_rss_mib"] = rss_kib(transport.process.pid) / 1024

    def worker(n: int) -> None:
        for _ in range(n):
            client.call_tool("echo", {"text": "hello"})

    threads = [threading.Thread(target=worker, args=(calls // 16,)) for _ in range(16)]
    t = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results["inflight16_per_s"] = (calls // 16) * 16 / (time.perf_counter() - t)

    for size, key in ((1_000_000, "echo_1mb_s"), (10_000_000, "echo_10mb_s")):
        text = "x" * size
        t = time.perf_counter()
        result = client.call_tool("echo", {"text": text})
        results[key] = time.perf_counter() - t
        assert len(result.text) == size

    results["server_rss_mib"] = rss_kib(transport.process.pid) / 1024
    t = time.perf_counter()
    client.disconnect()
    results["close_s"] = time.perf_counter() - t


def measure_sdk(calls: int, connects: int, sdk_python: str, mode: str) -> dict[str, Any]:
    command = [sdk_python, str(HERE / "sdk_stdio_client.py"), mode, str(calls), str(connects), sdk_python]
    command.append(str(HERE / "sdk_stdio_server.py"))
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True, cwd=HERE)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def measure_raw_pipe(calls: int) -> float:
    """Round trips per second of a JSON line echoed by a trivial Python child."""
    code = "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()"
    child = subprocess.Popen([user_python(), "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    line = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}\n'
    t = time.perf_counter()
    for _ in range(calls):
        child.stdin.write(line)
        child.stdin.flush()
        child.stdout.readline()
    elapsed = time.perf_counter() - t
    child.stdin.close()
    child.wait(10)
    return calls / elapsed


JSONRPC_CHILD = """
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    text = request["params"]["arguments"]["text"]
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode() + b"\\n")
    out.flush()
"""


BLOCK = 100
"""Calls in a row before switching to the other process, where two are measured in alternation."""


class LoopChild:
    """A child answering bare JSON-RPC echo calls, driven as the bare loop's client does: encode, decode, match the id.

    Its figure is measured in blocks alternating with another measure (see
    :data:`BLOCK`): on a loaded machine the figures of two runs minutes
    apart differ by tens of percent, and a share of one in the other is
    only fair when both met the same load.
    """

    def __init__(self, code: str) -> None:
        self.process = subprocess.Popen([user_python(), "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.calls = 0
        self.seconds = 0.0

    def run(self, calls: int) -> None:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        t = time.perf_counter()
        for n in range(self.calls, self.calls + calls):
            request = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hello"}},
            }
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
            answer = json.loads(stdout.readline())
            assert answer["id"] == n and answer["result"]["content"][0]["text"] == "hello"
        self.seconds += time.perf_counter() - t
        self.calls += calls

    def stop(self) -> None:
        """End the child (it exits at the end of its input)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(10)
        self.process.stdout.close()

    def close(self) -> float:
        """Stop the child; its calls per second."""
        self.stop()
        return self.calls / self.seconds


PYDANTIC_CHILD = (
    "import json, sys\n"
    + PYDANTIC_RESULT_MODELS
    + """class Arguments(BaseModel):
    text: str
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    text = Arguments.model_validate(request["params"]["arguments"]).text
    result = Result(content=[Text(text=text)]).model_dump()
    out.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode() + b"\\n")
    out.flush()
"""
)


def measure_pydantic_floor(calls: int, connects: int) -> dict[str, float]:
    """The least a Python server that uses pydantic for its messages costs: spawn to first answer, calls/s, RSS.

    The child is the bare JSON-RPC loop's, plus one pydantic model that
    validates the arguments and one that builds the result (as any server
    built on pydantic models does). Its cold connect (the median of
    ``connects`` spawns) and resident memory are what no pydantic server can
    go under (here, with this interpreter's startup), and its calls/s,
    driven by the bare loop's client, what none can go over.
    """
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}}
    ).encode()
    samples = []
    for attempt in range(connects):
        started = time.perf_counter()
        floor = LoopChild(PYDANTIC_CHILD)
        child = floor.process
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(line + b"\n")
        child.stdin.flush()
        child.stdout.readline()
        samples.append(time.perf_counter() - started)
        if attempt < connects - 1:
            floor.stop()
    connect = statistics.median(samples)
    loop = LoopChild(JSONRPC_CHILD)
    for _ in range(0, calls, BLOCK):
        floor.run(BLOCK)
        loop.run(BLOCK)
    rss = rss_kib(child.pid) / 1024
    return {"connect_s": connect, "calls_rss_mib": rss, "sequential_per_s": floor.close(), "loop_per_s": loop.close()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--connects", type=int, default=5, help="cold connects per side and era (their median)")
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    parser.add_argument("--sdk-mode", default="auto", choices=["auto", "legacy"], help="the SDK client's mode")
    args = parser.parse_args()
    if args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()
    user_python()  # made (the first time) before anything is timed

    sdk = measure_sdk(args.calls, args.connects, args.sdk_python, args.sdk_mode)
    columns = measure_ours(args.calls, args.connects)
    shapes = {f"mcp_sync ({era})": column.pop("echo_shape") for era, column in columns.items()}
    check_echo_shapes({**shapes, "mcp SDK": sdk.pop("echo_shape")})
    raw = measure_raw_pipe(args.calls * 3)
    floor = measure_pydantic_floor(args.calls * 3, args.connects)

    print(f"stdio, {args.calls} calls; official SDK client mode {args.sdk_mode!r}")
    print(f"workload: {WORKLOAD}")
    print('payloads: "hello" (5 characters) for the call rows; 1 MB and 10 MB strings of "x" for the echo rows')
    print(f"{'':30}{'handshake':>11}{'stateless':>11}{'mcp SDK':>11}{'ratio h':>9}{'ratio s':>9}")
    for key, label, better in ROWS:
        a, b, c = columns["handshake"][key], columns["stateless"][key], sdk[key]
        ratios = [(x / c if better == "higher" else c / x) for x in (a, b)]
        print(f"{label:30}{a:11.3f}{b:11.3f}{c:11.3f}{ratios[0]:8.1f}x{ratios[1]:8.1f}x")
    print("(ratio > 1 means mcp_sync is better: faster, or smaller)")
    print(f"{'raw JSON pipe round trips/s':30}{raw:11.0f}")
    loop = statistics.median([columns["handshake"]["loop_per_s"], floor["loop_per_s"]])
    print(f"{'bare JSON-RPC loop calls/s':30}{loop:11.0f}")
    for era, column in columns.items():
        share = column["sequential_per_s"] / column["loop_per_s"]
        print(f"sequential calls/s, {era}: {share:.0%} of the bare JSON-RPC loop")
    share = floor["sequential_per_s"] / floor["loop_per_s"]
    print(f"floor, a pydantic echo child: sequential calls/s {floor['sequential_per_s']:.0f}, {share:.0%} of the loop")
    for key, label in (("connect_s", "cold connect (s)"), ("calls_rss_mib", "server RSS after calls (MiB)")):
        ratio = floor[key] / sdk[key]
        print(f"floor, a pydantic echo child: {label} {floor[key]:.3f}, {ratio:.2f} of the SDK's")
    gap = columns["stateless"]["sequential_per_s"] / columns["handshake"]["sequential_per_s"]
    print(f"stateless / handshake sequential calls/s: {gap:.2f}")


if __name__ == "__main__":
    main()
