"""Interoperability over stdio with real third-party MCP peers.

- Our client drives the reference time server (PyPI ``mcp-server-time``) and
  the reference "everything" server (npm ``@modelcontextprotocol/server-everything``),
  and a paginating server written with the official Python SDK.
- The official Python SDK's client (``mcp``, in its own virtualenv) drives our
  servers: ``examples/echo_server.py`` and ``tests/servers/sdk_target.py``, at
  the SDK's default protocol version and at 2024-11-05.

The peers are installed on first use and cached (see ``tests/peers.py``);
without node or npm, or when an install fails, these tests skip, unless
``MCP_SYNC_REQUIRE_INTEROP=1`` makes them fail.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import jsonschema
import peers
import pytest

from mcp_sync import MCP_CODES, MCPError
from mcp_sync.client import stdio_client
from mcp_sync.client.core import RESOURCE_UPDATED, MCPClient, ResourceUpdated
from mcp_sync.types import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.timeout(300)  # the first run installs the peers

HERE = Path(__file__).parent.parent
ROOT = HERE.parent
ECHO_SERVER = ROOT / "examples" / "echo_server.py"
SDK_TARGET = HERE / "servers" / "sdk_target.py"
CALL_TIMEOUT = 30.0
"""The longest any one request to a peer may take (seconds)."""
SCRIPT_TIMEOUT = 120.0
"""The longest an SDK script may run (seconds)."""
LATEST = "2025-11-25"
OLDEST = "2024-11-05"

peer_log = logging.getLogger("tests.interop.peer")
peer_log.setLevel(logging.INFO)  # a failing test shows what the peer said on stderr


def connect(command: list[str], **options: Any) -> MCPClient:
    """Start ``command`` and connect our client to it; the peer's stderr goes to a logger."""
    options.setdefault("timeout", CALL_TIMEOUT)
    return stdio_client(command, stderr=peer_log, **options)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def texts(blocks: list[Any]) -> list[str]:
    return [block.text for block in blocks if isinstance(block, TextContent)]


# ----------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def peer_python() -> str:
    return peers.peer_python()


@pytest.fixture(scope="module")
def everything_package() -> Path:
    return peers.npm_package_dir(peers.EVERYTHING_SERVER)


@pytest.fixture(scope="module")
def everything(everything_package: Path) -> list[str]:
    node = peers.require("node")
    return [node, str(peers.node_entry(everything_package)), "stdio"]


# The gzip tool can fetch URLs; it is only ever given data: URLs here, and
# this keeps it from reaching anything but the loopback even if it tried.
EVERYTHING_ENV = {"GZIP_ALLOWED_DOMAINS": "localhost"}


# ------------------------------------------------------- mcp-server-time


@pytest.fixture(scope="module")
def time_server(peer_python: str) -> list[str]:
    return [peer_python, "-m", "mcp_server_time", "--local-timezone", "UTC"]


@pytest.mark.parametrize("version", [LATEST, OLDEST])
def test_time_server_tools_and_current_time(time_server: list[str], version: str) -> None:
    with connect(time_server, protocol_version=version) as client:
        assert client.protocol_version == version
        assert client.server_info.name == "mcp-time"
        assert client.server_info.version == peers.TIME_SERVER_VERSION
        listed = client.list_tools()
        assert listed.next_cursor is None
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == {"get_current_time", "convert_time"}
        assert [t.name for t in client.tools()] == [t.name for t in listed.tools]
        assert tools["get_current_time"].input_schema["required"] == ["timezone"]
        assert set(tools["convert_time"].input_schema["required"]) == {"source_timezone", "time", "target_timezone"}
        # The local timezone given on the command line is named in the descriptions.
        assert "'UTC'" in tools["get_current_time"].input_schema["properties"]["timezone"]["description"]
        annotations = tools["get_current_time"].annotations
        assert annotations is not None and annotations.read_only_hint is True

        before = datetime.now(timezone.utc).replace(microsecond=0)
        result = client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        after = datetime.now(timezone.utc)
        assert not result.is_error
        answer = json.loads(result.content[0].text)
        assert answer["timezone"] == "Europe/Paris"
        moment = datetime.fromisoformat(answer["datetime"])
        paris = moment.astimezone(ZoneInfo("Europe/Paris"))
        assert moment.utcoffset() == paris.utcoffset()
        assert before <= moment <= after
        assert answer["day_of_week"] == paris.strftime("%A")
        assert answer["is_dst"] == bool(paris.dst())
        assert result.structured_content == answer
        output_schema = tools["get_current_time"].output_schema
        assert output_schema is not None
        jsonschema.validate(answer, output_schema)


