"""The server that the official MCP conformance suite tests: every tool, resource and prompt it asks for.

Run it, then point the suite at it::

    python examples/conformance_server.py --port 3001
    npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp   # needs Node >= 22

It serves Streamable HTTP on ``http://HOST:PORT/mcp`` until interrupted,
to clients of the handshake revisions (up to 2025-11-25) and of the stateless
revision 2026-07-28 alike (``conformance server --url ... --requirements
2026-07-28`` with harness 0.2.0-alpha.12 or later).

Besides being a test fixture, it is a tour of :class:`mcp_sync.MCPServer`:
plain functions registered as tools, resources, a resource template and
prompts; content of every kind; log messages and progress sent during a
call; questions for the client (sampling, elicitation, roots) from inside a
tool, written once for both eras (a request to the client in the handshake
era, an ``InputRequiredResult`` round in 2026-07-28); argument completion; a
resource that clients may subscribe to; lists that change while clients
listen; a tool argument mirrored into an HTTP header (``x-mcp-header``); and
the Agent Skills under ``examples/skills`` with the skills extension.

Several processes may serve the same clients behind a load balancer: give
them one secret in ``MCP_SYNC_REQUEST_STATE_SECRET``, so that each accepts the
``requestState`` the others sealed.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

from mcp_sync import Context, MCPServer
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.server import Elicited
from mcp_sync.types import (
    AudioContent,
    CallToolResult,
    CompleteRequestParams,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    ImageContent,
    ListRootsRequest,
    PromptArgument,
    PromptMessage,
    RequestParams,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

SKILLS = Path(__file__).resolve().parent / "skills"
"""The Agent Skills served with the skills extension (``io.modelcontextprotocol/skills``)."""
SECRET_VARIABLE = "MCP_SYNC_REQUEST_STATE_SECRET"
"""The environment variable holding the secret that signs ``requestState`` (shared by every process)."""

# A 1x1 PNG and a tiny WAV file, base64-encoded.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def string_arguments(*names: str, description: str) -> dict[str, Any]:
    """The input schema of a tool taking the required string arguments ``names``."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description} for name in names},
        "required": list(names),
    }


# ------------------------------------------------------------------ content


def simple_text(arguments: dict[str, Any], ctx: Context) -> str:
    # A plain string becomes one text content block.
    return "This is a simple text response for testing."


def image_content(arguments: dict[str, Any], ctx: Context) -> ImageContent:
    return ImageContent(data=PNG, mime_type="image/png")


def audio_content(arguments: dict[str, Any], ctx: Context) -> AudioContent:
    return AudioContent(data=WAV, mime_type="audio/wav")


def embedded_resource(arguments: dict[str, Any], ctx: Context) -> EmbeddedResource:
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
    )


def multiple_content_types(arguments: dict[str, Any], ctx: Context) -> list[Any]:
    # A list may mix content blocks; wire-shaped dicts are accepted as well as models.
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG, mime_type="image/png"),
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            },
        },
    ]


