"""Testing an MCP server with pytest and mcp_sync's fixtures (docs/guides/testing.rst shows and runs it).

Run from the repository's root: ``python -m pytest examples/test_calc_server.py``.
"""

import sys

import pytest

from mcp_sync import Context, MCPServer
from mcp_sync.types import ElicitResult

server = MCPServer("calc")


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool
def reset(ctx: Context) -> str:
    """Ask before clearing the memory."""
    answer = ctx.elicit("Clear the memory?", {"type": "object", "properties": {"sure": {"type": "boolean"}}})
    return "cleared" if answer.accepted and answer.data["sure"] else "kept"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])  # both eras
def test_add(mcp_connect, version):
    client = mcp_connect(server, protocol_version=version)
    assert client.tools.add(a=2, b=3).structured_content == {"result": 5}


def test_add_over_http(mcp_http):
    assert mcp_http(server).call_tool("add", {"a": 2, "b": 3}).text == "5"


def test_a_server_script(mcp_connect):
    client = mcp_connect([sys.executable, "examples/echo_server.py"])
    assert client.tools.echo(text="hi").text == "hi"


def test_a_question_answered_by_the_test(mcp_connect):
    def yes(params):
        return ElicitResult(action="accept", content={"sure": True})

    assert mcp_connect(server, elicitation_provider=yes).tools.reset().text == "cleared"