def test_time_server_converts_between_timezones(time_server: list[str]) -> None:
    with connect(time_server) as client:
        # Neither zone has daylight saving time: the answer is fixed.
        result = client.call_tool(
            "convert_time", {"source_timezone": "Asia/Tokyo", "time": "09:30", "target_timezone": "Asia/Kolkata"}
        )
        assert not result.is_error
        answer = json.loads(result.content[0].text)
        assert answer["time_difference"] == "-3.5h"
        source = datetime.fromisoformat(answer["source"]["datetime"])
        target = datetime.fromisoformat(answer["target"]["datetime"])
        assert (source.hour, source.minute, source.utcoffset()) == (9, 30, timedelta(hours=9))
        assert (target.hour, target.minute, target.utcoffset()) == (6, 0, timedelta(hours=5, minutes=30))
        assert source == target
        assert (answer["source"]["timezone"], answer["target"]["timezone"]) == ("Asia/Tokyo", "Asia/Kolkata")

        # With daylight saving time on either side: check against our own tz database,
        # on the date the server chose.
        result = client.call_tool(
            "convert_time",
            {"source_timezone": "America/New_York", "time": "12:00", "target_timezone": "Europe/London"},
        )
        answer = json.loads(result.content[0].text)
        source = datetime.fromisoformat(answer["source"]["datetime"])
        expected_source = datetime.combine(source.date(), source.time(), ZoneInfo("America/New_York"))
        assert (source.hour, source.minute) == (12, 0)
        assert source.utcoffset() == expected_source.utcoffset()
        expected_target = expected_source.astimezone(ZoneInfo("Europe/London"))
        assert answer["target"]["datetime"] == expected_target.isoformat(timespec="seconds")
        london = expected_target.utcoffset()
        new_york = expected_source.utcoffset()
        assert london is not None and new_york is not None
        hours = (london - new_york).total_seconds() / 3600
        assert hours in (4.0, 5.0)
        assert answer["time_difference"] == f"{hours:+.1f}h"
        assert answer["source"]["is_dst"] == bool(expected_source.dst())
        assert answer["target"]["is_dst"] == bool(expected_target.dst())


def test_time_server_errors(time_server: list[str]) -> None:
    with connect(time_server) as client:
        result = client.call_tool("get_current_time", {"timezone": "Mars/Olympus_Mons"})
        assert result.is_error
        assert "Invalid timezone" in texts(result.content)[0]
        result = client.call_tool(
            "convert_time", {"source_timezone": "UTC", "time": "25:99", "target_timezone": "Europe/Paris"}
        )
        assert result.is_error
        assert "HH:MM" in texts(result.content)[0]
        with pytest.raises(MCPError) as err:
            client.call_tool("no_such_tool", {})
        assert err.value.code == MCP_CODES.INVALID_PARAMS
        assert "no_such_tool" in err.value.message
        client.ping()  # the connection is still good


# ----------------------------------------------- server-everything (npm)


