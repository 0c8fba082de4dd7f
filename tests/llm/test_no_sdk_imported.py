"""``import mcp_sync.llm`` loads no provider SDK, nor does giving tools to a model and running its calls.

The SDKs are optional extras: a user of one provider has no other installed, and the package must not pay for
any of them until a feature that needs one is used (only LangChain's tools need their SDK at all).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
SDKS = ["anthropic", "google.genai", "langchain_core", "openai"]

SCRIPT = """
import json, sys
import mcp_sync, mcp_sync.llm
from mcp_sync import MCPServer, connect
from mcp_sync.llm import AnthropicSampling, OpenAISampling, Toolbox, ask_anthropic, ask_openai

server = MCPServer("maths")
server.register_tool("add", lambda args, ctx: str(args["a"] + args["b"]))
call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
with connect(server) as client:
    toolbox = Toolbox(client)
    toolbox.openai(), toolbox.openai("responses", strict=True), toolbox.anthropic(), toolbox.gemini()
    ran = toolbox.run({"role": "assistant", "content": None, "tool_calls": [call]})
print(json.dumps({"ran": ran, "loaded": sorted(name for name in SDKS if name in sys.modules)}))
"""


def test_giving_tools_to_a_model_loads_no_provider_sdk() -> None:
    script = f"SDKS = {SDKS!r}\n{SCRIPT}"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True, cwd=ROOT
    )
    found = json.loads(out.stdout)
    assert found["ran"] == [{"role": "tool", "tool_call_id": "c1", "content": "3"}]
    assert found["loaded"] == []
