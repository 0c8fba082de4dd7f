"""A server whose tools return every kind of content, for the tests of each provider's formats."""

from __future__ import annotations

import base64
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.protocol.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-a-picture").decode()
WAV = base64.b64encode(b"RIFF-a-sound").decode()
PDF = base64.b64encode(b"%PDF-1.7 a document").decode()
ZIP = base64.b64encode(b"PK\x03\x04 an archive").decode()

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "Where"},
        "unit": {"type": "string", "enum": ["c", "f"]},
    },
    "required": ["city"],
}


def kitchen() -> MCPServer:
    """``weather`` (text), ``chart`` (text, image, audio), ``report`` (resources), ``stats`` (structured only),
    ``both`` (text and structured), ``fails`` (an error), ``empty`` (nothing)."""
    server = MCPServer("kitchen")

    def weather(args: dict[str, Any], ctx: Any) -> str:
        return f"sunny in {args['city']}" + (f" ({args['unit']})" if "unit" in args else "")

    server.register_tool(
        "weather", weather, description="The weather in a city.", title="Weather", input_schema=WEATHER_SCHEMA
    )
    server.register_tool(
        "chart",
        lambda args, ctx: CallToolResult(
            content=[
                TextContent(text="the chart:"),
                ImageContent(data=PNG, mime_type="image/png"),
                AudioContent(data=WAV, mime_type="audio/wav"),
            ]
        ),
    )
    server.register_tool(
        "report",
        lambda args, ctx: CallToolResult(
            content=[
                EmbeddedResource(
                    resource=TextResourceContents(uri="file:///notes.md", mime_type="text/markdown", text="# Notes")
                ),
                EmbeddedResource(
                    resource=BlobResourceContents(uri="file:///report.pdf", mime_type="application/pdf", blob=PDF)
                ),
                EmbeddedResource(resource=BlobResourceContents(uri="file:///pic.png", mime_type="image/png", blob=PNG)),
                EmbeddedResource(resource=BlobResourceContents(uri="file:///all.zip", blob=ZIP)),
                ResourceLink(uri="file:///big.csv", name="big.csv", mime_type="text/csv", description="All rows"),
            ]
        ),
    )
    server.register_tool(
        "stats", lambda args, ctx: CallToolResult(content=[], structured_content={"mean": 2.5, "n": 4})
    )
    server.register_tool(
        "both",
        lambda args, ctx: CallToolResult(content=[TextContent(text='{"n": 4}')], structured_content={"n": 4}),
    )
    server.register_tool(
        "fails", lambda args, ctx: CallToolResult(content=[TextContent(text="no such city")], is_error=True)
    )
    server.register_tool("empty", lambda args, ctx: CallToolResult(content=[TextContent(text="")]))
    return server