def test_everything_tools(everything: list[str]) -> None:
    with connect(everything, env=EVERYTHING_ENV) as client:
        assert client.server_info.name == "mcp-servers/everything"
        assert client.protocol_version == LATEST
        names = {tool.name for tool in client.tools()}
        assert {"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} <= names
        # Tools that need a client capability this client did not declare are not offered.
        assert not names & {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}
        assert "trigger-url-elicitation" not in names

        assert texts(client.call_tool("echo", {"message": "hello, node"}).content) == ["Echo: hello, node"]
        assert texts(client.call_tool("get-sum", {"a": 2, "b": 3.5}).content) == ["The sum of 2 and 3.5 is 5.5."]

        structured = client.call_tool("get-structured-content", {"location": "Chicago"})
        assert structured.structured_content is not None
        assert json.loads(texts(structured.content)[0]) == structured.structured_content
        schema = next(t for t in client.tools() if t.name == "get-structured-content").output_schema
        assert schema is not None
        jsonschema.validate(structured.structured_content, schema)

        image = client.call_tool("get-tiny-image", {})
        blocks = [block for block in image.content if isinstance(block, ImageContent)]
        assert len(blocks) == 1 and blocks[0].mime_type == "image/png"
        assert base64.b64decode(blocks[0].data).startswith(b"\x89PNG\r\n\x1a\n")

        annotated = client.call_tool("get-annotated-message", {"messageType": "error"})
        assert annotated.content[0].annotations is not None
        assert annotated.content[0].annotations.priority == 1.0

        links = client.call_tool("get-resource-links", {"count": 2})
        link_blocks = [block for block in links.content if isinstance(block, ResourceLink)]
        assert [link.uri for link in link_blocks] == [
            "demo://resource/dynamic/blob/1",
            "demo://resource/dynamic/text/2",
        ]

        reference = client.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 4})
        embedded = [block for block in reference.content if isinstance(block, EmbeddedResource)]
        assert len(embedded) == 1
        assert isinstance(embedded[0].resource, TextResourceContents)
        assert embedded[0].resource.uri == "demo://resource/dynamic/text/4"

        # This server answers an unknown tool, or invalid arguments, with a failed result.
        unknown = client.call_tool("no-such-tool", {})
        assert unknown.is_error
        assert "Tool no-such-tool not found" in texts(unknown.content)[0]
        invalid = client.call_tool("get-sum", {"a": "two"})
        assert invalid.is_error
        assert "Input validation error" in texts(invalid.content)[0]


