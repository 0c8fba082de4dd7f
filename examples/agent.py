"""A model that answers with an MCP server's tools: the library example's catalogue, searched by GPT or Claude.

Set ``OPENAI_API_KEY`` (or ``ANTHROPIC_API_KEY``) and ask::

    python examples/agent.py "Which books about Python do you have?"

It needs the provider's SDK (``pip install "mcp-sync-py[openai]"`` or
``[anthropic]``). ``MODEL`` names another model than the default. A line
says when the model used the tools, then the answer is printed. The SDKs also
read ``OPENAI_BASE_URL`` and ``ANTHROPIC_BASE_URL``, which is how the tests
run this script against a stand-in of the API on 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp_sync import connect
from mcp_sync.llm import Answer, Round, Toolbox, ask_anthropic, ask_openai

LIBRARY = [sys.executable, str(Path(__file__).with_name("library_server.py"))]


def show(round: Round) -> None:
    """Say when a round ran tools (the model's last round, its answer, runs none)."""
    if round.results:
        print("(the model used the library's tools; their results went back to it)")


def ask(question: str) -> Answer:
    """Ask the question of whichever model has a key, with the library server's tools."""
    with connect(LIBRARY, elicitation_provider=None) as library:
        toolbox = Toolbox(library, exclude=["borrow"])  # lending asks a person; this script has none to ask
        if os.environ.get("ANTHROPIC_API_KEY"):
            import anthropic

            model = os.environ.get("MODEL", "claude-sonnet-4-5")
            return ask_anthropic(anthropic.Anthropic(), toolbox, question, model=model, on_round=show)
        import openai

        model = os.environ.get("MODEL", "gpt-4.1-mini")
        return ask_openai(openai.OpenAI(), toolbox, question, model=model, on_round=show)


if __name__ == "__main__":
    print(ask(" ".join(sys.argv[1:]) or "Which books about Python do you have?").text)
