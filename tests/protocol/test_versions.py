"""Protocol revisions: negotiation and what each revision's peers may receive.

The unit tests pin down each adapter. The wire tests connect a real client
offering each handshake revision to a server that uses every optional field,
and check what the client receives against that revision's official schema:
once as published (``tests/schema_util.validate_definition``), and once made
strict (no property the revision does not define), which is the promise of
:mod:`mcp_sync.protocol.versions`.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest

from mcp_sync.client.core import MCPClient
from mcp_sync.protocol import stateless as stateless_data
from mcp_sync.protocol.versions import (
    HANDSHAKE_REVISIONS,
    KNOWN_REVISIONS,
    LATEST_REVISION,
    STATELESS_REVISION,
    STATELESS_REVISIONS,
    adapt_notification,
    adapt_result,
    at_least,
    negotiate,
    revision_index,
)
from mcp_sync.server.context import Context
from mcp_sync.server.core import MCPServer
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from tests.helpers import RecordingTransport
from tests.schema_util import load_schema, validate_definition

OLD = ("2024-11-05", "2025-03-26", "2025-06-18")

# ------------------------------------------------------------- negotiation


def test_revision_constants() -> None:
    assert HANDSHAKE_REVISIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert LATEST_REVISION == "2025-11-25"
    assert STATELESS_REVISION == "2026-07-28"


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_negotiate_keeps_a_supported_revision(revision: str) -> None:
    assert negotiate(revision) == revision


@pytest.mark.parametrize("requested", ["1999-01-01", "2026-07-28", "", "latest"])
def test_negotiate_answers_the_latest_for_anything_else(requested: str) -> None:
    assert negotiate(requested) == "2025-11-25"
    assert negotiate(requested, ("2024-11-05", "2025-03-26")) == "2025-03-26"


def test_at_least_compares_dates() -> None:
    assert at_least("2025-06-18", "2025-06-18")
    assert at_least("2025-11-25", "2025-06-18")
    assert not at_least("2025-03-26", "2025-06-18")
    assert not at_least("", "2024-11-05")


def test_one_ordered_registry_of_every_revision() -> None:
    assert STATELESS_REVISIONS == ("2026-07-28",)
    assert (*HANDSHAKE_REVISIONS, *STATELESS_REVISIONS) == KNOWN_REVISIONS
    assert [revision_index(r) for r in KNOWN_REVISIONS] == list(range(len(KNOWN_REVISIONS)))
    assert revision_index("2030-01-01") is None


def test_stateless_request_meta_names_the_revision_and_an_optional_log_level() -> None:
    quiet = stateless_data.request_meta(STATELESS_REVISION, {}, {"name": "c", "version": "1"}, None)
    chatty = stateless_data.request_meta(STATELESS_REVISION, {}, {"name": "c", "version": "1"}, "debug")
    assert stateless_data.meta_revision({"_meta": quiet}) == STATELESS_REVISION
    assert stateless_data.LOG_LEVEL not in quiet and chatty[stateless_data.LOG_LEVEL] == "debug"


def test_meta_revision_reads_any_mapping_and_nothing_else() -> None:
    """The one reading of a request's revision: from a dict (what comes off the wire) or any other mapping, and
    ``None`` whenever params or ``_meta`` is missing or not a mapping (such a request is of the handshake era)."""
    named = {stateless_data.PROTOCOL_VERSION: STATELESS_REVISION}
    assert stateless_data.meta_revision({"_meta": named}) == STATELESS_REVISION
    assert stateless_data.meta_revision(MappingProxyType({"_meta": MappingProxyType(named)})) == STATELESS_REVISION
    for params in (None, {}, {"_meta": None}, {"_meta": [named]}, {"_meta": "2026-07-28"}, {"_meta": {}}):
        assert stateless_data.meta_revision(params) is None, params
    assert stateless_data.meta_revision(["_meta"]) is None  # type: ignore[arg-type]
    assert stateless_data.is_stateless_request("tools/call", {"_meta": named})
    assert not stateless_data.is_stateless_request("tools/call", {"name": "echo", "arguments": {}})


def test_at_least_compares_positions_not_strings() -> None:
    for newer, revision in enumerate(KNOWN_REVISIONS):
        for older, minimum in enumerate(KNOWN_REVISIONS):
            assert at_least(revision, minimum) == (newer >= older), (revision, minimum)
    assert at_least(STATELESS_REVISION, LATEST_REVISION)


@pytest.mark.parametrize("unknown", ["zzz", "9999-12-31", "2025-06-18 ", "2025-6-18", "2026-01-01"])
def test_an_unknown_revision_is_not_at_least_any_known_one(unknown: str) -> None:
    # As strings, "zzz" and "9999-12-31" would be newer than every revision; "2026-01-01" sits between
    # two known ones. None of them is known, so none gets what a known revision added.
    for minimum in KNOWN_REVISIONS:
        assert not at_least(unknown, minimum)


def test_an_unknown_minimum_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown protocol revision '2025-13-01' as a minimum"):
        at_least("2025-11-25", "2025-13-01")


def test_an_unknown_revision_gets_the_most_conservative_adaptation() -> None:
    result = {"tools": [{"name": "t", "title": "T", "inputSchema": {}, "annotations": {"readOnlyHint": True}}]}
    assert adapt_result("tools/list", result, "zzz") == {"tools": [{"name": "t", "inputSchema": {}}]}
    assert adapt_notification("notifications/progress", {"progress": 1, "message": "m"}, "zzz") == {"progress": 1}


# ---------------------------------------------------------------- results


def test_the_latest_revision_and_unadapted_methods_pass_through() -> None:
    result = {"tools": [{"name": "t", "title": "T", "inputSchema": {}}]}
    assert adapt_result("tools/list", result, LATEST_REVISION) is result
    ping = {"anything": 1}
    for revision in OLD:
        assert adapt_result("ping", ping, revision) is ping
        assert adapt_result("completion/complete", ping, revision) is ping


INITIALIZE = {
    "protocolVersion": "x",
    "capabilities": {"logging": {}, "completions": {}, "tools": {"listChanged": True}},
    "serverInfo": {
        "name": "s",
        "version": "1",
        "title": "S",
        "icons": [{"src": "https://e/i.png"}],
        "description": "d",
        "websiteUrl": "https://e",
    },
    "instructions": "use me",
}


@pytest.mark.parametrize(
    ("revision", "server_info", "capabilities"),
    [
        ("2025-06-18", {"name": "s", "version": "1", "title": "S"}, INITIALIZE["capabilities"]),
        ("2025-03-26", {"name": "s", "version": "1"}, INITIALIZE["capabilities"]),
        ("2024-11-05", {"name": "s", "version": "1"}, {"logging": {}, "tools": {"listChanged": True}}),
    ],
)
def test_adapt_initialize(revision: str, server_info: dict[str, Any], capabilities: dict[str, Any]) -> None:
    adapted = adapt_result("initialize", INITIALIZE, revision)
    assert adapted == {**INITIALIZE, "serverInfo": server_info, "capabilities": capabilities}
    assert INITIALIZE["serverInfo"]["icons"]  # the input is left alone


TOOL = {
    "name": "t",
    "title": "T",
    "description": "d",
    "inputSchema": {"type": "object"},
    "outputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
    "icons": [{"src": "https://e/i.png"}],
    "execution": {"taskSupport": "optional"},
    "_meta": {"k": 1},
}


@pytest.mark.parametrize(
    ("revision", "keys"),
    [
        ("2025-06-18", {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}),
        ("2025-03-26", {"name", "description", "inputSchema", "annotations"}),
        ("2024-11-05", {"name", "description", "inputSchema"}),
    ],
)
def test_adapt_tools_list(revision: str, keys: set[str]) -> None:
    adapted = adapt_result("tools/list", {"tools": [TOOL], "nextCursor": "c"}, revision)
    assert adapted == {"tools": [{k: v for k, v in TOOL.items() if k in keys}], "nextCursor": "c"}
    assert adapt_result("tools/list", {"nextCursor": "c"}, revision) == {"nextCursor": "c"}


ANNOTATED = {"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"}
RESOURCE = {
    "uri": "mem://r",
    "name": "r",
    "title": "R",
    "mimeType": "text/plain",
    "size": 3,
    "annotations": ANNOTATED,
    "icons": [{"src": "https://e/i.png"}],
    "_meta": {"k": 1},
}
TEMPLATE = {"uriTemplate": "mem://{x}", "name": "t", "title": "T", "icons": [{"src": "https://e/i.png"}]}


@pytest.mark.parametrize("revision", OLD)
def test_adapt_resources_and_templates(revision: str) -> None:
    resources = adapt_result("resources/list", {"resources": [RESOURCE]}, revision)["resources"]
    templates = adapt_result("resources/templates/list", {"resourceTemplates": [TEMPLATE]}, revision)
    if revision == "2025-06-18":
        assert resources == [{k: v for k, v in RESOURCE.items() if k != "icons"}]
        assert templates == {"resourceTemplates": [{k: v for k, v in TEMPLATE.items() if k != "icons"}]}
    else:
        assert resources == [
            {
                "uri": "mem://r",
                "name": "r",
                "mimeType": "text/plain",
                "size": 3,
                "annotations": {"audience": ["user"], "priority": 0.5},
            }
        ]
        assert templates == {"resourceTemplates": [{"uriTemplate": "mem://{x}", "name": "t"}]}


PROMPTS = {
    "prompts": [
        {
            "name": "p",
            "title": "P",
            "icons": [{"src": "https://e/i.png"}],
            "arguments": [{"name": "a", "title": "A", "required": True}],
        },
        {"name": "bare"},
    ]
}


def test_adapt_prompts_list() -> None:
    assert adapt_result("prompts/list", PROMPTS, "2025-06-18") == {
        "prompts": [
            {"name": "p", "title": "P", "arguments": [{"name": "a", "title": "A", "required": True}]},
            {"name": "bare"},
        ]
    }
    for revision in ("2025-03-26", "2024-11-05"):
        assert adapt_result("prompts/list", PROMPTS, revision) == {
            "prompts": [{"name": "p", "arguments": [{"name": "a", "required": True}]}, {"name": "bare"}]
        }
    assert PROMPTS["prompts"][0]["arguments"][0]["title"] == "A"  # the input is left alone


CALL_RESULT = {
    "content": [
        {"type": "text", "text": "t", "_meta": {"k": 1}, "annotations": ANNOTATED},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "mem://r", "name": "r"},
        {"type": "resource", "resource": {"uri": "mem://e", "text": "e", "_meta": {"k": 2}}, "_meta": {"k": 3}},
    ],
    "structuredContent": {"n": 1},
    "isError": False,
}


def test_adapt_tools_call() -> None:
    assert adapt_result("tools/call", CALL_RESULT, "2025-06-18") == CALL_RESULT
    plain = [
        {"type": "text", "text": "t", "annotations": {"audience": ["user"], "priority": 0.5}},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
    ]
    link = {"type": "text", "text": "Resource: r <mem://r>"}
    embedded = {"type": "resource", "resource": {"uri": "mem://e", "text": "e"}}
    assert adapt_result("tools/call", CALL_RESULT, "2025-03-26") == {
        "content": [*plain, CALL_RESULT["content"][2], link, embedded],
        "isError": False,
    }
    assert adapt_result("tools/call", CALL_RESULT, "2024-11-05") == {
        "content": [*plain, {"type": "text", "text": "[audio content (audio/wav) omitted]"}, link, embedded],
        "isError": False,
    }
    assert adapt_result("tools/call", {"isError": True}, "2024-11-05") == {"content": [], "isError": True}


def test_adapt_prompts_get() -> None:
    result = {
        "description": "d",
        "messages": [
            {"role": "user", "content": {"type": "audio", "data": "AA==", "mimeType": "audio/mpeg"}},
            {"role": "assistant", "content": {"type": "resource_link", "uri": "mem://r", "name": "r"}},
        ],
    }
    assert adapt_result("prompts/get", result, "2025-06-18") == result
    assert adapt_result("prompts/get", result, "2025-03-26")["messages"][0] == result["messages"][0]
    assert adapt_result("prompts/get", result, "2024-11-05") == {
        "description": "d",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "[audio content (audio/mpeg) omitted]"}},
            {"role": "assistant", "content": {"type": "text", "text": "Resource: r <mem://r>"}},
        ],
    }
    assert adapt_result("prompts/get", {}, "2024-11-05") == {"messages": []}


def test_adapt_resources_read() -> None:
    result = {"contents": [{"uri": "mem://a", "text": "a", "_meta": {"k": 1}}, {"uri": "mem://b", "blob": "AA=="}]}
    assert adapt_result("resources/read", result, "2025-06-18") == result
    assert adapt_result("resources/read", result, "2025-03-26") == {
        "contents": [{"uri": "mem://a", "text": "a"}, {"uri": "mem://b", "blob": "AA=="}]
    }


# ------------------------------------------------------------ notifications


def test_adapt_progress_notification() -> None:
    params = {"progressToken": 1, "progress": 5, "total": 10, "message": "half"}
    assert adapt_notification("notifications/progress", params, "2024-11-05") == {
        "progressToken": 1,
        "progress": 5,
        "total": 10,
    }
    for revision in ("2025-03-26", "2025-06-18", "2025-11-25"):
        assert adapt_notification("notifications/progress", params, revision) == params
    log = {"level": "info", "data": "x"}
    assert adapt_notification("notifications/message", log, "2024-11-05") is log


# --------------------------------------------------- what old clients get


@functools.cache
def _strict_validator(revision: str, definition: str) -> jsonschema.protocols.Validator:
    """A validator for ``definition`` that also refuses properties the revision does not define."""
    document = load_schema(revision)
    key, cls = (
        ("$defs", jsonschema.Draft202012Validator)
        if "$defs" in document
        else ("definitions", jsonschema.Draft7Validator)
    )
    definitions = copy.deepcopy(document[key])

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and node["properties"] and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(definitions)
    schema = {"$schema": cls.META_SCHEMA["$id"], "$ref": f"#/{key}/{definition}", key: definitions}
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


RESULT_DEFINITIONS = {
    "initialize": "InitializeResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "ping": "EmptyResult",
}
NOTIFICATION_DEFINITIONS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
}

ICON = Icon(src="https://example.com/icon.png", mime_type="image/png")


def _rich_server() -> MCPServer:
    """A server that uses every optional field mcp_sync can put on the wire."""
    server = MCPServer("rich", "1.0", title="Rich server", instructions="Try the tools.")

    def everything(args: Any, ctx: Context) -> CallToolResult:
        ctx.progress(1, 2, "half way")
        ctx.log("info", {"step": 1}, logger="tools")
        return CallToolResult(
            content=[
                TextContent(text="t", meta={"k": 1}, annotations=Annotations(last_modified="2025-01-01T00:00:00Z")),
                ImageContent(data="AA==", mime_type="image/png"),
                AudioContent(data="AA==", mime_type="audio/wav"),
                ResourceLink(uri="mem://doc", name="doc", title="Doc", icons=[ICON]),
                EmbeddedResource(resource=TextResourceContents(uri="mem://doc", text="d", meta={"k": 2})),
            ],
            structured_content={"n": 1},
        )

    server.register_tool(
        "everything",
        everything,
        title="Everything",
        description="Uses every content type",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": []},
        output_schema={"type": "object", "properties": {"n": {"type": "number"}}},
        annotations=ToolAnnotations(title="Everything", read_only_hint=True),
        icons=[ICON],
        meta={"k": 3},
    )
    server.register_resource(
        "mem://doc",
        lambda uri, ctx: [
            TextResourceContents(uri=uri, text="doc", mime_type="text/plain", meta={"k": 4}),
            BlobResourceContents(uri=uri, blob="AA=="),
        ],
        title="Doc",
        description="A document",
        mime_type="text/plain",
        size=3,
        annotations=Annotations(audience=["user"], priority=0.5, last_modified="2025-01-01T00:00:00Z"),
        icons=[ICON],
        meta={"k": 5},
    )
    server.register_resource_template(
        "mem://{name}", lambda uri, params, ctx: "x", title="Any", description="Anything", icons=[ICON], meta={"k": 6}
    )
    server.register_prompt(
        "ask",
        lambda args, ctx: [
            PromptMessage(role="user", content=AudioContent(data="AA==", mime_type="audio/wav")),
            PromptMessage(role="assistant", content=ResourceLink(uri="mem://doc", name="doc")),
            PromptMessage(role="user", content=TextContent(text=args["topic"], meta={"k": 7})),
        ],
        title="Ask",
        description="Asks",
        arguments=[PromptArgument(name="topic", title="Topic", description="What", required=True)],
        icons=[ICON],
        meta={"k": 8},
    )
    return server


@pytest.fixture
def rich_server() -> Iterator[MCPServer]:
    server = _rich_server()
    try:
        yield server
    finally:
        server.stop()


def _exchange(server: MCPServer, revision: str) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Walk the method surface as a client offering ``revision``; the results and notifications it got."""
    client = MCPClient(protocol_version=revision)
    client_end, server_end = InMemoryTransport.pair()
    recorder = RecordingTransport(client_end)
    server.start(server_end)
    try:
        client.connect(recorder)
        client.set_log_level("debug")
        client.call_tool("everything", {"q": "x"}, progress=lambda p: None)
        client.read_resource("mem://doc")
        client.read_resource("mem://other")
        client.get_prompt("ask", {"topic": "t"})
        client.complete(PromptReference(name="ask"), "topic", "")
        client.ping()
    finally:
        client.disconnect()
    sent = {m["id"]: m["method"] for m in map(json.loads, recorder.sent) if "method" in m and "id" in m}
    results: dict[str, dict[str, Any]] = {}
    notifications: list[dict[str, Any]] = []
    for message in map(json.loads, recorder.received):
        if "result" in message:
            results[f"{sent[message['id']]}#{message['id']}"] = message["result"]
        elif "method" in message and "id" not in message:
            notifications.append(message)
    return results, notifications


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_a_client_gets_only_what_its_revision_defines(rich_server: MCPServer, revision: str) -> None:
    results, notifications = _exchange(rich_server, revision)
    assert {key.split("#")[0] for key in results} == set(RESULT_DEFINITIONS) | {"logging/setLevel"}
    for key, result in results.items():
        method = key.split("#")[0]
        definition = RESULT_DEFINITIONS.get(method, "EmptyResult" if method == "logging/setLevel" else "")
        validate_definition(revision, definition, result)
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in _strict_validator(revision, definition).iter_errors(result)
        ]
        assert errors == [], f"{revision} {method}"
    assert {n["method"] for n in notifications} == set(NOTIFICATION_DEFINITIONS)
    for notification in notifications:
        definition = NOTIFICATION_DEFINITIONS[notification["method"]]
        validate_definition(revision, definition, notification)
        if not at_least(revision, "2025-11-25"):
            notification = {k: v for k, v in notification.items() if k != "jsonrpc"}  # envelope, not in the def
        assert list(_strict_validator(revision, definition).iter_errors(notification)) == []