def test_everything_long_running_operation_progress_and_cancel(everything: list[str]) -> None:
    with connect(everything, env=EVERYTHING_ENV) as client:
        progress: list[ProgressNotificationParams] = []
        result = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.8, "steps": 4}, progress=progress.append
        )
        assert "Steps: 4" in texts(result.content)[0]
        # Notifications travel before the result on the same pipe, so all have arrived.
        assert [(p.progress, p.total) for p in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
        assert len({p.progress_token for p in progress}) == 1

        # Cancel the next run after its first progress notification.
        cancel = threading.Event()
        seen: list[ProgressNotificationParams] = []

        def on_progress(params: ProgressNotificationParams) -> None:
            seen.append(params)
            cancel.set()

        started = time.monotonic()
        with pytest.raises(MCPError) as err:
            client.call_tool(
                "trigger-long-running-operation", {"duration": 20, "steps": 40}, cancel=cancel, progress=on_progress
            )
        assert err.value.code == MCP_CODES.REQUEST_CANCELLED
        assert seen and time.monotonic() - started < 10
        assert texts(client.call_tool("echo", {"message": "still here"}).content) == ["Echo: still here"]


def test_everything_resources_pages_and_templates(everything: list[str], everything_package: Path) -> None:
    docs = sorted(p.name for p in (everything_package / "dist" / "docs").iterdir() if p.is_file())
    expected = {f"demo://resource/static/document/{quote(name)}" for name in docs}
    assert expected
    with connect(everything, env=EVERYTHING_ENV) as client:
        # Follow the cursors page by page; this version sends everything in one page.
        uris: list[str] = []
        cursor: str | None = None
        for _ in range(50):
            page = client.list_resources(cursor)
            uris.extend(resource.uri for resource in page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert cursor is None
        assert len(uris) == len(set(uris))
        assert set(uris) == expected
        assert [r.uri for r in client.refresh_resources()] == uris
        assert [r.uri for r in client.resources()] == uris

        document = client.read_resource("demo://resource/static/document/features.md")
        contents = document.contents[0]
        assert isinstance(contents, TextResourceContents)
        assert contents.mime_type == "text/markdown"
        assert contents.text == (everything_package / "dist" / "docs" / "features.md").read_text()

        templates = client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
        }
        assert {t.uri_template for t in client.resource_templates()} == {
            t.uri_template for t in templates.resource_templates
        }
        text = client.read_resource("demo://resource/dynamic/text/3").contents[0]
        assert isinstance(text, TextResourceContents)
        assert text.text.startswith("Resource 3: This is a plaintext resource")
        blob = client.read_resource("demo://resource/dynamic/blob/3").contents[0]
        assert isinstance(blob, BlobResourceContents)
        assert base64.b64decode(blob.blob).startswith(b"Resource 3: This is a base64 blob")
        with pytest.raises(MCPError) as err:
            client.read_resource("demo://resource/dynamic/text/zero")
        assert "Unknown resource" in err.value.message


def test_everything_new_resource_reaches_the_cache(everything: list[str]) -> None:
    """A tool registers a resource; its list_changed notification makes the client refresh."""
    with connect(everything, env=EVERYTHING_ENV) as client:
        uri = "demo://resource/session/greeting.txt.gz"
        assert uri not in {r.uri for r in client.resources()}
        data = "data:text/plain;base64," + base64.b64encode(b"hello, gzip").decode()
        result = client.call_tool("gzip-file-as-resource", {"name": "greeting.txt.gz", "data": data})
        links = [block for block in result.content if isinstance(block, ResourceLink)]
        assert [link.uri for link in links] == [uri]
        assert wait_for(lambda: uri in {r.uri for r in client.resources()})
        contents = client.read_resource(uri).contents[0]
        assert isinstance(contents, BlobResourceContents)
        assert gzip.decompress(base64.b64decode(contents.blob)) == b"hello, gzip"


def test_everything_prompts_and_completion(everything: list[str]) -> None:
    with connect(everything, env=EVERYTHING_ENV) as client:
        prompts = {prompt.name: prompt for prompt in client.prompts()}
        assert set(prompts) == {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"}
        arguments = prompts["args-prompt"].arguments
        assert arguments is not None
        assert [(a.name, bool(a.required)) for a in arguments] == [("city", True), ("state", False)]

        simple = client.get_prompt("simple-prompt")
        assert texts([m.content for m in simple.messages]) == ["This is a simple prompt without arguments."]
        weather = client.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhône"})
        assert texts([m.content for m in weather.messages]) == ["What's weather in Lyon, Rhône?"]
        assert texts([m.content for m in client.get_prompt("args-prompt", {"city": "Lyon"}).messages]) == [
            "What's weather in Lyon?"
        ]
        with pytest.raises(MCPError) as err:
            client.get_prompt("args-prompt", {})
        assert err.value.code == MCP_CODES.INVALID_PARAMS

        embedded = client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "2"})
        assert len(embedded.messages) == 2
        resource = embedded.messages[1].content
        assert isinstance(resource, EmbeddedResource)
        assert resource.resource.uri == "demo://resource/dynamic/text/2"

        def values(ref: PromptReference | ResourceTemplateReference, argument: str, value: str, **kw: Any) -> list[str]:
            return client.complete(ref, argument, value, **kw).completion.values

        team = PromptReference(name="completable-prompt")
        assert values(team, "department", "") == ["Engineering", "Sales", "Marketing", "Support"]
        assert values(team, "department", "S") == ["Sales", "Support"]
        # The context carries the arguments already chosen.
        assert values(team, "name", "", context={"department": "Sales"}) == ["David", "Eve", "Frank"]
        assert values(team, "name", "", context={"department": "Support"}) == ["John", "Kim", "Lee"]
        assert values(PromptReference(name="resource-prompt"), "resourceType", "B") == ["Blob"]
        template = ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}")
        assert values(template, "resourceId", "5") == ["5"]
        assert values(template, "resourceId", "x") == []


def test_everything_logging_follows_the_level(everything: list[str]) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    with connect(everything, env=EVERYTHING_ENV, log_handler=logs.append) as client:
        uri = "demo://resource/dynamic/text/1"
        # The server logs each (un)subscribe request at "info", before it answers.
        client.set_log_level("info")
        client.subscribe_resource(uri)
        assert [(m.level, m.data) for m in logs] == [("info", f"Received Subscribe Resource request for URI: {uri} ")]
        client.set_log_level("warning")
        client.unsubscribe_resource(uri)
        assert len(logs) == 1  # below the level: not sent

        # Simulated logging sends one message at once, of a random level: "debug" lets every level through.
        logs.clear()
        client.set_log_level("debug")
        client.call_tool("toggle-simulated-logging", {})
        assert wait_for(lambda: len(logs) >= 1)
        assert logs[0].level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
        assert isinstance(logs[0].data, str) and "message" in logs[0].data
        client.call_tool("toggle-simulated-logging", {})  # off again


