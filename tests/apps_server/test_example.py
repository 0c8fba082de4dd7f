"""``examples/apps_server.py`` as a real subprocess over stdio: our client, and the official Python SDK's client.

The SDK's client (``mcp``, in the peers' virtualenv; marked ``interop``) lists
our tools with their ``_meta.ui``, lists and reads the app resource with its
MIME type, and sees the extension in our capabilities; declaring the extension
itself, it gets the short text a client that shows the app gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import peers
import pytest

from mcp_sync import MCPClient
from mcp_sync.protocol.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceUI, ToolUI

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apps_server.py"
SERVE = {"env": {"PYTHONPATH": str(ROOT)}, "inherit_env": True, "timeout": 30.0}
APP = "ui://counter/app.html"
NO_APP_HINT = " (a client that shows MCP Apps has a +1 button for it)"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_the_example_serves_its_app_over_stdio(era: str) -> None:
    command = [sys.executable, str(EXAMPLE)]
    with (
        MCPClient.stdio(command, era=era, host_apps=True, **SERVE) as host,  # type: ignore[arg-type]
        MCPClient.stdio(command, era=era, **SERVE) as plain,  # type: ignore[arg-type]
    ):
        assert host.server_capabilities.extensions == {EXTENSION_ID: {}}
        tools = {tool.name: tool.meta for tool in host.tools()}
        assert tools == {
            "show_counter": {"ui": {"resourceUri": APP, "visibility": ["model", "app"]}},
            "increment": {"ui": {"resourceUri": APP, "visibility": ["app"]}},
        }
        app = host.app_resource("show_counter")
        assert (app.uri, app.mime_type, app.tool_ui, app.ui) == (
            APP,
            APP_MIME_TYPE,
            ToolUI(APP),
            ResourceUI(prefers_border=True),
        )
        # The app speaks its side of the protocol by hand, and its button calls the app-only tool.
        for piece in ('"ui/initialize"', '"ui/notifications/initialized"', '"tools/call"', 'name: "increment"'):
            assert piece in app.html
        assert "https://" not in app.html and "http://" not in app.html  # no network, no CDN

        shown = host.call_tool("show_counter")
        assert (shown.text, shown.structured_content) == ("The counter is at 0.", {"count": 0})
        assert plain.call_tool("show_counter").text == f"The counter is at 0.{NO_APP_HINT}"
        added = host.call_tool("increment", {"by": 2})
        assert (added.text, added.structured_content) == ("The counter is now at 2.", {"count": 2})


SDK_DRIVER = r"""
import json, sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

config = json.loads(sys.argv[1])

def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)

async def main():
    server = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
    out = {}
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, extensions=config["extensions"]) as session:
                out["initialize"] = dump(await session.initialize())
                out["tools"] = dump(await session.list_tools())["tools"]
                out["resources"] = dump(await session.list_resources())["resources"]
                out["read"] = dump(await session.read_resource(config["app"]))["contents"]
                out["show"] = dump(await session.call_tool("show_counter", {}))
    print(json.dumps(out))

anyio.run(main)
"""


def drive_with_sdk(tmp_path: Path, extensions: dict[str, Any] | None) -> Any:
    """Run the official SDK's client against the example; its JSON report."""
    driver = tmp_path / "sdk_apps_driver.py"
    driver.write_text(SDK_DRIVER)
    config = {
        "command": sys.executable,
        "args": [str(EXAMPLE)],
        "env": {**os.environ, "PYTHONPATH": str(ROOT)},  # our server needs mcp_sync (and coverage's settings)
        "extensions": extensions,
        "app": APP,
    }
    done = subprocess.run(
        [peers.peer_python(), str(driver), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=peers.peer_environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"the SDK driver failed:\n{done.stderr[-6000:]}"
    return json.loads(done.stdout)


@pytest.mark.interop
@pytest.mark.timeout(300)  # the first run installs the SDK
@pytest.mark.parametrize("declares", [True, False], ids=["host", "no-apps"])
def test_the_official_sdk_client_sees_our_apps(tmp_path: Path, declares: bool) -> None:
    extensions = {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}} if declares else None
    report = drive_with_sdk(tmp_path, extensions)
    assert report["initialize"]["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    tools = {tool["name"]: tool["_meta"] for tool in report["tools"]}
    assert tools == {
        "show_counter": {"ui": {"resourceUri": APP, "visibility": ["model", "app"]}},
        "increment": {"ui": {"resourceUri": APP, "visibility": ["app"]}},
    }
    [listed] = report["resources"]
    assert (listed["uri"], listed["mimeType"], listed["_meta"]) == (APP, APP_MIME_TYPE, {"ui": {"prefersBorder": True}})
    [content] = report["read"]
    assert (content["uri"], content["mimeType"], content["_meta"]) == (
        APP,
        "text/html;profile=mcp-app",
        {"ui": {"prefersBorder": True}},
    )
    assert content["text"].startswith("<!doctype html>")
    hint = "" if declares else NO_APP_HINT
    assert report["show"]["content"] == [{"type": "text", "text": f"The counter is at 0.{hint}"}]
    assert report["show"]["structuredContent"] == {"count": 0}
