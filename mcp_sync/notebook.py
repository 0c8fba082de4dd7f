"""Notebook helpers: a progress bar for tool calls and rich displays of results.

:class:`ProgressBar` is what ``client.call_tool(..., progress=True)`` shows:
a tqdm bar on stderr when tqdm is installed, plain lines otherwise.

The ``*_html`` and ``*_text`` functions render tool results, resource
contents, prompts and tool lists as HTML (for Jupyter) and plain text (for
IPython's terminal and the ``mcp-sync`` command). :func:`enable_rich_display`
registers them with a running IPython, which :func:`mcp_sync.connect` does
by itself; ``%load_ext mcp_sync.notebook`` does it by hand.

>>> from mcp_sync.types import CallToolResult, TextContent
>>> print(call_tool_result_text(CallToolResult(content=[TextContent(text="5")], structured_content={"sum": 5})))
5
structured content: {"sum": 5}
>>> "<pre" in call_tool_result_html(CallToolResult(content=[TextContent(text="5")]))
True
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Callable, Sequence
from html import escape
from typing import Any, TextIO

from .client import json_type_name, tool_summary
from .types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    GetPromptResult,
    ImageContent,
    ProgressNotificationParams,
    ReadResourceResult,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

__all__ = [
    "ProgressBar",
    "call_tool_result_html",
    "call_tool_result_text",
    "content_text",
    "enable_rich_display",
    "get_prompt_result_html",
    "get_prompt_result_text",
    "load_ipython_extension",
    "read_resource_result_html",
    "read_resource_result_text",
    "resource_contents_text",
    "tools_html",
    "tools_text",
]


# ------------------------------------------------------------------ progress


def _load_tqdm() -> Any:
    """tqdm's bar class, or ``None`` when tqdm is not installed."""
    try:
        return importlib.import_module("tqdm").tqdm
    except ImportError:
        return None


def _whole(number: float | None) -> float | None:
    """``3.0`` as ``3``, so that a bar shows ``3/10`` rather than ``3.0/10.0``."""
    return int(number) if number is not None and float(number).is_integer() else number


class ProgressBar:
    """A progress callback that shows a tool call's progress on ``stream`` (default: ``sys.stderr``).

    With tqdm installed it draws a tqdm bar, made at the first
    notification; without, it writes one line per notification, like
    ``add: 3/10 (30%) adding``. :meth:`close` ends the bar; notifications
    after that are ignored.

    >>> import io
    >>> from mcp_sync.types import ProgressNotificationParams as P
    >>> out = io.StringIO()
    >>> bar = ProgressBar("count", stream=out, use_tqdm=False)
    >>> bar(P(progress_token=1, progress=3, total=10, message="counting"))
    >>> bar(P(progress_token=1, progress=4))
    >>> bar.close()
    >>> print(out.getvalue(), end="")
    count: 3/10 (30%) counting
    count: 4
    """

    def __init__(self, label: str, *, stream: TextIO | None = None, use_tqdm: bool = True) -> None:
        self.label = label
        self._stream = stream
        self._tqdm: Any = _load_tqdm() if use_tqdm else None
        self._bar: Any = None
        self._closed = False
        self._lock = threading.Lock()

    @property
    def stream(self) -> TextIO:
        """Where the progress goes."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, params: ProgressNotificationParams) -> None:
        with self._lock:
            if self._closed:
                return
            if self._tqdm is None:
                self._write_line(params)
            else:
                self._update_bar(params)

    def _update_bar(self, params: ProgressNotificationParams) -> None:
        total = _whole(params.total)
        if self._bar is None:
            self._bar = self._tqdm(total=total, desc=self.label, file=self.stream, leave=True)
        bar = self._bar
        bar.total = total
        bar.n = _whole(params.progress)
        if params.message:
            bar.set_postfix_str(params.message, refresh=False)
        bar.refresh()

    def _write_line(self, params: ProgressNotificationParams) -> None:
        line = f"{self.label}: {params.progress:g}"
        if params.total:
            line += f"/{params.total:g} ({params.progress / params.total:.0%})"
        if params.message:
            line += f" {params.message}"
        stream = self.stream
        stream.write(line + "\n")
        stream.flush()

    def close(self) -> None:
        """End the bar (idempotent)."""
        with self._lock:
            self._closed = True
            bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()


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

_DISPLAYS: list[tuple[type[Any], Callable[[Any], str], Callable[[Any], str]]] = [
    (CallToolResult, call_tool_result_html, call_tool_result_text),
    (ReadResourceResult, read_resource_result_html, read_resource_result_text),
    (GetPromptResult, get_prompt_result_html, get_prompt_result_text),
]


def _pretty(to_text: Callable[[Any], str]) -> Callable[[Any, Any, bool], None]:
    def pretty(value: Any, printer: Any, cycle: bool) -> None:
        printer.text(to_text(value))

    return pretty


def enable_rich_display(shell: Any = None) -> bool:
    """Show tool results, resource contents and prompts richly in IPython ``shell`` (default: the running one).

    Returns whether there was a shell to set up. Calling it again is harmless.
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is None:
            return False
    formatters = shell.display_formatter.formatters
    for model, to_html, to_text in _DISPLAYS:
        formatters["text/html"].for_type(model, to_html)
        formatters["text/plain"].for_type(model, _pretty(to_text))
    return True


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext mcp_sync.notebook``: see :func:`enable_rich_display`."""
    enable_rich_display(ipython)