def test_everything_sampling_elicitation_and_roots(everything: list[str]) -> None:
    sampled: list[CreateMessageRequestParams] = []
    elicited: list[ElicitRequestFormParams] = []
    answers = iter(
        [
            ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True, "integer": 7}),
            ElicitResult(action="decline"),
        ]
    )
    logs: list[LoggingMessageNotificationParams] = []

    def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="forty-two"), model="test-model", stop_reason="endTurn"
        )

    def elicit(params: ElicitRequestFormParams) -> ElicitResult:
        elicited.append(params)
        return next(answers)

    with connect(
        everything,
        env=EVERYTHING_ENV,
        sampling_provider=sample,
        elicitation_provider=elicit,
        roots_provider=lambda: [Root(uri="file:///srv/project", name="project")],
        log_handler=logs.append,
    ) as client:
        conditional = {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}
        # Registered once the server saw our capabilities; announced with tools/list_changed.
        assert wait_for(lambda: conditional <= {tool.name for tool in client.tools()})

        result = client.call_tool("trigger-sampling-request", {"prompt": "the answer?", "maxTokens": 12})
        assert len(sampled) == 1
        request = sampled[0]
        assert request.max_tokens == 12
        assert request.system_prompt == "You are a helpful test server."
        message = request.messages[0].content
        assert isinstance(message, TextContent)
        assert message.text == "Resource trigger-sampling-request context: the answer?"
        reply = json.loads(texts(result.content)[0].split("\n", 1)[1])
        assert reply == {
            "model": "test-model",
            "stopReason": "endTurn",
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
        }

        accepted = texts(client.call_tool("trigger-elicitation-request", {}).content)
        assert elicited[0].requested_schema.required == ["name"]
        assert {"name", "check", "email", "integer"} <= set(elicited[0].requested_schema.properties)
        assert "- Name: Ada Lovelace" in accepted[1]
        assert "- Agreed to terms: true" in accepted[1]
        assert "- Favorite Integer: 7" in accepted[1]
        declined = texts(client.call_tool("trigger-elicitation-request", {}).content)
        assert "declined" in declined[0]
        assert len(elicited) == 2

        roots = texts(client.call_tool("get-roots-list", {}).content)[0]
        assert "1. project\n   URI: file:///srv/project" in roots
        assert wait_for(lambda: any("root(s) received" in str(m.data) for m in logs))


def test_everything_subscription_update(everything: list[str]) -> None:
    updates: list[ResourceUpdated] = []
    updated = threading.Event()
    with connect(everything, env=EVERYTHING_ENV) as client:

        def on_update(payload: ResourceUpdated) -> None:
            updates.append(payload)
            updated.set()

        client.events.on(RESOURCE_UPDATED, on_update)
        uri = "demo://resource/dynamic/text/7"
        client.subscribe_resource(uri)
        # Starting the simulated updates sends one notification for each subscription at once.
        client.call_tool("toggle-subscriber-updates", {})
        assert updated.wait(10)
        assert updates[0].uri == uri
        contents = updates[0].contents.contents[0]
        assert isinstance(contents, TextResourceContents)
        assert contents.text.startswith("Resource 7: This is a plaintext resource")
        assert client.subscribed_contents(uri) is not None
        client.unsubscribe_resource(uri)
        client.call_tool("toggle-subscriber-updates", {})


def test_everything_at_2024_11_05(everything: list[str]) -> None:
    with connect(everything, env=EVERYTHING_ENV, protocol_version=OLDEST) as client:
        assert client.protocol_version == OLDEST
        assert texts(client.call_tool("echo", {"message": "old times"}).content) == ["Echo: old times"]
        assert client.prompts() and client.resources()


# --------------------------------------- a paginating server on the Python SDK

