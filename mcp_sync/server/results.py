"""What handlers return, as results: the normalising of tool, resource and prompt values, and paging.

A tool handler may return a string, content blocks or a ``CallToolResult``;
a resource handler text, bytes or contents; a prompt handler a string or
messages. These functions turn each into its result model, for
:class:`~mcp_sync.server.registry.ServerRegistry`.

>>> tool_result("done").content[0].text
'done'
>>> paginate(["a", "b", "c"], None, 2)
(['a', 'b'], 'Mg==')
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import WireModel

if TYPE_CHECKING:
    from ..protocol.types import (
        BlobResourceContents,
        CallToolResult,
        CompleteResult,
        ContentBlock,
        GetPromptResult,
        ReadResourceResult,
        TextResourceContents,
    )

__all__ = [
    "decorated_resource_value",
    "paginate",
    "prompt_result",
    "resource_result",
    "to_complete_result",
    "tool_result",
]


@functools.cache
def _content_adapter() -> TypeAdapter[ContentBlock]:
    """Built on first use: a server that never normalises content blocks does not pay for it at import."""
    return TypeAdapter(models.ContentBlock)


_M = TypeVar("_M", bound=BaseModel)


def tool_result(value: Any) -> CallToolResult:
    """Normalise what a tool handler returned into a CallToolResult."""
    if isinstance(value, models.CallToolResult):
        return value
    if value is None:
        return models.CallToolResult(content=[])
    if isinstance(value, str):
        return models.CallToolResult(content=[models.TextContent(text=value)])
    if isinstance(value, (WireModel, Mapping)):
        value = [value]
    return models.CallToolResult(
        content=[_content_adapter().validate_python(v.to_wire() if isinstance(v, WireModel) else v) for v in value]
    )


def resource_result(uri: str, mime_type: str | None, value: Any) -> ReadResourceResult:
    """Normalise what a resource handler returned into a ReadResourceResult."""
    if isinstance(value, models.ReadResourceResult):
        return value
    if isinstance(value, (str, bytes, Mapping, models.TextResourceContents, models.BlobResourceContents)):
        value = [value]
    contents: list[TextResourceContents | BlobResourceContents] = []
    for item in value:
        if isinstance(item, str):
            contents.append(models.TextResourceContents(uri=uri, mime_type=mime_type, text=item))
        elif isinstance(item, bytes):
            blob = base64.b64encode(item).decode("ascii")
            contents.append(models.BlobResourceContents(uri=uri, mime_type=mime_type, blob=blob))
        else:
            contents.append(item)
    return models.ReadResourceResult(contents=contents)


def prompt_result(value: Any, description: str | None) -> GetPromptResult:
    """Normalise what a prompt handler returned into a GetPromptResult (a string is one user message)."""
    if isinstance(value, models.GetPromptResult):
        return value
    if isinstance(value, str):
        value = models.PromptMessage(role="user", content=models.TextContent(text=value))
    if isinstance(value, models.PromptMessage):
        value = [value]
    messages = [
        models.PromptMessage(role="user", content=models.TextContent(text=item)) if isinstance(item, str) else item
        for item in value
    ]
    return models.GetPromptResult(description=description, messages=messages)


def decorated_resource_value(value: Any) -> Any:
    """What a decorated resource function returned, as contents: JSON for plain data."""
    if isinstance(
        value, (str, bytes, models.ReadResourceResult, models.TextResourceContents, models.BlobResourceContents)
    ):
        return value
    if isinstance(value, list) and all(
        isinstance(v, (models.TextResourceContents, models.BlobResourceContents)) for v in value
    ):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False)


def paginate(items: Sequence[_M], cursor: str | None, size: int | None) -> tuple[list[_M], str | None]:
    """One page of ``items`` from ``cursor``, and the cursor of the next page (``size=None``: all from there).

    >>> paginate(["a", "b", "c"], None, 2)
    (['a', 'b'], 'Mg==')
    >>> paginate(["a", "b", "c"], "Mg==", 2)
    (['c'], None)
    """
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii"))
        except (ValueError, UnicodeError):
            start = -1
        if start < 0:
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    if size is None:
        return list(items[start:]), None
    end = start + size
    next_cursor = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
    return list(items[start:end]), next_cursor


def to_complete_result(value: CompleteResult | Iterable[str]) -> CompleteResult:
    """What a completer or completion provider returned, as a result (at most 100 values, as the spec allows).

    >>> to_complete_result(["a", "b"]).completion.values
    ['a', 'b']
    """
    if isinstance(value, models.CompleteResult):
        return value
    values = list(value)
    return models.CompleteResult(
        completion=models.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
    )
