"""The schema corpus: every tool of real servers converted for each provider and checked against its rules.

The servers: every ``MCPServer`` of our ``examples/`` (in memory, in a child
process: the examples configure Flask and Django for the whole process, and
Django's settings, once made, would be every later test's), and, as
``interop`` tests, the reference ``server-everything`` (TypeScript SDK), the
reference time server (official Python SDK) and our fastmcp peer server
(``tests/peers_py/fastmcp_server.py``), each over stdio. For each provider
(OpenAI Chat and Responses, strict or not; Anthropic; Gemini), every tool is
either given, passing the SDK's own types and the provider's documented rules
(:mod:`provider_rules`), or named in ``toolbox.problems`` with the reason.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peers
import provider_rules
import pytest

import mcp_sync
from mcp_sync import MCPServer, connect
from mcp_sync.llm import SchemaConversionWarning, Toolbox

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["conformance_server", "echo_server", "library_server", "protected_server", "quickstart"]
EXAMPLES += ["scaled_app", "wsgi_app", "flask_app", "django_app"]


def conversions(toolbox: Toolbox) -> dict[str, tuple[int, dict[str, str]]]:
    """For each provider form: how many tools were given (each checked against the rules), and the problems."""
    forms: dict[str, Any] = {
        "openai-chat": (lambda: toolbox.openai(), provider_rules.check_openai_chat),
        "openai-chat-strict": (lambda: toolbox.openai(strict=True), provider_rules.check_openai_chat),
        "openai-responses": (lambda: toolbox.openai("responses"), provider_rules.check_openai_responses),
        "openai-responses-strict": (
            lambda: toolbox.openai("responses", strict=True),
            provider_rules.check_openai_responses,
        ),
        "anthropic": (toolbox.anthropic, provider_rules.check_anthropic),
    }
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaConversionWarning)
        for form, (convert, check) in forms.items():
            tools = convert()
            for tool in tools:
                check(tool)
            found[form] = (len(tools), dict(toolbox.problems))
        declarations = toolbox.gemini()
        found["gemini"] = (provider_rules.check_gemini(declarations) if declarations else 0, dict(toolbox.problems))
    return found


def example_servers() -> Iterator[tuple[str, MCPServer]]:
    for name in EXAMPLES:
        namespace = runpy.run_path(str(ROOT / "examples" / f"{name}.py"), run_name="corpus")
        servers = [value for value in namespace.values() if isinstance(value, MCPServer)]
        for server in servers or [namespace["build_server"]()]:
            yield name, server


def example_conversions() -> dict[str, dict[str, Any]]:
    """For each example server: its tool count and :func:`conversions` (run as ``python test_schema_corpus.py``)."""
    found: dict[str, dict[str, Any]] = {}
    for name, server in example_servers():
        with connect(server) as client:
            toolbox = Toolbox(client)
            found[name] = {"count": len(toolbox.tools()), "forms": conversions(toolbox)}
    return found


def test_every_tool_of_our_examples_converts_for_every_provider() -> None:
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, __file__],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
    )
    total = 0
    for name, found in json.loads(out.stdout).items():
        count = found["count"]
        total += count
        for form, (given, problems) in found["forms"].items():
            if name == "conformance_server" and form.endswith("strict"):
                # Its top-level allOf/anyOf of `required` lists (and if/then/else) has no strict form.
                assert problems == {
                    "json_schema_2020_12_tool": "given with strict: false: anyOf[0]: a value of any type "
                    "cannot be strict"
                }
            else:
                assert problems == {}, (name, form)
            assert given == count, (name, form)
    assert total == 59


@pytest.mark.interop
def test_every_tool_of_the_reference_and_fastmcp_servers_converts_for_every_provider() -> None:
    config = {
        "mcpServers": {
            "everything": {
                "command": peers.require("node"),
                "args": [str(peers.node_entry(peers.npm_package_dir(peers.EVERYTHING_SERVER))), "stdio"],
            },
            "time": {"command": peers.peer_python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "fastmcp": {
                "command": peers.fastmcp_python(),
                "args": [str(ROOT / "tests" / "peers_py" / "fastmcp_server.py")],
            },
        }
    }
    with mcp_sync.connect_all(config) as group:
        assert group.failures == {}
        counts = {}
        for name, client in group.clients.items():
            toolbox = Toolbox(client)
            counts[name] = len(toolbox.tools())
            for form, (given, problems) in conversions(toolbox).items():
                assert problems == {} and given == counts[name], (name, form, problems)
        assert counts == {"everything": 13, "time": 2, "fastmcp": 12}


if __name__ == "__main__":
    print(json.dumps(example_conversions()))
