"""Tools for Anthropic's Messages API, the ``tool_use`` blocks its models send, and the ``tool_result`` answer.

Plain dicts, exactly as ``client.messages.create(tools=..., messages=...)``
takes them: no ``anthropic`` import here. A ``tool_result`` holds text,
images (PNG, JPEG, GIF, WebP) and documents (PDF), and says a failure with
``is_error``; audio and other files are described in words.

>>> definitions([])
([], {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..protocol.types import CallToolResult
from .content import IMAGE_TYPES, Asked, Media, pieces, stand_in
from .schemas import convert_each, plain_object

if TYPE_CHECKING:
    from .toolbox import ModelTool

__all__ = ["answers", "definitions", "read_calls"]


def definitions(tools: Sequence[ModelTool]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The definitions of ``tools`` for ``messages.create(tools=...)``; the tools left out, by name, and why."""
    converted, problems = convert_each(tools, plain_object)
    return [
        {"name": tool.name, "description": tool.description, "input_schema": schema} for tool, schema in converted
    ], problems


def read_calls(response: Any) -> list[Asked] | None:
    """The ``tool_use`` calls of a plain (dumped) ``Message`` or list of its content blocks; ``None`` if neither."""
    if isinstance(response, Mapping):
        if response.get("type") != "message" or not isinstance(response.get("content"), list):
            return None
        blocks = response["content"]
    elif any(isinstance(block, Mapping) and block.get("type") == "tool_use" for block in response):
        blocks = response
    else:
        return None
    return [
        (block.get("name", ""), block.get("input"), block.get("id"))
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
    ]


def answers(asked: Sequence[Asked], results: Sequence[CallToolResult]) -> list[dict[str, Any]]:
    """One user message whose content is a ``tool_result`` block for each call (none without calls)."""
    if not asked:
        return []
    blocks = []
    for (_, _, call_id), result in zip(asked, results, strict=True):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id or "", "content": _content(result)}
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    return [{"role": "user", "content": blocks}]


def _content(result: CallToolResult) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for piece in pieces(result):
        if isinstance(piece, str):
            content.append({"type": "text", "text": piece})
        elif piece.kind != "audio" and piece.mime_type in IMAGE_TYPES:
            content.append({"type": "image", "source": _base64(piece)})
        elif piece.kind == "file" and piece.mime_type == "application/pdf":
            content.append(
                {"type": "document", "source": _base64(piece), **({"title": piece.uri} if piece.uri else {})}
            )
        else:
            content.append({"type": "text", "text": stand_in(piece)})
    return content


def _base64(piece: Media) -> dict[str, Any]:
    return {"type": "base64", "media_type": piece.mime_type, "data": piece.data}
