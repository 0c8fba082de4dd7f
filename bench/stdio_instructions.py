"""Instructions per echo ``tools/call`` in each era, counted by callgrind: a measure the machine's load does not move.

Wall-clock figures of ``stdio_bench.py`` swing by tens of percent on a
shared machine, and the two eras differ by less than that. This counts the
instructions a call costs instead, with ``valgrind --tool=callgrind``, in one
process and one thread: our client and the tree's ``examples/echo_server.py``
server joined by a transport that hands each encoded message straight to
the other side (the server answers inline, as over stdio). What a call
costs is then all the encoding, decoding, dispatching and handling both
sides do, without the pipe and the thread wake-ups, which are the same in
both eras. Each figure is ``(I(n2) - I(n1)) / (n2 - n1)`` for two runs of
``n1`` and ``n2`` calls, so start-up cancels out. ``--side server`` counts
the server's share alone (the client's requests are decoded from fixed
lines, the answers encoded and dropped). ``--side pipe`` counts the real
thing: our client and the echo server in its own process over stdio, both
processes counted (``--trace-children``), with the transport's reading,
writing and threads (a thread's wake-ups depend on timing, so this figure
moves a little from run to run).

Usage::

    python bench/stdio_instructions.py [--trees . /work/main] [--side both|server|pipe] [--calls 300 1300]

Needs valgrind. Each run takes some seconds per tree and era (callgrind is slow).
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Any

from benchlib import callgrind_instructions

HERE = Path(__file__).resolve()

ERAS = ("handshake", "stateless")
HANDSHAKE_CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
STATELESS_CALL = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},'
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},'
    b'"io.modelcontextprotocol/clientInfo":{"name":"mcp-sync","version":"0.1.0"}}}}'
)
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def run_calls(tree: str, era: str, side: str, calls: int) -> None:
    """The measured program: ``calls`` echo calls of ``era`` through ``tree``'s mcp_sync, in this thread."""
    sys.path.insert(0, tree)
    from mcp_sync import MCPClient
    from mcp_sync.protocol.jsonrpc import decode_message, encode_message
    from mcp_sync.runtime.transport import BaseTransport

    class Direct(BaseTransport):
        """Hands each message, encoded and decoded as on a wire, to the other end at once."""

        def __init__(self) -> None:
            super().__init__()
            self.peer: Direct | None = None
            self.handoff_reading = None
            self.answers: list[bytes] = []

        def _write(self, message: Any) -> None:
            data = encode_message(message)
            if self.peer is None:
                self.answers.append(data)  # the server alone: nobody reads its answers
            else:
                self.peer._deliver(decode_message(data))

        def _shutdown(self) -> None:
            pass

        def _handlers_changed(self) -> None:
            pass

    if side == "pipe":
        from mcp_sync.client import stdio_client

        command = [sys.executable, f"{tree}/examples/echo_server.py"]
        # Under callgrind everything runs some fifty times slower: no wait may time out.
        client = stdio_client(command, inherit_env=True, era=era, connect_timeout=None, probe_timeout=3600)
        for _ in range(calls):
            assert client.call_tool("echo", {"text": "hello"}).text == "hello"
        client.disconnect()
        return
    server = runpy.run_path(f"{tree}/examples/echo_server.py")["server"]
    server_end = Direct()
    server_end.handoff_reading = lambda: None  # the server answers on the thread that delivered the request
    server.start(server_end)
    if side == "server":
        if era == "handshake":
            server_end._deliver(decode_message(INITIALIZE))
            server_end._deliver(decode_message(INITIALIZED))
        line = HANDSHAKE_CALL if era == "handshake" else STATELESS_CALL
        for _ in range(calls):
            server_end._deliver(decode_message(line))
            answer = server_end.answers.pop()
            assert b'"hello"' in answer, answer
    else:
        client_end = Direct()
        client_end.peer, server_end.peer = server_end, client_end
        client = MCPClient(era=era)
        client.connect(client_end)
        for _ in range(calls):
            assert client.call_tool("echo", {"text": "hello"}).text == "hello"
        client.close()
    server.stop()


def instructions(tree: str, era: str, side: str, calls: int) -> int:
    """The instructions callgrind counts for a whole run of ``calls`` calls."""
    # With --side pipe the server's process is counted too.
    return callgrind_instructions([sys.executable, str(HERE), "--run", tree, era, side, str(calls)], children=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs="+", default=[str(HERE.parent.parent)])
    parser.add_argument("--side", choices=["both", "server", "pipe"], default="both")
    parser.add_argument("--calls", nargs=2, type=int, default=[300, 1300], metavar=("N1", "N2"))
    parser.add_argument("--run", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        tree, era, side, calls = args.run
        run_calls(tree, era, side, int(calls))
        return
    n1, n2 = args.calls
    sides = {"both": "both sides", "server": "server side", "pipe": "both processes, over stdio"}[args.side]
    print(f"instructions per echo tools/call ({sides}, callgrind)")
    print(f"{'tree':40}{'handshake':>12}{'stateless':>12}{'h/s':>8}")
    for tree in args.trees:
        tree = str(Path(tree).resolve())
        per_call = {}
        for era in ERAS:
            first, second = instructions(tree, era, args.side, n1), instructions(tree, era, args.side, n2)
            per_call[era] = (second - first) / (n2 - n1)
        ratio = per_call["handshake"] / per_call["stateless"]
        print(f"{tree:40}{per_call['handshake']:12,.0f}{per_call['stateless']:12,.0f}{ratio:8.3f}")
    print("(h/s: the stateless era's calls/s over the handshake era's, were CPU all a call cost)")


if __name__ == "__main__":
    main()