PAGED_SERVER = '''
"""A paginating MCP server on the official Python SDK's low-level Server: pages of three."""

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PAGE = 3
RESOURCES = [types.Resource(uri=f"paged://item/{i}", name=f"item-{i}", mime_type="text/plain") for i in range(8)]
TOOLS = [types.Tool(name=f"tool-{i}", input_schema={"type": "object"}) for i in range(5)]


def page(items, params):
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        if not cursor.startswith("from-"):
            raise MCPError(code=types.INVALID_PARAMS, message=f"bad cursor {cursor!r}")
        start = int(cursor[len("from-"):])
    end = start + PAGE
    return items[start:end], (f"from-{end}" if end < len(items) else None)


async def list_resources(ctx, params):
    items, cursor = page(RESOURCES, params)
    return types.ListResourcesResult(resources=items, next_cursor=cursor)


async def list_templates(ctx, params):
    return types.ListResourceTemplatesResult(resource_templates=[])


async def list_tools(ctx, params):
    items, cursor = page(TOOLS, params)
    return types.ListToolsResult(tools=items, next_cursor=cursor)


async def read_resource(ctx, params):
    contents = types.TextResourceContents(uri=params.uri, mime_type="text/plain", text=f"contents of {params.uri}")
    return types.ReadResourceResult(contents=[contents])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ran")])


handlers = dict(on_list_resources=list_resources, on_list_tools=list_tools, on_read_resource=read_resource)
if "--templates" in sys.argv:
    handlers["on_list_resource_templates"] = list_templates
server = Server("paged", version="1.0", on_call_tool=call_tool, **handlers)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
'''


@pytest.fixture
def paged_server(tmp_path: Path, peer_python: str) -> list[str]:
    script = tmp_path / "paged_server.py"
    script.write_text(PAGED_SERVER)
    return [peer_python, str(script)]


def test_sdk_server_pages_are_followed(paged_server: list[str]) -> None:
    with connect([*paged_server, "--templates"]) as client:
        first = client.list_resources()
        assert [r.uri for r in first.resources] == ["paged://item/0", "paged://item/1", "paged://item/2"]
        assert first.next_cursor == "from-3"
        uris = [r.uri for r in first.resources]
        cursor = first.next_cursor
        pages = 1
        while cursor is not None and pages < 10:
            page = client.list_resources(cursor)
            uris.extend(r.uri for r in page.resources)
            cursor = page.next_cursor
            pages += 1
        assert pages == 3
        assert uris == [f"paged://item/{i}" for i in range(8)]
        assert [r.uri for r in client.refresh_resources()] == uris
        assert [r.uri for r in client.resources()] == uris
        # The tools were collected across both pages at connect.
        assert [t.name for t in client.tools()] == [f"tool-{i}" for i in range(5)]
        assert texts(client.call_tool("tool-4").content) == ["tool-4 ran"]
        text = client.read_resource("paged://item/6").contents[0]
        assert isinstance(text, TextResourceContents) and text.text == "contents of paged://item/6"
        with pytest.raises(MCPError) as err:
            client.list_resources("not-a-cursor")
        assert err.value.code == MCP_CODES.INVALID_PARAMS


def test_sdk_server_without_resource_templates(paged_server: list[str]) -> None:
    """A server that lists resources but has no resources/templates/list handler (the SDK answers -32601)."""
    with connect(paged_server) as client:
        assert [t.name for t in client.tools()] == [f"tool-{i}" for i in range(5)]
        assert [r.uri for r in client.resources()] == [f"paged://item/{i}" for i in range(8)]
        assert client.resource_templates() == []


# ------------------------------------------- the official SDK's client, driving our servers