def test_a_2024_11_05_client_gets_progress_without_a_message(rich_server: MCPServer) -> None:
    _results, notifications = _exchange(rich_server, "2024-11-05")
    progress = [n["params"] for n in notifications if n["method"] == "notifications/progress"]
    assert len(progress) == 1
    assert set(progress[0]) == {"progressToken", "progress", "total"}
    _, newer = _exchange(rich_server, "2025-03-26")
    assert [n["params"]["message"] for n in newer if n["method"] == "notifications/progress"] == ["half way"]


def test_a_2024_11_05_client_gets_a_schema_valid_initialize_result(rich_server: MCPServer) -> None:
    results, _ = _exchange(rich_server, "2024-11-05")
    initialize = next(result for key, result in results.items() if key.startswith("initialize#"))
    validate_definition("2024-11-05", "InitializeResult", initialize)
    assert initialize == {
        "protocolVersion": "2024-11-05",
        "capabilities": {
            "logging": {},
            "prompts": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "tools": {"listChanged": True},
        },
        "serverInfo": {"name": "rich", "version": "1.0"},
        "instructions": "Try the tools.",
    }
    call = next(result for key, result in results.items() if key.startswith("tools/call#"))
    assert [block["type"] for block in call["content"]] == ["text", "image", "text", "text", "resource"]
    assert "structuredContent" not in call


def test_the_strict_check_catches_an_undefined_property() -> None:
    """The strict validator is not vacuous: a 2025-06-18 field fails a 2024-11-05 check."""
    tools = {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "title": "T"}]}
    validate_definition("2024-11-05", "ListToolsResult", tools)  # the published schema lets it pass
    errors = list(_strict_validator("2024-11-05", "ListToolsResult").iter_errors(tools))
    assert len(errors) == 1
    assert "'title' was unexpected" in errors[0].message