def error_handling(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
    # A tool reports failure in its result (isError), not as a protocol error.
    # Raising an exception in a handler gives the same kind of result.
    return CallToolResult(
        content=[TextContent(text="This tool intentionally returns an error for testing")], is_error=True
    )


# ------------------------------------------------- talking back during a call


def tool_with_logging(arguments: dict[str, Any], ctx: Context) -> str:
    # Each message goes to the client if its level reaches the one the client set.
    ctx.log("info", "Tool execution started")
    time.sleep(0.05)
    ctx.log("info", "Tool processing data")
    time.sleep(0.05)
    ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


def tool_with_progress(arguments: dict[str, Any], ctx: Context) -> str:
    # Sent only when the caller gave a progress token; the token is echoed for us.
    ctx.progress(0, 100, "Starting")
    time.sleep(0.05)
    ctx.progress(50, 100, "Halfway")
    time.sleep(0.05)
    ctx.progress(100, 100, "Done")
    return "Tool with progress executed successfully"


def sampling(arguments: dict[str, Any], ctx: Context) -> str:
    # Ask the client's model for a completion while the tool call is open.
    reply = ctx.sample(arguments["prompt"], max_tokens=100)
    blocks = reply.content if isinstance(reply.content, list) else [reply.content]
    text = " ".join(block.text for block in blocks if isinstance(block, TextContent))
    return f"LLM response: {text}"


def elicit(ctx: Context, message: str, properties: dict[str, Any], required: list[str]) -> str:
    """Ask the user, through the client, to fill in a form (a flat object schema); describe the answer."""
    schema = {"type": "object", "properties": properties, "required": required}
    answer: Elicited[dict[str, Any]] = ctx.elicit(message, schema)
    return f"User response: action={answer.action}, content={json.dumps(answer.data)}"


def elicitation(arguments: dict[str, Any], ctx: Context) -> str:
    properties = {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    }
    return elicit(ctx, arguments["message"], properties, ["username", "email"])


def elicitation_defaults(arguments: dict[str, Any], ctx: Context) -> str:
    # SEP-1034: every kind of field may carry a default for the client to prefill.
    properties = {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    }
    return elicit(ctx, "Please review and update the form fields with defaults", properties, [])


def elicitation_enums(arguments: dict[str, Any], ctx: Context) -> str:
    # SEP-1330: the five shapes of a choice field.
    properties = {
        "untitledSingle": {
            "type": "string",
            "description": "Choose an option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Choose a titled option",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Choose a legacy option",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Choose several options",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Choose several titled options",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    }
    return elicit(ctx, "Please select options from the enum fields", properties, [])


def reconnection(arguments: dict[str, Any], ctx: Context) -> str:
    # The suite's (pending, unscored) SSE polling scenario would like the
    # server to close the response stream before the result and replay the
    # result when the client reconnects; here the call simply takes a moment
    # and is answered like any other.
    time.sleep(0.1)
    return "Reconnection test completed successfully"


def schema_2020_12(arguments: dict[str, Any], ctx: Context) -> str:
    return f"Received: {json.dumps(arguments, sort_keys=True)}"


SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "address",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
    "if": {"properties": {"name": {"const": "anonymous"}}},
    "then": {"required": ["address"]},
    "else": {"required": ["name"]},
    "additionalProperties": False,
}


# ---------------------------------------------- questions for the client (MRTR)
#
# In 2026-07-28 a tool does not send requests to the client: ``ctx.elicit``,
# ``ctx.sample`` and ``ctx.list_roots`` end the call with an
# InputRequiredResult the first time, and the client calls again with the
# answers under the same ``key``; the tool then runs from the start and gets
# them. In the handshake era the same calls send requests to the client.


def name_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def answered(answer: Elicited[dict[str, Any]], field: str) -> str:
    """The text of ``field`` in an accepted answer, or what the user did instead."""
    if answer.accepted and answer.data is not None:
        return str(answer.data.get(field, ""))
    return f"({answer.action})"


def text_of(reply: Any) -> str:
    blocks = reply.content if isinstance(reply.content, list) else [reply.content]
    return " ".join(block.text for block in blocks if isinstance(block, TextContent))


def ask_name(arguments: dict[str, Any], ctx: Context) -> str:
    answer: Elicited[dict[str, Any]] = ctx.elicit("What is your name?", name_schema(), key="user_name")
    return f"Hello, {answered(answer, 'name')}!"


def ask_model(arguments: dict[str, Any], ctx: Context) -> str:
    reply = ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"The model said: {text_of(reply)}"


def ask_roots(arguments: dict[str, Any], ctx: Context) -> str:
    roots = ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


def ask_with_state(arguments: dict[str, Any], ctx: Context) -> str:
    # The answers of earlier rounds travel in requestState, signed by the server.
    ctx.elicit(
        "Please confirm to continue", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="confirm"
    )
    return "state-ok"


def ask_everything(arguments: dict[str, Any], ctx: Context) -> str:
    # Several questions in one round: the client answers them all before calling again.
    answers = ctx.ask_all(
        {
            "user_name": ElicitRequest(
                params=ElicitRequestFormParams(message="What is your name?", requested_schema=name_schema())
            ),
            "greeting": CreateMessageRequest(
                params=CreateMessageRequestParams(
                    messages=[SamplingMessage(role="user", content=TextContent(text="Write a greeting"))],
                    max_tokens=50,
                )
            ),
            "client_roots": ListRootsRequest(params=RequestParams()),
        }
    )
    return f"Received {len(answers)} answers: {', '.join(sorted(answers))}"


def ask_twice(arguments: dict[str, Any], ctx: Context) -> str:
    # Two rounds: the second question is asked only once the first is answered.
    name = ctx.elicit("What is your name?", name_schema(), key="user_name")
    color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    color = ctx.elicit("What is your favorite color?", color_schema, key="favorite_color")
    return f"{answered(name, 'name')} likes {answered(color, 'color')}"


def ask_what_the_client_can(arguments: dict[str, Any], ctx: Context) -> str:
    # Only what the client declared it can answer is asked.
    capabilities = ctx.client_capabilities
    questions: dict[str, CreateMessageRequest | ElicitRequest | ListRootsRequest] = {}
    if capabilities.sampling is not None:
        questions["capability_sample"] = CreateMessageRequest(
            params=CreateMessageRequestParams(
                messages=[SamplingMessage(role="user", content=TextContent(text="Say hello"))], max_tokens=20
            )
        )
    if capabilities.elicitation is not None:
        questions["capability_elicit"] = ElicitRequest(
            params=ElicitRequestFormParams(message="What is your name?", requested_schema=name_schema())
        )
    if capabilities.roots is not None:
        questions["capability_roots"] = ListRootsRequest(params=RequestParams())
    answers = ctx.ask_all(questions)
    return f"Asked for: {', '.join(sorted(answers)) or 'nothing the client can answer'}"


def needs_sampling(arguments: dict[str, Any], ctx: Context) -> str:
    # Without the sampling capability the call fails with -32021 (2026-07-28).
    reply = ctx.sample("Say something", max_tokens=20, key="sample")
    return f"The model said: {text_of(reply)}"


def streaming_elicitation(arguments: dict[str, Any], ctx: Context) -> str:
    # Progress (when asked for) goes on the call's stream; the question never does: it is asked by the result.
    ctx.progress(0, 1, "Preparing a question")
    answer: Elicited[dict[str, Any]] = ctx.elicit("What is your name?", name_schema(), key="user_name")
    ctx.progress(1, 1, "Answered")
    return f"Hello, {answered(answer, 'name')}!"


def logging_tool(arguments: dict[str, Any], ctx: Context) -> str:
    # A 2026-07-28 request gets log messages only when its _meta names a log level.
    ctx.log("info", "Logging tool started")
    ctx.log("debug", "Logging tool details")
    ctx.log("info", "Logging tool finished")
    return "Logged three messages"


def prompt_needing_context(arguments: dict[str, str], ctx: Context) -> str:
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer: Elicited[dict[str, Any]] = ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Write an answer that takes this context into account: {answered(answer, 'context')}"


def region(arguments: dict[str, Any], ctx: Context) -> str:
    return f"Region: {arguments['region']}"


REGION_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "Where to run; mirrored into Mcp-Param-Region",
            "x-mcp-header": "Region",
        }
    },
    "required": ["region"],
}


