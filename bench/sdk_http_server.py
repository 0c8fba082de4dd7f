"""The official SDK's echo server over Streamable HTTP (run with the SDK's Python), for the benchmark.

Run it as ``python sdk_http_server.py --port N --mode sse|json``: ``sse``
answers each request with an SSE stream, ``json`` with one JSON body.

``echo`` is declared as the benchmark declares ours: it returns its text as
text content only (``structured_output=False``: no ``structuredContent``
copy, no ``outputSchema``), so both sides carry and check the same payload.
The interoperability tests' server (``tests/servers/sdk_http_server.py``)
has more tools and keeps the SDK's default declaration; this one serves the
benchmark alone.
"""

from __future__ import annotations

import argparse
import socket
import warnings

import uvicorn
from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")  # the SDK flags the handshake-era features as deprecated

server = MCPServer("sdk-http-echo")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["sse", "json"], default="sse")
    options = parser.parse_args()
    app = server.streamable_http_app(json_response=options.mode == "json")
    # IPPROTO_TCP named explicitly: asyncio turns Nagle's algorithm off only on sockets that say
    # so, and without that every JSON answer (headers and body written apart) waits ~40 ms.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", options.port))
    listener.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
