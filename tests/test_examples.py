"""The examples run, and do what their docstrings say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_sync import MCPClient
from mcp_sync.types import ElicitRequestFormParams, ElicitResult, ProgressNotificationParams, TextContent

EXAMPLES = Path(__file__).parent.parent / "examples"
SERVE = {"env": {"PYTHONPATH": str(EXAMPLES.parent)}, "inherit_env": True}


def test_quickstart_prints_what_the_server_answered() -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == [
        "connected to quickstart 1.0 (2026-07-28)",
        "tools: ['add']",
        "add(2, 3) = 5",
        "notes://today: Buy milk. Call Ada.",
        "greet prompt: Write a warm greeting for Ada.",
    ]


def test_the_library_server_over_stdio() -> None:
    asked: list[ElicitRequestFormParams] = []

    def borrower(params: ElicitRequestFormParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"name": "Ada", "weeks": 3})

    command = [sys.executable, str(EXAMPLES / "library_server.py")]
    with MCPClient.stdio(command, **SERVE, elicitation_provider=borrower) as client:  # type: ignore[arg-type]
        assert [tool.name for tool in client.tools()] == ["search", "borrow", "reindex"]
        found = client.call_tool("search", {"query": "python"}).structured_content
        assert [book["title"] for book in found["result"]] == ["Python Tricks", "Fluent Python"]
        available = client.call_tool("search", {"query": "python", "only_available": True}).structured_content
        assert [book["id"] for book in available["result"]] == [3]
        assert client.call_tool("borrow", {"book_id": 3}).text == "'Python Tricks' is yours for 3 weeks, Ada."
        assert asked[0].message == "Who is borrowing 'Python Tricks'?"
        assert client.call_tool("borrow", {"book_id": 3}).text == "'Python Tricks' is already out."
        assert client.call_tool("borrow", {"book_id": 99}).is_error
        progress: list[ProgressNotificationParams] = []
        assert client.call_tool("reindex", progress=progress.append).structured_content == {"result": 4}
        assert [(p.progress, p.total) for p in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
        assert '"author":"Donald Knuth"' in client.read_resource("books://2").text
        [template] = client.resource_templates()
        assert template.uri_template == "books://{book_id}"
        message = client.get_prompt("recommend", {"genre": "algorithms"}).messages[0]
        assert message.content == TextContent(
            text="From the library's catalogue, recommend one algorithms book for a beginner, and say why."
        )
