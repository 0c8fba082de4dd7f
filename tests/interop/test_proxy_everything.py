"""The reference "everything" server (npm, handshake era) behind mcp_sync.proxy and ``mcp-sync proxy``:
our client in either era, and the official SDK's Python client, in front."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import peers
import pytest

import mcp_sync
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ProgressNotificationParams,
    TextContent,
)

ENV = {"GZIP_ALLOWED_DOMAINS": "localhost"}  # its gzip tool reaches nothing but the loopback
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def everything() -> list[str]:
    package = peers.npm_package_dir(peers.EVERYTHING_SERVER)
    return [peers.require("node"), str(peers.node_entry(package)), "stdio"]


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="the model's answer"), model="m")


def decline(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="decline")


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_our_client_through_the_proxy_to_the_everything_server(everything: list[str], era: str) -> None:
    with mcp_sync.connect(everything, env=ENV, stderr=lambda line: None) as direct:
        listed = {tool.name for tool in direct.tools()}
    with (
        mcp_sync.proxy(everything, env=ENV, stderr=lambda line: None, timeout=TIMEOUT) as front,
        mcp_sync.connect(front, era=era, sampling_provider=sample, elicitation_provider=decline) as client,
    ):
        assert front.upstream().protocol_version == "2025-11-25"
        assert client.negotiated_era == era
        names = {tool.name for tool in client.tools()}
        # The proxy declares sampling, elicitation and roots upstream: the server offers the tools that use them.
        assert names == listed | {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}
        assert client.call_tool("echo", {"message": "through"}).text == "Echo: through"
        progress: list[ProgressNotificationParams] = []
        done = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress=progress.append
        )
        assert "Steps: 3" in (done.text or "")
        assert [p.progress for p in progress] == [1, 2, 3]
        sampled = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}).text or ""
        assert json.loads(sampled.split("\n", 1)[1])["content"]["text"] == "the model's answer"
        declined = client.call_tool("trigger-elicitation-request", {}).text or ""
        assert "declined" in declined
        assert len(client.resources()) > 0 and len(client.resource_templates()) > 0
        assert {"simple-prompt", "args-prompt"} <= {prompt.name for prompt in client.prompts()}


SDK_DRIVER = r"""
import json
import sys
import warnings

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

warnings.simplefilter("ignore")
config = json.loads(sys.argv[1])


async def sample(context, params):
    content = types.TextContent(type="text", text="from the SDK's model")
    return types.CreateMessageResult(role="assistant", content=content, model="m")


async def main():
    server = StdioServerParameters(command=config["command"][0], args=config["command"][1:], env=config["env"])
    out = {}
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, sampling_callback=sample) as session:
                out["version"] = (await session.initialize()).protocol_version
                out["tools"] = [tool.name for tool in (await session.list_tools()).tools]
                out["echo"] = (await session.call_tool("echo", {"message": "SDK"})).content[0].text
                args = {"prompt": "hello", "maxTokens": 10}
                out["sampled"] = (await session.call_tool("trigger-sampling-request", args)).content[0].text
    print(json.dumps(out))


anyio.run(main)
"""


def test_the_official_sdk_client_through_mcp_sync_proxy_to_the_everything_server(
    everything: list[str], tmp_path: Path
) -> None:
    driver = tmp_path / "sdk_driver.py"
    driver.write_text(SDK_DRIVER)
    command = [
        sys.executable,
        "-m",
        "mcp_sync",
        "proxy",
        shlex.join(everything),
        "-e",
        "GZIP_ALLOWED_DOMAINS=localhost",
    ]
    config: dict[str, Any] = {"command": command, "env": {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}}
    done = subprocess.run(
        [peers.peer_python(), str(driver), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=peers.peer_environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"the SDK driver failed:\n{done.stderr[-6000:]}"
    report = json.loads(done.stdout)
    assert report["version"] == "2025-11-25"
    assert "echo" in report["tools"] and "trigger-sampling-request" in report["tools"]
    assert report["echo"] == "Echo: SDK"
    assert "from the SDK's model" in report["sampled"]
