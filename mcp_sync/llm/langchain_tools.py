"""A toolbox's tools as LangChain tools: ``StructuredTool`` objects that run through the :class:`Toolbox`.

Each tool keeps the name the model sees, the description and the input
schema (as the JSON Schema dict LangChain sends to the model), and runs
both ways: ``tool.invoke`` calls the server on the caller's thread,
``await tool.ainvoke`` runs the same blocking call in a worker thread so
the event loop is not held (and cancelling the task cancels the MCP call).

By default a tool answers ``(content, artifact)`` (LangChain's
``response_format="content_and_artifact"``): the content is what the model
reads, the artifact is the whole ``CallToolResult`` as its wire dict, so a
``ToolMessage`` keeps ``structuredContent`` and ``_meta``. A tool error is a
``ToolException``, which LangChain turns into a ``ToolMessage`` with
``status="error"`` for the model to read (``handle_tool_error`` is on).

With a chat model: ``model.bind_tools(tools)``, then for each ``call`` of
the answer's ``tool_calls``, ``tools_by_name[call["name"]].invoke(call)``
is the ``ToolMessage`` to append (``ainvoke`` in async code):

>>> from mcp_sync import MCPServer, connect
>>> from mcp_sync.llm import Toolbox
>>> server = MCPServer("maths")
>>> @server.tool
... def add(a: int, b: int) -> int:
...     "Add two numbers."
...     return a + b
>>> with connect(server) as client:
...     [add_tool] = Toolbox(client).langchain()
...     message = add_tool.invoke({"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1", "type": "tool_call"})
>>> message.content, message.artifact["structuredContent"]
('3', {'result': 3})
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any, Literal

from ..protocol.types import CallToolResult
from .content import Piece, pieces, stand_in
from .extras import load

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from .toolbox import ModelTool, Toolbox

__all__ = ["ResponseFormat", "langchain_content", "langchain_tools"]

ResponseFormat = Literal["content", "content_and_artifact"]
"""What a tool returns: the content alone, or ``(content, artifact)`` (LangChain's two response formats)."""


def langchain_tools(toolbox: Toolbox, response_format: ResponseFormat = "content_and_artifact") -> list[StructuredTool]:
    """One ``StructuredTool`` per tool of ``toolbox`` (see :meth:`Toolbox.langchain`)."""
    tools_module = load("langchain_core.tools", "langchain")
    return [_structured_tool(tools_module, toolbox, entry, response_format) for entry in toolbox.tools()]


def _structured_tool(
    tools_module: Any, toolbox: Toolbox, entry: ModelTool, response_format: ResponseFormat
) -> StructuredTool:
    name = entry.name

    def run(**arguments: Any) -> Any:
        return _answer(tools_module, toolbox.call(name, arguments), response_format)

    async def run_async(**arguments: Any) -> Any:
        import asyncio  # here, not at import: nothing ``import mcp_sync.llm`` loads imports asyncio

        # The call blocks, so it runs in a worker thread; a cancelled task sets ``cancel``, which cancels the
        # call on the server too (the thread then ends as soon as the client gives up the call).
        cancel = threading.Event()
        try:
            result = await asyncio.to_thread(toolbox.call, name, arguments, cancel=cancel)
        except asyncio.CancelledError:
            cancel.set()
            raise
        return _answer(tools_module, result, response_format)

    tool: StructuredTool = _tool_class(tools_module.StructuredTool)(
        name=name,
        description=entry.description,
        args_schema=_args_schema(entry.tool.input_schema),
        func=run,
        coroutine=run_async,
        response_format=response_format,
        # An error result goes back to the model as a ToolMessage with status="error", as the Toolbox gives
        # every failure to the model; set ``tool.handle_tool_error = False`` to have the ToolException raised.
        handle_tool_error=True,
    )
    return tool


@functools.cache
def _tool_class(structured_tool: type[StructuredTool]) -> type[StructuredTool]:
    """``StructuredTool`` whose functions get every argument the model gave, ``config`` and ``run_manager`` too.

    LangChain passes its own ``config`` and ``run_manager`` to a tool's
    ``_run``/``_arun`` when their signatures name them, as
    ``StructuredTool``'s do, and they then take the place of the tool's
    arguments of those names. These take only the arguments.
    """

    def run(self: StructuredTool, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)  # type: ignore[misc]

    async def run_async(self: StructuredTool, *args: Any, **kwargs: Any) -> Any:
        return await self.coroutine(*args, **kwargs)  # type: ignore[misc]

    namespace = {"_run": run, "_arun": run_async, "__module__": __name__, "__doc__": "An MCP tool, for LangChain."}
    return type("MCPStructuredTool", (structured_tool,), namespace)


def _args_schema(input_schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's input schema as LangChain takes it: an object schema with ``properties`` (LangChain reads them)."""
    return {"type": "object", **input_schema, "properties": input_schema.get("properties") or {}}


def _answer(tools_module: Any, result: CallToolResult, response_format: ResponseFormat) -> Any:
    """What the tool function returns for ``result``; an error result raises ``ToolException`` with its text."""
    content = langchain_content(result)
    if result.is_error:
        message = content if isinstance(content, str) else "\n".join(b["text"] for b in content if b["type"] == "text")
        raise tools_module.ToolException(message or "The tool failed without saying why.")
    if response_format == "content":
        return content
    return content, result.to_wire()


def langchain_content(result: CallToolResult) -> str | list[dict[str, Any]]:
    """The content of a tool result as a LangChain ``ToolMessage`` takes it.

    The result is read as every provider reads it (:func:`~mcp_sync.llm.content.pieces`).
    Text only (the usual case) gives one string, what every chat model
    integration takes. A result with images gives a list of LangChain's
    standard content blocks (``{"type": "text", ...}`` and ``{"type":
    "image", "base64": ..., "mime_type": ...}``). Audio and other files,
    which a LangChain tool message has no block for, are a line of text
    saying what was there (the artifact holds them).

    >>> from mcp_sync.types import ImageContent, TextContent
    >>> langchain_content(CallToolResult(content=[TextContent(text="a"), TextContent(text="b")]))
    'a\\nb'
    >>> langchain_content(CallToolResult(content=[ImageContent(data="iVBO", mime_type="image/png")]))
    [{'type': 'image', 'base64': 'iVBO', 'mime_type': 'image/png'}]
    """
    blocks = [_block(piece) for piece in pieces(result)]
    if all(block["type"] == "text" for block in blocks):
        return "\n".join(block["text"] for block in blocks)
    return blocks


def _block(piece: Piece) -> dict[str, Any]:
    """One piece of a result as a LangChain standard content block: text, an image, or text standing in."""
    if isinstance(piece, str):
        return {"type": "text", "text": piece}
    if piece.mime_type.startswith("image/"):
        return {"type": "image", "base64": piece.data, "mime_type": piece.mime_type}
    # LangChain has an audio block for messages, but not in a ToolMessage (its content would become JSON text).
    return {"type": "text", "text": stand_in(piece)}
