"""The server that the official MCP conformance suite tests: every tool, resource and prompt it asks for.

Run it, then point the suite at it::

    python examples/conformance_server.py --port 3001
    npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp   # needs Node >= 22

It serves Streamable HTTP on ``http://HOST:PORT/mcp`` until interrupted.
Besides being a test fixture, it is a tour of :class:`mcp_sync.MCPServer`:
plain functions registered as tools, resources, a resource template and
prompts; content of every kind; log messages and progress sent during a
call; requests to the client (sampling and elicitation) from inside a tool;
argument completion; and a resource that clients may subscribe to.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import threading
import time
from typing import Any

from mcp_sync import Context, MCPServer
from mcp_sync.context import Elicited
from mcp_sync.types import (
    AudioContent,
    CallToolResult,
    CompleteRequestParams,
    EmbeddedResource,
    ImageContent,
    PromptArgument,
    PromptMessage,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

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
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


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


def build_server() -> MCPServer:
    """An MCPServer with everything the conformance suite's server scenarios use."""
    server = MCPServer("mcp-sync-conformance-server", "1.0.0")

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

    from mcp_sync.http_server import serve_http

    # Blocks until interrupted (Ctrl-C, SIGINT), then closes every session.
    serve_http(build_server(), options.host, options.port)


if __name__ == "__main__":
    main()
