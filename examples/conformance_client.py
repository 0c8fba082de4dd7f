"""The client that the official MCP conformance suite tests: one behaviour per scenario.

The suite starts a mock server for a scenario, then runs this script with
the server's URL as its last argument and the scenario's name in the
environment variable ``MCP_CONFORMANCE_SCENARIO``::

    npx @modelcontextprotocol/conformance client \\
        --command "python examples/conformance_client.py" --scenario tools_call

The script connects with mcp_sync's Streamable HTTP client, does what the
scenario asks, and exits 0 on success and 1 on any failure. A scenario it
does not know gets a plain handshake and a tool listing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from mcp_sync import MCPClient, MCPError
from mcp_sync.types import ElicitRequestFormParams, ElicitResult

log = logging.getLogger("conformance-client")

TIMEOUT = 20.0
"""Seconds any one request may take; the suite kills the client after 30."""


def accept_with_defaults(params: ElicitRequestFormParams) -> ElicitResult:
    """Answer a form by accepting it, every field that has a default filled with that default (SEP-1034)."""
    content: dict[str, Any] = {}
    for name, field in params.requested_schema.properties.items():
        default = getattr(field, "default", None)
        if default is not None:
            content[name] = default
    log.info("elicitation %r answered with %s", params.message, json.dumps(content))
    return ElicitResult(action="accept", content=content)


def connect(url: str) -> MCPClient:
    """A client connected over Streamable HTTP, answering elicitations with the defaults."""
    from mcp_sync.http_client import http_client

    return http_client(
        url,
        transport="streamable",  # the suite speaks Streamable HTTP only
        name="mcp-sync-conformance-client",
        version="1.0.0",
        timeout=TIMEOUT,
        elicitation_provider=accept_with_defaults,
    )


def handshake(client: MCPClient) -> None:
    """``initialize``: initialize (done by connecting), then list the tools."""
    tools = client.list_tools().tools
    log.info("connected to %s; %d tools", client.server_info.name, len(tools))


def call_add_numbers(client: MCPClient) -> None:
    """``tools_call``: find ``add_numbers`` and call it with two numbers."""
    names = [tool.name for tool in client.list_tools().tools]
    if "add_numbers" not in names:
        raise RuntimeError(f"the server has no add_numbers tool (it has {names})")
    result = client.call_tool("add_numbers", {"a": 5, "b": 3})
    if result.is_error:
        raise RuntimeError(f"add_numbers failed: {result.text}")
    log.info("add_numbers: %s", result.text)


def elicitation_defaults(client: MCPClient) -> None:
    """``elicitation-sep1034-client-defaults``: the tool elicits; we accept with the schema's defaults."""
    result = client.call_tool("test_client_elicitation_defaults", {})
    if result.is_error:
        raise RuntimeError(f"test_client_elicitation_defaults failed: {result.text}")
    log.info("test_client_elicitation_defaults: %s", result.text)


def reconnection(client: MCPClient) -> None:
    """``sse-retry``: the server closes the call's stream early; the result comes after we reconnect."""
    result = client.call_tool("test_reconnection", {})
    if result.is_error:
        raise RuntimeError(f"test_reconnection failed: {result.text}")
    log.info("test_reconnection: %s", result.text)


SCENARIOS: dict[str, Callable[[MCPClient], None]] = {
    "initialize": handshake,
    "tools_call": call_add_numbers,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": reconnection,
}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    if len(argv) < 2:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=NAME {argv[0]} SERVER_URL", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario)
    if run is None:
        log.info("scenario %r is not one this client knows: doing a handshake only", scenario)
        run = handshake
    try:
        with connect(url) as client:
            run(client)
    except (MCPError, RuntimeError, OSError) as exc:
        log.error("scenario %s failed: %s", scenario, exc)
        return 1
    log.info("scenario %s done", scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
