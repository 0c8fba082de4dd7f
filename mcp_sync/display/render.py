"""How results look: tool results, resource contents, prompts and tool lists as HTML and as plain text.

The ``*_html`` functions render for Jupyter, the ``*_text`` functions for
IPython's terminal and the ``mcp-sync`` command. The progress bar of
``client.call_tool(..., progress=True)`` is :mod:`~mcp_sync.display.progress`'s;
registering these renderings with a running IPython is
:mod:`~mcp_sync.display.ipython`'s, which :func:`mcp_sync.connect` calls by
itself (``%load_ext mcp_sync`` by hand).

>>> from mcp_sync.types import CallToolResult, TextContent
>>> print(call_tool_result_text(CallToolResult(content=[TextContent(text="5")], structured_content={"sum": 5})))
5
structured content: {"sum": 5}
>>> "<pre" in call_tool_result_html(CallToolResult(content=[TextContent(text="5")]))
True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from ..protocol.schema import json_type_name, tool_summary
from ..protocol.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

if TYPE_CHECKING:
    from ..protocol.types import GetPromptResult, ReadResourceResult

__all__ = [
    "call_tool_result_html",
    "call_tool_result_text",
    "content_text",
    "get_prompt_result_html",
    "get_prompt_result_text",
    "read_resource_result_html",
    "read_resource_result_text",
    "resource_contents_text",
    "tools_html",
    "tools_text",
]


# ------------------------------------------------------------------ progress


# ------------------------------------------------------------------ as text


def _decoded_size(data: str) -> int:
    """The number of bytes a base64 string stands for."""
    return len(data.strip().rstrip("=")) * 3 // 4


def resource_contents_text(contents: ResourceContents) -> str:
    """Text contents as they are; a blob as a bracketed description."""
    if isinstance(contents, TextResourceContents):
        return contents.text
    mime_type = contents.mime_type or "application/octet-stream"
    return f"[blob {contents.uri} {mime_type}, {_decoded_size(contents.blob)} bytes]"


def content_text(block: ContentBlock) -> str:
    """A content block as text: text as it is, anything else as a short bracketed description.

    >>> from mcp_sync.types import ImageContent, ResourceLink
    >>> content_text(ImageContent(data="aGVsbG8=", mime_type="image/png"))
    '[image image/png, 5 bytes]'
    >>> content_text(ResourceLink(uri="file:///a.txt", name="a"))
    '[resource link file:///a.txt (a)]'
    """
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return f"[{block.type} {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri} ({block.name})]"
    return resource_contents_text(block.resource)


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def call_tool_result_text(result: CallToolResult) -> str:
    """A tool result as text: its content blocks, then its structured content as JSON."""
    lines = ["tool error:"] if result.is_error else []
    lines += [content_text(block) for block in result.content]
    if result.structured_content is not None:
        lines.append(f"structured content: {_json(result.structured_content)}")
    return "\n".join(lines)


def read_resource_result_text(result: ReadResourceResult) -> str:
    """Resource contents as text, each after a ``--- uri`` line when there are several."""
    if len(result.contents) == 1:
        return resource_contents_text(result.contents[0])
    return "\n".join(f"--- {item.uri}\n{resource_contents_text(item)}" for item in result.contents)


def get_prompt_result_text(result: GetPromptResult) -> str:
    """A rendered prompt as text: each message after its role."""
    lines = [result.description] if result.description else []
    lines += [f"[{message.role}] {content_text(message.content)}" for message in result.messages]
    return "\n".join(lines)


def tools_text(tools: Sequence[Tool]) -> str:
    """A tool list as text: one call summary per line, then the description's first line."""
    if not tools:
        return "no tools"
    lines = []
    for tool in tools:
        description = (tool.description or "").strip().splitlines()
        lines.append(tool_summary(tool) + (f"  -- {description[0]}" if description else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------ as HTML

_PRE = '<pre style="white-space: pre-wrap; margin: 0.2em 0">'


def _data_uri(mime_type: str, data: str) -> str:
    return escape(f"data:{mime_type};base64,{data}", quote=True)


def _resource_contents_html(contents: ResourceContents) -> str:
    head = f"<div><code>{escape(contents.uri)}</code></div>"
    if isinstance(contents, TextResourceContents):
        return f"{head}{_PRE}{escape(contents.text)}</pre>"
    if (contents.mime_type or "").startswith("image/"):
        assert contents.mime_type is not None
        return f'{head}<img src="{_data_uri(contents.mime_type, contents.blob)}" alt="{escape(contents.uri)}">'
    return f"<div>{escape(resource_contents_text(contents))}</div>"


def _content_html(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return f"{_PRE}{escape(block.text)}</pre>"
    if isinstance(block, ImageContent):
        return f'<img src="{_data_uri(block.mime_type, block.data)}" alt="image">'
    if isinstance(block, AudioContent):
        return f'<audio controls src="{_data_uri(block.mime_type, block.data)}"></audio>'
    if isinstance(block, ResourceLink):
        return f"<div>resource link <code>{escape(block.uri)}</code> ({escape(block.name)})</div>"
    return _resource_contents_html(block.resource)


def _frame(label: str, body: str, colour: str) -> str:
    return (
        f'<div class="mcp-sync" style="border-left: 3px solid {colour}; padding-left: 0.6em">'
        f'<div style="color: {colour}; font-size: smaller">{escape(label)}</div>{body}</div>'
    )


def call_tool_result_html(result: CallToolResult) -> str:
    """A tool result as HTML: text, images and audio inline, structured content as JSON; errors in red."""
    body = "".join(_content_html(block) for block in result.content)
    if result.structured_content is not None:
        body += (
            f"<details open><summary>structured content</summary>"
            f"{_PRE}{escape(_json(result.structured_content, indent=2))}</pre></details>"
        )
    if result.is_error:
        return _frame("tool error", body, "#c62828")
    return _frame("tool result", body, "#2e7d32")


def read_resource_result_html(result: ReadResourceResult) -> str:
    """Resource contents as HTML, each under its URI."""
    return _frame("resource", "".join(_resource_contents_html(item) for item in result.contents), "#1565c0")


def get_prompt_result_html(result: GetPromptResult) -> str:
    """A rendered prompt as HTML: each message under its role."""
    body = f"<div><i>{escape(result.description)}</i></div>" if result.description else ""
    for message in result.messages:
        body += f"<div><b>{escape(message.role)}</b></div>{_content_html(message.content)}"
    return _frame("prompt", body, "#6a1b9a")


def _argument_html(name: str, schema: Any) -> str:
    description = schema.get("description") if isinstance(schema, dict) else None
    note = f" &mdash; {escape(str(description))}" if description else ""
    return f"<li><code>{escape(name)}</code>: {escape(json_type_name(schema))}{note}</li>"


def tools_html(tools: Sequence[Tool]) -> str:
    """A tool list as an HTML table: the call summary and the description with its arguments."""
    if not tools:
        return "<p>no tools</p>"
    rows = []
    for tool in tools:
        properties = tool.input_schema.get("properties")
        arguments = ""
        if isinstance(properties, dict) and properties:
            items = "".join(_argument_html(name, schema) for name, schema in properties.items())
            arguments = f"<ul style='margin: 0'>{items}</ul>"
        rows.append(
            f"<tr><td style='text-align: left'><code>{escape(tool_summary(tool))}</code></td>"
            f"<td style='text-align: left'>{escape(tool.description or '')}{arguments}</td></tr>"
        )
    return (
        "<table class='mcp-sync-tools'><thead><tr><th style='text-align: left'>tool</th>"
        f"<th style='text-align: left'>description</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


# --------------------------------------------------------------- in IPython

DISPLAYS: list[tuple[str, Callable[[Any], str], Callable[[Any], str]]] = [
    ("CallToolResult", call_tool_result_html, call_tool_result_text),
    ("ReadResourceResult", read_resource_result_html, read_resource_result_text),
    ("GetPromptResult", get_prompt_result_html, get_prompt_result_text),
]
"""The models shown richly, by their names in :data:`MODELS`, each with its HTML and its text renderer.

By name, not by class: two of them are declared only when a program first uses them (see
``protocol.types.ON_DEMAND``), and showing a tool's result must not declare them."""

MODELS = CallToolResult.__module__
"""The module the models of :data:`DISPLAYS` are named in (``mcp_sync.protocol.types``)."""

_RENDERERS = {name: (to_html, to_text) for name, to_html, to_text in DISPLAYS}


def render(kind: str, model: object) -> str | None:
    """``model`` as ``kind`` (``"text/html"`` or ``"text/plain"``); ``None`` for a model without a rich form.

    This is the renderer :mod:`mcp_sync` sets for the wire models'
    ``_repr_html_`` and ``_repr_pretty_``.

    >>> render("text/plain", CallToolResult(content=[TextContent(text="5")]))
    '5'
    >>> render("text/html", 5) is None
    True
    """
    for cls in type(model).__mro__:  # (the most specific first, as isinstance would match a subclass)
        renderers = _RENDERERS.get(cls.__name__) if cls.__module__ == MODELS else None
        if renderers is not None:
            to_html, to_text = renderers
            return to_html(model) if kind == "text/html" else to_text(model)
    return None
