"""Tests of mcp_sync.types: official examples, rejection of bad input, schema conformance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError
from schema_util import validate_definition

import mcp_sync.types as t

EXAMPLES = Path(__file__).resolve().parent.parent / "spec" / "2026-07-28" / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*/*.json"))

META_2026: dict[str, Any] = t.RequestMetaObject(
    protocol_version="2026-07-28",
    client_capabilities=t.ClientCapabilities(),
    client_info=t.Implementation(name="client", version="1.0.0"),
).to_wire()


def parse_and_dump(name: str, data: Any) -> Any:
    """Parse ``data`` with the model (or union alias) called ``name``; dump it back."""
    target = getattr(t, name)
    if isinstance(target, type) and issubclass(target, BaseModel):
        model = target.model_validate(data)
        assert isinstance(model, t.WireModel)
        return model.to_wire()
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    value = adapter.validate_python(data)
    return adapter.dump_python(value, mode="json", by_alias=True, exclude_none=True)


def error_locs(excinfo: pytest.ExceptionInfo[ValidationError]) -> list[tuple[int | str, ...]]:
    return [tuple(error["loc"]) for error in excinfo.value.errors()]


# --------------------------------------------------------------------------
# Official examples
# --------------------------------------------------------------------------


def test_examples_are_present() -> None:
    assert len(EXAMPLE_FILES) > 100


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[str(p.relative_to(EXAMPLES)) for p in EXAMPLE_FILES])
def test_example_round_trips(path: Path) -> None:
    name = path.parent.name
    assert hasattr(t, name), f"mcp_sync.types has no {name}"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert parse_and_dump(name, data) == data


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[str(p.relative_to(EXAMPLES)) for p in EXAMPLE_FILES])
def test_example_matches_schema_after_round_trip(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_definition("2026-07-28", path.parent.name, parse_and_dump(path.parent.name, data))


# --------------------------------------------------------------------------
# Rejection of malformed payloads
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "payload", "loc"),
    [
        (t.Tool, {"name": "x", "inputSchema": 5}, ("inputSchema",)),
        (t.Tool, {"inputSchema": {"type": "object"}}, ("name",)),
        (t.CallToolRequestParams, {"arguments": {}}, ("name",)),
        (t.TextContent, {"type": "text", "text": 3}, ("text",)),
        (t.TextContent, {"type": "image", "text": "x"}, ("type",)),
        (t.CallToolResult, {"content": [{"type": "video"}]}, ("content", 0)),
        (t.CallToolResult, {"content": [{"type": "text"}]}, ("content", 0, "text", "text")),
        (
            t.CallToolRequest,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
            ("params", "name"),
        ),
        (
            t.CallToolRequest,
            {"id": 1, "method": "tools/list", "params": {"name": "x"}},
            ("method",),
        ),
        (t.ElicitResult, {"action": "maybe"}, ("action",)),
        (t.ProgressNotificationParams, {"progress": 1}, ("progressToken",)),
        (t.ModelPreferences, {"costPriority": 2}, ("costPriority",)),
        (t.Annotations, {"priority": -0.5}, ("priority",)),
        (t.ListToolsResult, {"tools": [], "ttlMs": -1}, ("ttlMs",)),
        (t.ListToolsResult, {"tools": [{"name": "x"}]}, ("tools", 0, "inputSchema")),
        (t.InitializeResult, {"protocolVersion": "x", "capabilities": {}}, ("serverInfo",)),
        (t.SamplingMessage, {"role": "system", "content": []}, ("role",)),
        (
            t.CompleteRequestParams,
            {"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": "b"}},
            ("ref",),
        ),
        (t.ParseError, {"code": -32600, "message": "x"}, ("code",)),
        (
            t.UnsupportedProtocolVersionError,
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x", "data": {}}},
            ("error", "data", "supported"),
        ),
        (t.InputRequiredResult, {"resultType": "complete"}, ("resultType",)),
    ],
)
def test_malformed_payload_is_rejected_at_its_field(
    model: type[BaseModel], payload: dict[str, Any], loc: tuple[int | str, ...]
) -> None:
    with pytest.raises(ValidationError) as excinfo:
        model.model_validate(payload)
    assert any(found[: len(loc)] == loc for found in error_locs(excinfo)), error_locs(excinfo)


def test_unknown_content_type_is_rejected_by_the_union_alias() -> None:
    with pytest.raises(ValidationError) as excinfo:
        TypeAdapter(t.ContentBlock).validate_python({"type": "video", "data": "x"})
    assert excinfo.value.errors()[0]["type"] == "union_tag_invalid"


def test_input_request_union_needs_a_known_method() -> None:
    with pytest.raises(ValidationError) as excinfo:
        TypeAdapter(t.InputRequests).validate_python({"a": {"method": "tools/call"}})
    assert error_locs(excinfo)[0][0] == "a"


# --------------------------------------------------------------------------
# Wire conventions
# --------------------------------------------------------------------------


def test_unknown_fields_round_trip_at_every_level() -> None:
    wire = {
        "resultType": "complete",
        "content": [
            {
                "type": "text",
                "text": "hi",
                "x-extra": {"nested": [1, 2]},
                "annotations": {"priority": 0.5, "x-note": True},
            },
            {
                "type": "resource",
                "resource": {"uri": "file:///a", "text": "a", "x-r": 1},
            },
        ],
        "structuredContent": {"a": 1},
        "x-top": "kept",
        "_meta": {"com.example/trace": "abc"},
    }
    result = t.CallToolResult.model_validate(wire)
    assert result.model_extra == {"x-top": "kept"}
    assert result.meta == {"com.example/trace": "abc"}
    assert result.to_wire() == wire


def test_unknown_fields_in_capabilities_round_trip() -> None:
    wire = {
        "roots": {"listChanged": True},
        "sampling": {"context": {}, "future": {}},
        "tasks": {"list": {}},
    }
    assert t.ClientCapabilities.model_validate(wire).to_wire() == wire


def test_none_fields_are_not_emitted() -> None:
    tool = t.Tool(name="echo", input_schema={"type": "object"})
    assert tool.to_wire() == {"name": "echo", "inputSchema": {"type": "object"}}
    assert t.Implementation(name="s", version="1").to_wire() == {"name": "s", "version": "1"}


def test_snake_case_and_camel_case_both_accepted() -> None:
    camel = t.Tool.model_validate({"name": "a", "inputSchema": {"type": "object"}})
    snake = t.Tool.model_validate({"name": "a", "input_schema": {"type": "object"}})
    built = t.Tool(name="a", input_schema={"type": "object"})
    assert camel == snake == built
    params = t.ProgressNotificationParams.model_validate({"progress_token": 1, "progress": 2})
    assert params.progress_token == 1
    assert params.to_wire() == {"progressToken": 1, "progress": 2.0}


def test_meta_is_the_meta_attribute() -> None:
    params = t.CallToolRequestParams.model_validate({"name": "x", "_meta": {"progressToken": "tok"}})
    assert params.meta == {"progressToken": "tok"}
    assert params.to_wire() == {"name": "x", "_meta": {"progressToken": "tok"}}
    built = t.CallToolRequestParams(name="x", meta={"progressToken": "tok"})
    assert built.to_wire() == params.to_wire()


def test_const_fields_default() -> None:
    assert t.TextContent(text="hi").to_wire() == {"type": "text", "text": "hi"}
    request = t.CallToolRequest(id=7, params=t.CallToolRequestParams(name="x"))
    assert request.to_wire() == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "x"},
    }
    assert t.ParseError(message="bad").to_wire() == {"code": -32700, "message": "bad"}
    assert t.InputRequiredResult().to_wire() == {"resultType": "input_required"}


def test_schema_keyword_fields_use_explicit_aliases() -> None:
    schema = t.ElicitRequestedSchema.model_validate(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {},
        }
    )
    assert schema.schema_ == "https://json-schema.org/draft/2020-12/schema"
    meta = t.RequestMetaObject.model_validate(META_2026)
    assert meta.protocol_version == "2026-07-28"
    assert meta.client_info is not None
    assert meta.client_info.name == "client"
    assert meta.to_wire() == META_2026


def test_typed_meta_objects() -> None:
    listen = t.SubscriptionsListenResultMetaObject.model_validate(
        {"io.modelcontextprotocol/subscriptionId": "listen-1"}
    )
    assert listen.subscription_id == "listen-1"
    note = t.NotificationMetaObject(subscription_id=3)
    assert note.to_wire() == {"io.modelcontextprotocol/subscriptionId": 3}
    server = t.ResultMetaObject(server_info=t.Implementation(name="s", version="1"))
    assert server.to_wire() == {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    with pytest.raises(ValidationError) as excinfo:
        t.RequestMetaObject.model_validate({"io.modelcontextprotocol/protocolVersion": "x"})
    assert ("io.modelcontextprotocol/clientCapabilities",) in error_locs(excinfo)


# --------------------------------------------------------------------------
# Unions
# --------------------------------------------------------------------------


def test_resource_contents_union_tells_text_from_blob() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(t.ResourceContents)
    assert isinstance(adapter.validate_python({"uri": "a", "text": "x"}), t.TextResourceContents)
    assert isinstance(adapter.validate_python({"uri": "a", "blob": "eA=="}), t.BlobResourceContents)


@pytest.mark.parametrize(
    ("payload", "model"),
    [
        ({"type": "string"}, t.StringSchema),
        ({"type": "integer", "default": 30}, t.NumberSchema),
        ({"type": "boolean", "default": True}, t.BooleanSchema),
        ({"type": "string", "enum": ["a", "b"]}, t.UntitledSingleSelectEnumSchema),
        (
            {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
            t.TitledSingleSelectEnumSchema,
        ),
        (
            {"type": "string", "enum": ["a"], "enumNames": ["A"]},
            t.LegacyTitledEnumSchema,
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            t.UntitledMultiSelectEnumSchema,
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
            t.TitledMultiSelectEnumSchema,
        ),
    ],
)
def test_primitive_schema_definition_picks_the_closest_shape(payload: dict[str, Any], model: type[BaseModel]) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(t.PrimitiveSchemaDefinition)
    value = adapter.validate_python(payload)
    assert type(value) is model
    assert adapter.dump_python(value, mode="json", by_alias=True, exclude_none=True) == payload


def test_elicit_params_union() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(t.ElicitRequestParams)
    form = adapter.validate_python({"message": "m", "requestedSchema": {"type": "object", "properties": {}}})
    assert isinstance(form, t.ElicitRequestFormParams)
    assert form.mode is None
    url = adapter.validate_python({"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e1"})
    assert isinstance(url, t.ElicitRequestURLParams)
    assert url.elicitation_id == "e1"


def test_result_responses_tell_final_from_input_required() -> None:
    final = t.CallToolResultResponse.model_validate(
        {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}
    )
    assert isinstance(final.result, t.CallToolResult)
    legacy = t.CallToolResultResponse.model_validate({"id": 1, "result": {"content": []}})
    assert isinstance(legacy.result, t.CallToolResult)
    more = t.GetPromptResultResponse.model_validate(
        {"id": 1, "result": {"resultType": "input_required", "requestState": "s"}}
    )
    assert isinstance(more.result, t.InputRequiredResult)


def test_input_responses_pick_their_result_type() -> None:
    responses = TypeAdapter(t.InputResponses).validate_python(
        {
            "a": {"action": "decline"},
            "b": {"roots": []},
            "c": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"},
        }
    )
    assert isinstance(responses["a"], t.ElicitResult)
    assert isinstance(responses["b"], t.ListRootsResult)
    assert isinstance(responses["c"], t.CreateMessageResult)


def test_message_unions_dispatch_on_method() -> None:
    request = TypeAdapter(t.ClientRequest).validate_python(
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}
    )
    assert isinstance(request, t.SetLevelRequest)
    server_request = TypeAdapter(t.ServerRequest).validate_python({"id": 2, "method": "ping"})
    assert isinstance(server_request, t.PingRequest)
    note = TypeAdapter(t.ClientNotification).validate_python({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert isinstance(note, t.InitializedNotification)
    server_note = TypeAdapter(t.ServerNotification).validate_python(
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": "e"},
        }
    )
    assert isinstance(server_note, t.ElicitationCompleteNotification)


@pytest.mark.parametrize(
    ("payload", "model"),
    [
        ({}, t.EmptyResult),
        ({"resultType": "complete"}, t.EmptyResult),
        ({"resultType": "input_required", "requestState": "s"}, t.InputRequiredResult),
        ({"tools": []}, t.ListToolsResult),
        ({"content": []}, t.CallToolResult),
        (
            {
                "protocolVersion": "x",
                "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"},
            },
            t.InitializeResult,
        ),
    ],
)
def test_server_result_union(payload: dict[str, Any], model: type[BaseModel]) -> None:
    assert type(TypeAdapter(t.ServerResult).validate_python(payload)) is model


@pytest.mark.parametrize(
    ("payload", "model"),
    [
        ({}, t.EmptyResult),
        ({"action": "cancel"}, t.ElicitResult),
        ({"roots": []}, t.ListRootsResult),
    ],
)
def test_client_result_union(payload: dict[str, Any], model: type[BaseModel]) -> None:
    assert type(TypeAdapter(t.ClientResult).validate_python(payload)) is model


# --------------------------------------------------------------------------
# Older revisions still parse
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("CallToolResult", {"content": [{"type": "text", "text": "x"}], "isError": False}),
        (
            "ClientCapabilities",
            {"roots": {"listChanged": True}, "sampling": {}, "experimental": {}},
        ),
        ("ClientCapabilities", {"elicitation": {}}),
        ("ServerCapabilities", {"logging": {}, "tasks": {"list": {}}}),
        ("Implementation", {"name": "srv", "version": "0.1"}),
        (
            "ElicitRequest",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "elicitation/create",
                "params": {
                    "message": "who?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "pick": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                        },
                    },
                },
            },
        ),
        ("ElicitResult", {"action": "accept", "content": {"n": 1.5, "ok": True}}),
        (
            "CompleteRequestParams",
            {
                "ref": {"type": "ref/resource", "uri": "file:///{x}"},
                "argument": {"name": "x", "value": ""},
            },
        ),
        ("CancelledNotificationParams", {"requestId": 4}),
        ("ListRootsRequest", {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}),
        ("JSONRPCError", {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m"}}),
        (
            "ToolResultContent",
            {"type": "tool_result", "toolUseId": "u", "content": [], "structuredContent": {"a": 1}},
        ),
    ],
)
def test_older_shapes_round_trip(name: str, payload: dict[str, Any]) -> None:
    assert parse_and_dump(name, payload) == payload


def test_resource_reference_is_the_old_name() -> None:
    assert t.ResourceReference is t.ResourceTemplateReference
    batch = TypeAdapter(t.JSONRPCBatchRequest).validate_python(
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}]
    )
    assert isinstance(batch[0], t.JSONRPCRequest)
    assert isinstance(batch[1], t.JSONRPCNotification)


# --------------------------------------------------------------------------
# Models built in Python match the official schemas
# --------------------------------------------------------------------------

ALL_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def sample_tool() -> t.Tool:
    return t.Tool(
        name="get_weather",
        title="Weather",
        description="Current weather",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        output_schema={"type": "object", "properties": {"temp": {"type": "number"}}},
        annotations=t.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        icons=[t.Icon(src="https://x.example/i.png", mime_type="image/png", sizes=["48x48"])],
        meta={"com.example/owner": "me"},
    )


def all_content() -> list[t.ContentBlock]:
    return [
        t.TextContent(text="hi", annotations=t.Annotations(audience=["user"], priority=0.5)),
        t.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
        t.AudioContent(data="UklGRg==", mime_type="audio/wav"),
        t.ResourceLink(uri="file:///a.txt", name="a.txt", mime_type="text/plain", size=3),
        t.EmbeddedResource(resource=t.TextResourceContents(uri="file:///b", text="b")),
        t.EmbeddedResource(resource=t.BlobResourceContents(uri="file:///c", blob="AAE=")),
    ]


def form_params() -> t.ElicitRequestFormParams:
    return t.ElicitRequestFormParams(
        mode="form",
        message="Who are you?",
        requested_schema=t.ElicitRequestedSchema(
            properties={
                "name": t.StringSchema(title="Name", min_length=1, default="Jo"),
                "email": t.StringSchema(format="email"),
                "age": t.NumberSchema(type="integer", minimum=0, default=30),
                "ok": t.BooleanSchema(default=True),
                "colour": t.UntitledSingleSelectEnumSchema(enum=["red", "blue"], default="red"),
                "size": t.TitledSingleSelectEnumSchema(one_of=[t.TitledEnumOption(const="s", title="Small")]),
                "tags": t.UntitledMultiSelectEnumSchema(items=t.UntitledMultiSelectItems(enum=["a", "b"]), min_items=1),
                "labels": t.TitledMultiSelectEnumSchema(
                    items=t.TitledMultiSelectItems(any_of=[t.TitledEnumOption(const="x", title="X")])
                ),
                "legacy": t.LegacyTitledEnumSchema(enum=["1"], enum_names=["One"]),
            },
            required=["name"],
        ),
    )


def sampling_params() -> t.CreateMessageRequestParams:
    return t.CreateMessageRequestParams(
        messages=[
            t.SamplingMessage(role="user", content=t.TextContent(text="Weather?")),
            t.SamplingMessage(
                role="assistant",
                content=[t.ToolUseContent(id="c1", name="get_weather", input={"city": "Paris"})],
            ),
            t.SamplingMessage(
                role="user",
                content=[t.ToolResultContent(tool_use_id="c1", content=[t.TextContent(text="18C")])],
            ),
        ],
        max_tokens=100,
        model_preferences=t.ModelPreferences(hints=[t.ModelHint(name="claude")], cost_priority=0.2, speed_priority=0.9),
        system_prompt="Be brief.",
        include_context="none",
        temperature=0.3,
        stop_sequences=["\n\n"],
        metadata={"k": "v"},
        tools=[sample_tool()],
        tool_choice=t.ToolChoice(mode="auto"),
    )


@pytest.mark.parametrize("revision", ALL_REVISIONS)
def test_tool_matches_schema(revision: str) -> None:
    validate_definition(revision, "Tool", sample_tool().to_wire())


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
def test_call_tool_result_matches_schema(revision: str) -> None:
    result = t.CallToolResult(content=[*all_content()], structured_content={"temp": 18}, is_error=False)
    validate_definition(revision, "CallToolResult", result.to_wire())


def test_call_tool_result_matches_2026_schema() -> None:
    result = t.CallToolResult(
        content=[t.TextContent(text="hi")],
        structured_content=[{"a": 1}],
        result_type="complete",
        meta={"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
    )
    validate_definition("2026-07-28", "CallToolResult", result.to_wire())
    response = t.CallToolResultResponse(id="r1", result=result)
    validate_definition("2026-07-28", "CallToolResultResponse", response.to_wire())


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26"])
def test_old_call_tool_result_matches_schema(revision: str) -> None:
    result = t.CallToolResult(content=[t.TextContent(text="hi")], is_error=True)
    validate_definition(revision, "CallToolResult", result.to_wire())


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_matches_schema(revision: str) -> None:
    result = t.InitializeResult(
        protocol_version=revision,
        capabilities=t.ServerCapabilities(
            logging={},
            prompts=t.PromptsCapability(list_changed=True),
            resources=t.ResourcesCapability(subscribe=True, list_changed=True),
            tools=t.ToolsCapability(list_changed=False),
            experimental={"x": {}},
        ),
        server_info=t.Implementation(name="srv", version="1.0"),
        instructions="Use the tools.",
    )
    validate_definition(revision, "InitializeResult", result.to_wire())
    request = t.InitializeRequest(
        id=0,
        params=t.InitializeRequestParams(
            protocol_version=revision,
            capabilities=t.ClientCapabilities(
                roots=t.RootsCapability(list_changed=True), sampling=t.SamplingCapability()
            ),
            client_info=t.Implementation(name="cli", version="2.0"),
        ),
    )
    validate_definition(revision, "InitializeRequest", request.to_wire())
    validate_definition(revision, "InitializedNotification", t.InitializedNotification().to_wire())
    validate_definition(revision, "PingRequest", t.PingRequest(id=1).to_wire())


def test_capabilities_match_recent_schemas() -> None:
    client = t.ClientCapabilities(
        roots=t.RootsCapability(),
        sampling=t.SamplingCapability(context={}, tools={}),
        elicitation=t.ElicitationCapability(form={}, url={}),
        extensions={"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}},
    )
    server = t.ServerCapabilities(completions={}, extensions={"io.modelcontextprotocol/tasks": {}})
    for revision in ("2025-11-25", "2026-07-28"):
        validate_definition(revision, "ClientCapabilities", client.to_wire())
        validate_definition(revision, "ServerCapabilities", server.to_wire())


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_elicitation_form_matches_schema(revision: str) -> None:
    validate_definition(revision, "ElicitRequestFormParams", form_params().to_wire())
    url = t.ElicitRequestURLParams(message="Sign in", url="https://x.example/a", elicitation_id="e")
    validate_definition(revision, "ElicitRequestURLParams", url.to_wire())
    result = t.ElicitResult(action="accept", content={"name": "Jo", "age": 30, "tags": ["a"]})
    validate_definition(revision, "ElicitResult", result.to_wire())


def test_elicitation_request_matches_2025_06_18_schema() -> None:
    params = t.ElicitRequestFormParams(
        message="Name?",
        requested_schema=t.ElicitRequestedSchema(
            properties={"name": t.StringSchema(), "n": t.NumberSchema(type="number")}
        ),
    )
    request = t.ElicitRequest(jsonrpc="2.0", id=1, params=params)
    validate_definition("2025-06-18", "ElicitRequest", request.to_wire())


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_sampling_matches_schema(revision: str) -> None:
    validate_definition(revision, "CreateMessageRequestParams", sampling_params().to_wire())
    result = t.CreateMessageResult(
        role="assistant",
        content=[t.ToolUseContent(id="c2", name="get_weather", input={"city": "Rome"})],
        model="m-1",
        stop_reason="toolUse",
    )
    validate_definition(revision, "CreateMessageResult", result.to_wire())


def test_input_required_result_matches_schema() -> None:
    result = t.InputRequiredResult(
        input_requests={
            "who": t.ElicitRequest(params=form_params()),
            "ask": t.CreateMessageRequest(params=sampling_params()),
            "roots": t.ListRootsRequest(),
        },
        request_state="opaque",
    )
    wire = result.to_wire()
    assert wire["resultType"] == "input_required"
    validate_definition("2026-07-28", "InputRequiredResult", wire)
    validate_definition("2026-07-28", "CallToolResultResponse", {"jsonrpc": "2.0", "id": 1, "result": wire})
    retry = t.CallToolRequest(
        id=2,
        params=t.CallToolRequestParams(
            name="t",
            arguments={"a": 1},
            meta=META_2026,
            request_state="opaque",
            input_responses={
                "who": t.ElicitResult(action="accept", content={"name": "Jo"}),
                "ask": t.CreateMessageResult(role="assistant", content=t.TextContent(text="ok"), model="m"),
                "roots": t.ListRootsResult(roots=[t.Root(uri="file:///w", name="w")]),
            },
        ),
    )
    validate_definition("2026-07-28", "CallToolRequest", retry.to_wire())


def test_2026_requests_and_results_match_schema() -> None:
    checks: list[tuple[str, t.WireModel]] = [
        ("DiscoverRequest", t.DiscoverRequest(id=1, params=t.RequestParams(meta=META_2026))),
        (
            "DiscoverResult",
            t.DiscoverResult(
                result_type="complete",
                supported_versions=["2026-07-28"],
                capabilities=t.ServerCapabilities(tools=t.ToolsCapability()),
                ttl_ms=0,
                cache_scope="public",
            ),
        ),
        (
            "ListToolsRequest",
            t.ListToolsRequest(id=2, params=t.PaginatedRequestParams(meta=META_2026, cursor="c")),
        ),
        (
            "ListToolsResultResponse",
            t.ListToolsResultResponse(
                id=2,
                result=t.ListToolsResult(
                    result_type="complete",
                    tools=[sample_tool()],
                    next_cursor="n",
                    ttl_ms=1000,
                    cache_scope="private",
                ),
            ),
        ),
        (
            "ListResourcesResultResponse",
            t.ListResourcesResultResponse(
                id=3,
                result=t.ListResourcesResult(
                    result_type="complete",
                    resources=[t.Resource(uri="file:///r", name="r", size=1)],
                    ttl_ms=5,
                    cache_scope="public",
                ),
            ),
        ),
        (
            "ListResourceTemplatesResultResponse",
            t.ListResourceTemplatesResultResponse(
                id=4,
                result=t.ListResourceTemplatesResult(
                    result_type="complete",
                    resource_templates=[t.ResourceTemplate(uri_template="file:///{p}", name="f")],
                    ttl_ms=5,
                    cache_scope="public",
                ),
            ),
        ),
        (
            "ReadResourceRequest",
            t.ReadResourceRequest(id=5, params=t.ReadResourceRequestParams(uri="file:///r", meta=META_2026)),
        ),
        (
            "ReadResourceResultResponse",
            t.ReadResourceResultResponse(
                id=5,
                result=t.ReadResourceResult(
                    result_type="complete",
                    contents=[
                        t.TextResourceContents(uri="file:///r", text="x", mime_type="text/plain"),
                        t.BlobResourceContents(uri="file:///s", blob="AA=="),
                    ],
                    ttl_ms=0,
                    cache_scope="private",
                ),
            ),
        ),
        (
            "GetPromptRequest",
            t.GetPromptRequest(
                id=6,
                params=t.GetPromptRequestParams(name="p", arguments={"a": "b"}, meta=META_2026),
            ),
        ),
        (
            "GetPromptResultResponse",
            t.GetPromptResultResponse(
                id=6,
                result=t.GetPromptResult(
                    result_type="complete",
                    description="d",
                    messages=[t.PromptMessage(role="user", content=block) for block in all_content()],
                ),
            ),
        ),
        (
            "ListPromptsResultResponse",
            t.ListPromptsResultResponse(
                id=7,
                result=t.ListPromptsResult(
                    result_type="complete",
                    prompts=[
                        t.Prompt(
                            name="p",
                            arguments=[t.PromptArgument(name="a", required=True)],
                        )
                    ],
                    ttl_ms=1,
                    cache_scope="public",
                ),
            ),
        ),
        (
            "CompleteRequest",
            t.CompleteRequest(
                id=8,
                params=t.CompleteRequestParams(
                    meta=META_2026,
                    ref=t.PromptReference(name="p"),
                    argument=t.CompleteArgument(name="a", value="x"),
                    context=t.CompleteContext(arguments={"b": "y"}),
                ),
            ),
        ),
        (
            "CompleteResultResponse",
            t.CompleteResultResponse(
                id=8,
                result=t.CompleteResult(
                    result_type="complete",
                    completion=t.Completion(values=["xa"], total=1, has_more=False),
                ),
            ),
        ),
        (
            "SubscriptionsListenRequest",
            t.SubscriptionsListenRequest(
                id="listen-1",
                params=t.SubscriptionsListenRequestParams(
                    meta=META_2026,
                    notifications=t.SubscriptionFilter(tools_list_changed=True, resource_subscriptions=["file:///r"]),
                ),
            ),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            t.SubscriptionsAcknowledgedNotification(
                params=t.SubscriptionsAcknowledgedNotificationParams(
                    meta={"io.modelcontextprotocol/subscriptionId": "listen-1"},
                    notifications=t.SubscriptionFilter(prompts_list_changed=True),
                )
            ),
        ),
        (
            "SubscriptionsListenResultResponse",
            t.SubscriptionsListenResultResponse(
                id="listen-1",
                result=t.SubscriptionsListenResult(
                    result_type="complete",
                    meta={"io.modelcontextprotocol/subscriptionId": "listen-1"},
                ),
            ),
        ),
        (
            "ResourceUpdatedNotification",
            t.ResourceUpdatedNotification(params=t.ResourceUpdatedNotificationParams(uri="file:///r")),
        ),
        ("ToolListChangedNotification", t.ToolListChangedNotification()),
        ("PromptListChangedNotification", t.PromptListChangedNotification()),
        ("ResourceListChangedNotification", t.ResourceListChangedNotification()),
        (
            "ProgressNotification",
            t.ProgressNotification(
                params=t.ProgressNotificationParams(progress_token="p", progress=1, total=2, message="half")
            ),
        ),
        (
            "LoggingMessageNotification",
            t.LoggingMessageNotification(
                params=t.LoggingMessageNotificationParams(level="info", logger="l", data={"a": 1})
            ),
        ),
        (
            "CancelledNotification",
            t.CancelledNotification(params=t.CancelledNotificationParams(request_id=1, reason="r")),
        ),
        ("ParseError", t.ParseError(message="bad json")),
        ("InvalidRequestError", t.InvalidRequestError(message="bad request")),
        ("MethodNotFoundError", t.MethodNotFoundError(message="no", data={"m": "x"})),
        ("InvalidParamsError", t.InvalidParamsError(message="bad params")),
        ("InternalError", t.InternalError(message="oops")),
        (
            "HeaderMismatchError",
            t.HeaderMismatchError(id=1, error=t.HeaderMismatchErrorObject(message="mismatch")),
        ),
        (
            "MissingRequiredClientCapabilityError",
            t.MissingRequiredClientCapabilityError(
                id=1,
                error=t.MissingRequiredClientCapabilityErrorObject(
                    message="needs sampling",
                    data=t.MissingRequiredClientCapabilityErrorData(
                        required_capabilities=t.ClientCapabilities(sampling=t.SamplingCapability())
                    ),
                ),
            ),
        ),
        (
            "UnsupportedProtocolVersionError",
            t.UnsupportedProtocolVersionError(
                id="x",
                error=t.UnsupportedProtocolVersionErrorObject(
                    message="unsupported",
                    data=t.UnsupportedProtocolVersionErrorData(supported=["2026-07-28"], requested="v999"),
                ),
            ),
        ),
    ]
    for definition, model in checks:
        validate_definition("2026-07-28", definition, model.to_wire())


def test_2025_11_25_only_shapes_match_schema() -> None:
    checks: list[tuple[str, t.WireModel]] = [
        (
            "SetLevelRequest",
            t.SetLevelRequest(id=1, params=t.SetLevelRequestParams(level="warning")),
        ),
        (
            "SubscribeRequest",
            t.SubscribeRequest(id=2, params=t.SubscribeRequestParams(uri="file:///a")),
        ),
        (
            "UnsubscribeRequest",
            t.UnsubscribeRequest(id=3, params=t.UnsubscribeRequestParams(uri="file:///a")),
        ),
        ("RootsListChangedNotification", t.RootsListChangedNotification()),
        (
            "ElicitationCompleteNotification",
            t.ElicitationCompleteNotification(params=t.ElicitationCompleteNotificationParams(elicitation_id="e")),
        ),
        (
            "URLElicitationRequiredError",
            t.URLElicitationRequiredError(
                id=4,
                error=t.URLElicitationRequiredErrorObject(
                    message="visit",
                    data=t.URLElicitationRequiredErrorData(
                        elicitations=[
                            t.ElicitRequestURLParams(message="m", url="https://x.example", elicitation_id="e")
                        ]
                    ),
                ),
            ),
        ),
        (
            "CreateMessageRequest",
            t.CreateMessageRequest(jsonrpc="2.0", id=5, params=sampling_params()),
        ),
        ("ListRootsRequest", t.ListRootsRequest(jsonrpc="2.0", id=6)),
        (
            "CompleteRequest",
            t.CompleteRequest(
                id=7,
                params=t.CompleteRequestParams(
                    ref=t.ResourceTemplateReference(uri="file:///{p}"),
                    argument=t.CompleteArgument(name="p", value=""),
                ),
            ),
        ),
        ("ListToolsResult", t.ListToolsResult(tools=[sample_tool()], next_cursor="n")),
        ("EmptyResult", t.EmptyResult()),
    ]
    for definition, model in checks:
        validate_definition("2025-11-25", definition, model.to_wire())


def test_2024_11_05_complete_request_with_resource_reference() -> None:
    request = t.CompleteRequest(
        id=1,
        params=t.CompleteRequestParams(
            ref=t.ResourceReference(uri="file:///{p}"),
            argument=t.CompleteArgument(name="p", value="a"),
        ),
    )
    validate_definition("2024-11-05", "CompleteRequest", request.to_wire())


def test_results_render_in_notebooks() -> None:
    from mcp_sync import types as t

    class Printer:
        def __init__(self) -> None:
            self.out: list[str] = []

        def text(self, value: str) -> None:
            self.out.append(value)

    results = [
        t.CallToolResult(content=[t.TextContent(text="tool said <hi>")]),
        t.ReadResourceResult(contents=[t.TextResourceContents(uri="memo://x", text="memo <text>")]),
        t.GetPromptResult(messages=[t.PromptMessage(role="user", content=t.TextContent(text="prompt <text>"))]),
    ]
    for result, needle in zip(results, ["tool said", "memo", "prompt"], strict=True):
        html = result._repr_html_()
        assert needle in html and "<hi>" not in html and "&lt;" in html
        printer = Printer()
        result._repr_pretty_(printer, False)
        assert needle in printer.out[0]


@pytest.mark.parametrize("module_name", ["client_features", "server_features", "utilities", "meta"])
def test_the_lazily_loaded_names_are_exactly_each_modules_models(module_name: str) -> None:
    """``protocol.types.ON_DEMAND`` lists every public name of each module it loads on demand (one added there is
    found), ``dir`` shows them, and a name that is nowhere fails as any missing attribute does."""
    import ast
    import importlib

    import mcp_sync.protocol.types as types
    import mcp_sync.types as public

    module = importlib.import_module(f"mcp_sync.protocol.types.{module_name}")
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    defined |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}  # type: ignore[union-attr]
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and not target.id.startswith("_")
    }
    assert defined == types.ON_DEMAND[module_name]
    assert set(dir(types)) >= defined and {"Tool", "WireModel"} <= set(dir(types))
    assert all(getattr(types, name) is getattr(module, name) for name in defined)
    assert all(getattr(public, name) is getattr(module, name) for name in defined)  # mcp_sync.types finds them too
    with pytest.raises(AttributeError, match=r"'mcp_sync\.protocol\.types' has no attribute 'Nope'"):
        _ = types.Nope  # type: ignore[attr-defined]