SDK_DRIVER = '''
"""Drive an MCP server with the official Python SDK's client; print what happened as one JSON object.

Usage: python sdk_driver.py CONFIG_JSON, where the config names the server's
command, arguments and environment, the scenario ("echo" or "target") and the
protocol version to request (null: the SDK's default).
"""

import json
import sys
import warnings

import anyio
import mcp.client.session as sdk_session
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

warnings.simplefilter("ignore")  # the SDK flags the 2025-era methods as deprecated
config = json.loads(sys.argv[1])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def error_of(call):
    try:
        await call
    except MCPError as exc:
        return {"code": exc.error.code, "message": exc.error.message}
    return None


async def all_pages(list_method, key):
    items, cursor, pages = [], None, 0
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await list_method(params=params)
        pages += 1
        items.extend(dump(item) for item in getattr(page, key))
        cursor = page.next_cursor
        if cursor is None or pages > 20:
            return items, pages


async def wait_cancelled(session, marker):
    """Ask the server which slow calls saw their cancellation until ``marker`` is one (at most 10 s)."""
    seen = []
    with anyio.move_on_after(10):
        while marker not in seen:
            result = await session.call_tool("cancelled_calls", {})
            seen = json.loads(result.content[0].text)
            await anyio.sleep(0.02)
    return seen


async def echo_scenario(session, out):
    out["tools"], out["tool_pages"] = await all_pages(session.list_tools, "tools")
    out["echo"] = dump(await session.call_tool("echo", {"text": "hello from the SDK"}))
    out["add"] = dump(await session.call_tool("add", {"a": 2, "b": 40}))
    out["unknown_tool"] = await error_of(session.call_tool("no-such-tool", {}))
    out["ping"] = dump(await session.send_ping())


async def target_scenario(session, out):
    out["tools"], out["tool_pages"] = await all_pages(session.list_tools, "tools")

    progress = []

    async def on_progress(value, total, message):
        progress.append([value, total, message])

    out["count"] = dump(await session.call_tool("count", {"steps": 3}, progress_callback=on_progress))
    out["progress"] = progress
    out["weather"] = dump(await session.call_tool("weather", {"city": "Oslo"}))
    out["set_level"] = dump(await session.set_logging_level("info"))
    out["shout"] = dump(await session.call_tool("shout", {"text": "quiet please"}))

    out["resources"], out["resource_pages"] = await all_pages(session.list_resources, "resources")
    out["templates"], _ = await all_pages(session.list_resource_templates, "resource_templates")
    out["readme"] = dump(await session.read_resource("sdk://notes/readme"))
    out["logo"] = dump(await session.read_resource("sdk://notes/logo"))
    out["templated"] = dump(await session.read_resource("sdk://notes/groceries/text"))
    out["missing_resource"] = await error_of(session.read_resource("sdk://nowhere"))

    out["prompts"], _ = await all_pages(session.list_prompts, "prompts")
    out["greet"] = dump(await session.get_prompt("greet", {"name": "Ada", "style": "formal"}))
    out["greet_missing"] = await error_of(session.get_prompt("greet", {}))
    ref = types.PromptReference(type="ref/prompt", name="greet")
    out["completion"] = dump(await session.complete(ref, {"name": "name", "value": "A"}))

    # The SDK's read timeout abandons the call and sends notifications/cancelled.
    out["timeout_error"] = await error_of(session.call_tool("slow", {"marker": "by-timeout"}, read_timeout_seconds=0.5))
    out["cancelled_after_timeout"] = await wait_cancelled(session, "by-timeout")
    # So does leaving the caller's cancel scope.
    with anyio.move_on_after(0.5) as scope:
        await session.call_tool("slow", {"marker": "by-scope"})
    out["scope_cancelled"] = scope.cancelled_caught
    out["cancelled_after_scope"] = await wait_cancelled(session, "by-scope")
    out["after_cancellations"] = dump(await session.call_tool("count", {"steps": 1}))


async def main():
    if config["version"] is not None:
        # ClientSession.initialize() offers this module constant.
        sdk_session.LATEST_HANDSHAKE_VERSION = config["version"]
    server = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
    out = {}
    logs = []

    async def on_log(params):
        logs.append(dump(params))

    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as session:
                out["initialize"] = dump(await session.initialize())
                scenario = echo_scenario if config["scenario"] == "echo" else target_scenario
                await scenario(session, out)
    out["logs"] = logs
    print(json.dumps(out))


anyio.run(main)
'''


