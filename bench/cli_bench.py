"""End-to-end benchmark: ``mcp-sync call SERVER echo text=hello`` against the same call from a script using the SDK.

The row of the speed table it measures: a one-off tool call from the shell,
wall time from the start of the process to the result printed on its
stdout (the time a user waits), within 0.3 times the same call made by a
script using the official SDK's ``Client`` (``sdk_cli_call.py``, in the
SDK's Python). Both call the same stdio server, this tree's
``examples/echo_server.py``, so the difference is the client's: its
import, spawning the server, the handshake, the call and printing.

Beside them, three floors: the interpreter's start (``python -c pass``); a
bare client, a ``python -c`` script with no library that spawns the same
server, writes the initialize request, waits for its answer (as the
lifecycle asks), then writes the initialized notification and the call, and
prints the answer's text: what no client of this server can go under; and a
pydantic client, the bare client that imports pydantic once the server is
started (as ``mcp-sync call`` does) and reads the call's result into a
pydantic model before printing it: what no client whose messages are
pydantic models (ours, the SDK's) can go under, for it pays pydantic's
import and its first validator (the plugin scan) on top.

Each command runs in a fresh process, interleaved round after round,
after one warm-up run each (bytecode caches written). Medians over the
rounds.

Usage::

    python bench/cli_bench.py [--rounds 7] [--sdk-python PATH]

Without ``--sdk-python`` the SDK is installed into the peers' cache (see
``tests/peers.py``). Everything but the SDK's script runs from a virtualenv
where ``pip install .`` put mcp_sync (``benchlib.user_python``), with this
tree on ``PYTHONPATH``: ``mcp-sync`` is its console script, as at a user's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import PYDANTIC_RESULT_MODELS, tree_environment, user_python

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BARE_CLIENT = """
import json, subprocess, sys
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(*messages):
    server.stdin.write(b"".join(json.dumps(m).encode() + b"\\n" for m in messages))
    server.stdin.flush()
def answer_to(request_id):
    for line in server.stdout:
        answer = json.loads(line)
        if answer.get("id") == request_id:
            return answer["result"]
    raise SystemExit(f"the server closed its output before answering request {request_id}")
# The call waits for initialize's answer, as the lifecycle asks: sent at once, it could reach a server still
# initializing and be refused.
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
      "capabilities": {}, "clientInfo": {"name": "bare", "version": "1"}}})
answer_to(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"},
     {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}})
print(answer_to(2)["content"][0]["text"], flush=True)
server.stdin.close()
server.wait(10)
"""
"""A client with no library: the least a client of the echo server does for one call."""

PYDANTIC_CLIENT = BARE_CLIENT.replace("def send(", PYDANTIC_RESULT_MODELS + "def send(").replace(
    'print(answer_to(2)["content"][0]["text"]', "print(Result.model_validate(answer_to(2)).content[0].text"
)
"""The bare client with pydantic, imported once the server is started: the call's result read into a model."""
assert PYDANTIC_CLIENT.index("Popen") < PYDANTIC_CLIENT.index("pydantic") < PYDANTIC_CLIENT.index("model_validate")


def our_command(python: str, server: list[str]) -> list[str]:
    """``mcp-sync call``: the console script beside ``python``."""
    return [str(Path(python).with_name("mcp-sync")), "call", " ".join(server), "echo", "text=hello"]


def time_to_output(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to its first line on stdout (which must be ``hello``), and to its exit."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline()
    printed = time.perf_counter() - started
    _, err = process.communicate(timeout=60)
    ended = time.perf_counter() - started
    if line.strip() != b"hello" or process.returncode != 0:
        raise SystemExit(f"{command[:2]} printed {line!r}, exit {process.returncode}: {err.decode()[-2000:]}")
    return printed, ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    args = parser.parse_args()
    if args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()

    env = tree_environment()  # the server (and our client) import this tree
    python = user_python()
    server = [python, str(ROOT / "examples" / "echo_server.py")]
    cases = {
        "mcp-sync call": our_command(python, server),
        "SDK Client script": [args.sdk_python, str(HERE / "sdk_cli_call.py"), *server],
        "bare client (floor)": [python, "-c", BARE_CLIENT, *server],
        "pydantic client (floor)": [python, "-c", PYDANTIC_CLIENT, *server],
        "python -c pass": [python, "-c", "print('hello')"],
    }
    for command in cases.values():
        time_to_output(command, env)  # warm-up: bytecode caches written, files in the page cache
    printed: dict[str, list[float]] = {name: [] for name in cases}
    ended: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, command in cases.items():
            to_output, to_exit = time_to_output(command, env)
            printed[name].append(to_output)
            ended[name].append(to_exit)

    print(f"one tools/call from a fresh process, same stdio server: {' '.join(server)}")
    print(f"medians of {args.rounds} interleaved rounds; SDK: {args.sdk_python}")
    print(f"{'':24}{'to result (s)':>15}{'to exit (s)':>13}")
    median = {name: statistics.median(samples) for name, samples in printed.items()}
    for name in cases:
        print(f"{name:24}{median[name]:15.3f}{statistics.median(ended[name]):13.3f}")
    ratio = median["mcp-sync call"] / median["SDK Client script"]
    floor = median["bare client (floor)"] / median["SDK Client script"]
    pydantic = median["pydantic client (floor)"] / median["SDK Client script"]
    print(f"cli end to end, mcp-sync / SDK: {ratio:.2f}x (goal <= 0.3); bare client floor: {floor:.2f}x")
    print(f"pydantic client floor: {pydantic:.2f}x; mcp-sync over it: {ratio / pydantic:.2f}x")


if __name__ == "__main__":
    main()