class ListChanges:
    """Tools that change the server's tool and prompt lists, so that listening clients are told."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._lock = threading.Lock()

    def toggle_tool(self, arguments: dict[str, Any], ctx: Context) -> str:
        with self._lock:
            if any(tool.name == "test_dynamic_tool" for tool in self.server.list_tools()):
                self.server.unregister_tool("test_dynamic_tool")
                return "Removed test_dynamic_tool"
            self.server.register_tool(
                "test_dynamic_tool", simple_text, description="Comes and goes", input_schema=NO_ARGUMENTS
            )
            return "Added test_dynamic_tool"

    def toggle_prompt(self, arguments: dict[str, Any], ctx: Context) -> str:
        with self._lock:
            if any(prompt.name == "test_dynamic_prompt" for prompt in self.server.list_prompts()):
                self.server.unregister_prompt("test_dynamic_prompt")
                return "Removed test_dynamic_prompt"
            self.server.register_prompt("test_dynamic_prompt", simple_prompt, description="Comes and goes")
            return "Added test_dynamic_prompt"


# ---------------------------------------------------------------- resources


class WatchedResource:
    """A text resource that changes when asked to; subscribed clients are told."""

    URI = "test://watched-resource"

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.text = "Watched resource content"
        self._lock = threading.Lock()

    def read(self, uri: str, ctx: Context) -> str:
        with self._lock:
            return self.text

    def update(self, arguments: dict[str, Any], ctx: Context) -> str:
        """A tool: change the text, then notify the subscribers of the URI."""
        with self._lock:
            self.text = arguments.get("content") or f"Watched resource content, updated at {time.time():.3f}"
        self.server.mark_resource_updated(self.URI)
        return f"Updated {self.URI}"


def template_data(uri: str, params: dict[str, str], ctx: Context) -> str:
    # The template's parameters are read from the URI: {id} in test://template/{id}/data.
    item = params["id"]
    return json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"}, separators=(",", ":"))


# ------------------------------------------------------------------ prompts


def simple_prompt(arguments: dict[str, str], ctx: Context) -> str:
    # A string becomes one user message.
    return "This is a simple prompt for testing."


def prompt_with_arguments(arguments: dict[str, str], ctx: Context) -> str:
    return f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"


def prompt_with_embedded_resource(arguments: dict[str, str], ctx: Context) -> list[PromptMessage]:
    resource = TextResourceContents(
        uri=arguments["resourceUri"], mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        PromptMessage(role="user", content=EmbeddedResource(resource=resource)),
        PromptMessage(role="user", content=TextContent(text="Please process the embedded resource above.")),
    ]


def prompt_with_image(arguments: dict[str, str], ctx: Context) -> list[PromptMessage]:
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG, mime_type="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


# --------------------------------------------------------------- completion

SUGGESTIONS: dict[tuple[str, str], list[str]] = {
    ("test_prompt_with_arguments", "arg1"): ["test-value-1", "test-value-2", "another-value"],
    ("test_prompt_with_arguments", "arg2"): ["test-value-a", "test-value-b"],
    ("test://template/{id}/data", "id"): ["1", "2", "3", "123"],
}


def complete(params: CompleteRequestParams, ctx: Context) -> list[str]:
    """Suggestions for a prompt's or the template's argument that start with what was typed."""
    ref = params.ref
    target = ref.uri if isinstance(ref, ResourceTemplateReference) else ref.name
    candidates = SUGGESTIONS.get((target, params.argument.name), [])
    return [value for value in candidates if value.startswith(params.argument.value)]


# ------------------------------------------------------------------- server


# ----------------------------------------------------------------------------
# Tools that run as tasks (the tasks extension, SEP-2663): the server decides per call.


def greet(arguments: dict[str, Any], ctx: Context) -> str:
    return f"Hello, {arguments.get('name', 'World')}!"


def slow_compute(arguments: dict[str, Any], ctx: Context) -> str:
    """Works for ``seconds`` seconds, unless the task is cancelled first (then it settles as cancelled)."""
    seconds = float(arguments.get("seconds", 1))
    ctx.cancelled.wait(seconds)
    return f"computed {arguments.get('label', '')} in {seconds:g}s"


def failing_job(arguments: dict[str, Any], ctx: Context) -> str:
    ctx.cancelled.wait(1.0)
    raise RuntimeError("the job failed")  # a tool error: the task completes, with isError


def protocol_error_job(arguments: dict[str, Any], ctx: Context) -> str:
    raise MCPError(MCP_CODES.INTERNAL_ERROR, "the job broke down")  # a protocol error: the task fails


def confirm_delete(arguments: dict[str, Any], ctx: Context) -> str:
    schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
    answer = ctx.elicit(f"Delete {arguments.get('filename')}?", schema)
    confirmed = answer.accepted and bool((answer.data or {}).get("confirm"))
    return f"{'Deleted' if confirmed else 'Kept'} {arguments.get('filename')}"


def multi_input(arguments: dict[str, Any], ctx: Context) -> str:
    """Asks two questions at once, so that both wait in the task together."""
    question = ElicitRequestFormParams(message="Your name?", requested_schema=name_schema())
    answers = ctx.ask_all({"first": ElicitRequest(params=question), "second": ElicitRequest(params=question)})
    return f"answered: {', '.join(key for key in ('first', 'second') if answers[key].get('action') == 'accept')}"


def ask_user_name(arguments: dict[str, Any], ctx: Context) -> None:
    """Before the task starts: the user's name, in an inputRequests round of the call itself."""
    ctx.elicit("Your name?", name_schema(), key="user_name")