def drive_with_sdk(peer_python: str, tmp_path: Path, server: Path, scenario: str, version: str | None) -> Any:
    """Run the SDK driver against ``server``; its JSON report and its stderr."""
    driver = tmp_path / "sdk_driver.py"
    driver.write_text(SDK_DRIVER)
    config = {
        "command": sys.executable,
        "args": [str(server)],
        # Our server needs mcp_sync, and inherits the environment (with coverage's settings).
        "env": {**os.environ, "PYTHONPATH": str(ROOT)},
        "scenario": scenario,
        "version": version,
    }
    done = subprocess.run(
        [peer_python, str(driver), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        cwd=tmp_path,
        env=peers.peer_environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"the SDK driver failed:\n{done.stderr[-6000:]}"
    return json.loads(done.stdout), done.stderr


VERSIONS = [pytest.param(None, id="sdk-default"), pytest.param(OLDEST, id=OLDEST)]


@pytest.mark.parametrize("version", VERSIONS)
def test_sdk_client_drives_echo_server(peer_python: str, tmp_path: Path, version: str | None) -> None:
    report, _ = drive_with_sdk(peer_python, tmp_path, ECHO_SERVER, "echo", version)
    init = report["initialize"]
    assert init["protocolVersion"] == (version or LATEST)
    assert init["serverInfo"] == {"name": "echo-server", "version": "1.0"}
    assert "tools" in init["capabilities"]
    # Completions were announced as a capability from 2025-03-26 on.
    assert ("completions" in init["capabilities"]) == (version is None)
    assert [tool["name"] for tool in report["tools"]] == ["echo", "add"]
    assert report["tool_pages"] == 1
    assert report["echo"]["content"] == [{"type": "text", "text": "hello from the SDK"}]
    assert report["echo"]["isError"] is False
    assert report["add"]["content"] == [{"type": "text", "text": "42"}]
    assert report["unknown_tool"] == {"code": -32602, "message": "Unknown tool: no-such-tool"}
    assert report["ping"] == {}


@pytest.mark.parametrize("version", VERSIONS)
def test_sdk_client_drives_our_server(peer_python: str, tmp_path: Path, version: str | None) -> None:
    report, stderr = drive_with_sdk(peer_python, tmp_path, SDK_TARGET, "target", version)
    latest = version is None
    assert report["initialize"]["protocolVersion"] == (version or LATEST)
    assert report["initialize"]["serverInfo"]["name"] == "sdk-target"

    # Five tools in pages of two.
    assert report["tool_pages"] == 3
    tools = {tool["name"]: tool for tool in report["tools"]}
    assert list(tools) == ["count", "slow", "cancelled_calls", "weather", "shout"]
    # Titles and output schemas exist from 2025-06-18 on, and are left out before.
    assert ("title" in tools["count"]) == latest
    assert ("outputSchema" in tools["weather"]) == latest

    assert report["count"]["content"] == [{"type": "text", "text": "counted to 3"}]
    # Progress messages exist from 2025-03-26 on.
    assert report["progress"] == [[n, 3, f"step {n} of 3" if latest else None] for n in (1, 2, 3)]

    weather = report["weather"]
    assert json.loads(weather["content"][0]["text"]) == {"city": "Oslo", "celsius": 21.5}
    if latest:
        assert weather["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
    else:
        assert "structuredContent" not in weather

    # At level "info", the debug message is held back and the warning is sent.
    assert report["set_level"] == {}
    assert report["shout"]["content"] == [{"type": "text", "text": "QUIET PLEASE"}]
    assert report["logs"] == [{"level": "warning", "logger": "sdk-target", "data": {"shouted": "quiet please"}}]

    assert report["resource_pages"] == 2
    assert [r["uri"] for r in report["resources"]] == ["sdk://notes/readme", "sdk://notes/logo", "sdk://notes/todo"]
    assert ("title" in report["resources"][0]) == latest
    assert [t["uriTemplate"] for t in report["templates"]] == ["sdk://notes/{name}/text"]
    readme = {"uri": "sdk://notes/readme", "mimeType": "text/plain", "text": "Read me first."}
    assert report["readme"]["contents"] == [readme]
    logo = report["logo"]["contents"][0]
    assert base64.b64decode(logo["blob"]) == b"\x89PNG-ish\x00\xff"
    assert report["templated"]["contents"][0]["text"] == "The note called groceries."
    assert report["missing_resource"]["code"] == -32002

    greet = report["prompts"][0]
    assert greet["name"] == "greet"
    assert [(a["name"], a["required"]) for a in greet["arguments"]] == [("name", True), ("style", False)]
    assert [m["content"]["text"] for m in report["greet"]["messages"]] == [
        "Greet Ada in a formal style.",
        "Hello, Ada!",
    ]
    assert [m["role"] for m in report["greet"]["messages"]] == ["user", "assistant"]
    assert report["greet_missing"]["code"] == -32602
    assert report["completion"]["completion"]["values"] == ["Ada", "Alan"]

    # Both cancellations reached the handler, which saw ctx.cancelled.
    assert report["timeout_error"]["code"] == -32001  # the SDK's own request-timeout code
    assert "by-timeout" in report["cancelled_after_timeout"]
    assert report["scope_cancelled"] is True
    assert "by-scope" in report["cancelled_after_scope"]
    assert "sdk_target: slow by-timeout saw ctx.cancelled" in stderr
    assert "sdk_target: slow by-scope saw ctx.cancelled" in stderr
    assert report["after_cancellations"]["content"] == [{"type": "text", "text": "counted to 1"}]
