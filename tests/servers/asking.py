"""A server whose tools ask the user something (elicitation): a form with every field type, and a URL.

``profile`` asks for a form and answers with what it got, as JSON; ``visit``
asks the user to open a URL (URL mode). ``chatty`` logs at two levels and
reports progress. Served over stdio when run as a script; importable as
``server`` for in-memory use.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_sync import MCPServer
from mcp_sync.types import ElicitRequest, ElicitRequestURLParams

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "as it should be printed", "minLength": 2},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "height": {"type": "number", "title": "Height in metres", "default": 1.7},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "colour": {
            "type": "string",
            "title": "Colour",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age", "colour", "tags"],
}

server = MCPServer("asking")


def profile(args: dict[str, Any], ctx: Any) -> str:
    answer = ctx.elicit("Tell us about yourself", SCHEMA)
    return json.dumps({"action": answer.action, "content": answer.data}, sort_keys=True)


def visit(args: dict[str, Any], ctx: Any) -> str:
    params = ElicitRequestURLParams(message="Sign the form", url="https://example.com/sign", elicitation_id="e1")
    [answer] = ctx.ask_all({"visit": ElicitRequest(params=params)}).values()
    return json.dumps(answer, sort_keys=True)


def chatty(args: dict[str, Any], ctx: Any) -> str:
    ctx.log("debug", "a detail")
    ctx.log("warning", {"disk": "almost full"}, logger="store")
    ctx.progress(1, 2, "half")
    ctx.progress(2, 2, "all")
    return "done"


server.register_tool("profile", profile)
server.register_tool("visit", visit)
server.register_tool("chatty", chatty)

if __name__ == "__main__":
    server.serve_stdio()