def greet_later(arguments: dict[str, Any], ctx: Context) -> str:
    """In the task: the name gathered before it started (asked again under its key, answered at once)."""
    return f"Hello, {answered(ctx.elicit('Your name?', name_schema(), key='user_name'), 'name')}!"


TASK_TOOLS: list[tuple[str, Any, str, Literal["forbidden", "optional", "required"], dict[str, Any]]] = [
    ("greet", greet, "Greets by name (never a task)", "forbidden", string_arguments("name", description="Who")),
    (
        "slow_compute",
        slow_compute,
        "Works for some seconds (as a task when the client can follow one)",
        "optional",
        {
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
        },
    ),
    ("failing_job", failing_job, "Fails with a tool error after a second (only as a task)", "required", NO_ARGUMENTS),
    ("protocol_error_job", protocol_error_job, "Fails with a protocol error", "optional", NO_ARGUMENTS),
    (
        "confirm_delete",
        confirm_delete,
        "Asks for a confirmation, then deletes",
        "optional",
        {"type": "object", "properties": {"filename": {"type": "string"}}},
    ),
    ("multi_input", multi_input, "Asks two questions at once", "optional", NO_ARGUMENTS),
]


def build_server() -> MCPServer:
    """An MCPServer with everything the conformance suite's server scenarios use."""
    secret = os.environ.get(SECRET_VARIABLE)
    server = MCPServer("mcp-sync-conformance-server", "1.0.0", request_state_secret=secret.encode() if secret else None)

    tools = [
        ("test_simple_text", simple_text, "Returns a simple text response"),
        ("test_image_content", image_content, "Returns an image (a 1x1 PNG)"),
        ("test_audio_content", audio_content, "Returns an audio clip (a tiny WAV)"),
        ("test_embedded_resource", embedded_resource, "Returns an embedded text resource"),
        ("test_multiple_content_types", multiple_content_types, "Returns text, an image and a resource together"),
        ("test_tool_with_logging", tool_with_logging, "Sends three log messages while it runs"),
        ("test_tool_with_progress", tool_with_progress, "Reports progress three times while it runs"),
        ("test_error_handling", error_handling, "Always fails, with an error result"),
        ("test_elicitation_sep1034_defaults", elicitation_defaults, "Asks the user for fields that have defaults"),
        ("test_elicitation_sep1330_enums", elicitation_enums, "Asks the user to choose from enums of every kind"),
        ("test_reconnection", reconnection, "Takes a moment, for the SSE reconnection scenario"),
        ("test_input_required_result_elicitation", ask_name, "Asks the user's name, then greets"),
        ("test_input_required_result_sampling", ask_model, "Asks the client's model a question"),
        ("test_input_required_result_list_roots", ask_roots, "Asks the client for its roots"),
        ("test_input_required_result_request_state", ask_with_state, "Asks for a confirmation; keeps state"),
        ("test_input_required_result_multiple_inputs", ask_everything, "Asks three questions in one round"),
        ("test_input_required_result_multi_round", ask_twice, "Asks two questions, one round each"),
        ("test_input_required_result_tampered_state", ask_with_state, "Refuses request state that was altered"),
        ("test_input_required_result_capabilities", ask_what_the_client_can, "Asks only what the client can answer"),
        ("test_missing_capability", needs_sampling, "Needs the client's sampling capability"),
        ("test_streaming_elicitation", streaming_elicitation, "Reports progress, then asks the user's name"),
        ("test_logging_tool", logging_tool, "Sends log messages at the level the request asks for"),
    ]
    for name, handler, description in tools:
        server.register_tool(name, handler, description=description, input_schema=NO_ARGUMENTS)
    server.register_tool(
        "test_sampling",
        sampling,
        description="Asks the client's model to answer a prompt",
        input_schema=string_arguments("prompt", description="The prompt to send to the model"),
    )
    server.register_tool(
        "test_elicitation",
        elicitation,
        description="Asks the user for a username and an email address",
        input_schema=string_arguments("message", description="The message shown to the user"),
    )
    server.register_tool(
        "test_x_mcp_header",
        region,
        description="Takes a region that clients also send as the header Mcp-Param-Region",
        input_schema=REGION_SCHEMA,
    )
    changes = ListChanges(server)
    server.register_tool(
        "test_trigger_tool_change",
        changes.toggle_tool,
        description="Adds or removes a tool, so that the tool list changes",
        input_schema=NO_ARGUMENTS,
    )
    server.register_tool(
        "test_trigger_prompt_change",
        changes.toggle_prompt,
        description="Adds or removes a prompt, so that the prompt list changes",
        input_schema=NO_ARGUMENTS,
    )
    server.register_tool(
        "json_schema_2020_12_tool",
        schema_2020_12,
        description="Has an input schema that uses JSON Schema 2020-12 features",
        input_schema=SCHEMA_2020_12,
    )

    server.register_resource(
        "test://static-text",
        lambda uri, ctx: "This is the content of the static text resource.",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    )
    server.register_resource(
        "test://static-binary",
        lambda uri, ctx: base64.b64decode(PNG),  # bytes are sent as a base64 blob
        name="static-binary",
        description="A static binary resource (a 1x1 PNG)",
        mime_type="image/png",
    )
    server.register_resource_template(
        "test://template/{id}/data",
        template_data,
        name="template-data",
        description="JSON data for any id",
        mime_type="application/json",
    )
    watched = WatchedResource(server)
    server.register_resource(
        WatchedResource.URI,
        watched.read,
        name="watched-resource",
        description="A resource to subscribe to; test_update_watched_resource changes it",
        mime_type="text/plain",
    )
    server.register_tool(
        "test_update_watched_resource",
        watched.update,
        description="Changes the watched resource and notifies its subscribers",
        input_schema={"type": "object", "properties": {"content": {"type": "string", "description": "New text"}}},
    )

    server.register_prompt("test_simple_prompt", simple_prompt, description="A prompt without arguments")
    server.register_prompt(
        "test_prompt_with_arguments",
        prompt_with_arguments,
        description="A prompt with two required arguments",
        arguments=[
            PromptArgument(name="arg1", description="First argument", required=True),
            PromptArgument(name="arg2", description="Second argument", required=True),
        ],
    )
    server.register_prompt(
        "test_prompt_with_embedded_resource",
        prompt_with_embedded_resource,
        description="A prompt that embeds a resource",
        arguments=[PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    )
    server.register_prompt("test_prompt_with_image", prompt_with_image, description="A prompt that holds an image")
    server.register_prompt(
        "test_input_required_result_prompt",
        prompt_needing_context,
        description="A prompt that first asks the user for context",
    )

    for name, handler, description, task, schema in TASK_TOOLS:
        server.register_tool(name, handler, description=description, input_schema=schema, task=task)
    server.register_tool(
        "test_tool_with_task",
        greet_later,
        description="Asks the user's name on the call, then greets as a task",
        input_schema=NO_ARGUMENTS,
        task="required",
        before_task=ask_user_name,
    )

    # The skills extension (SEP-2640): skills/list, skills/get and each skill's files as skill:// resources.
    server.add_skills(SKILLS)

    server.set_completion_provider(complete)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3001, help="port to listen on (default: 3001)")
    parser.add_argument("--verbose", action="store_true", help="log every connection and dropped message")
    options = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if options.verbose else logging.INFO, format="%(asctime)s %(name)s %(message)s"
    )

    from mcp_sync import serve_http

    # Blocks until interrupted (Ctrl-C, SIGINT), then closes every session.
    serve_http(build_server(), options.host, options.port)


if __name__ == "__main__":
    main()
