"""A server's sampling requests answered by a Claude model, through the user's own ``anthropic`` client.

:class:`AnthropicSampling` is a sampling provider (``MCPClient(sampling_provider=...)``):
each ``sampling/createMessage`` becomes one ``client.messages.create`` call,
and the message it returns becomes the answer. The client object is the
user's (``anthropic.Anthropic``, ``AnthropicBedrock``, or anything with the
same ``messages.create``): its key, base URL, proxies, retries and timeout
apply. Nothing here imports ``anthropic``.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    AudioContent,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    SamplingMessage,
    SamplingMessageContentBlock,
    TextContent,
    Tool,
    ToolResultContent,
    ToolUseContent,
)
from .sampling import ModelSampling, answer, as_text, blocks, structured_text

__all__ = ["AnthropicSampling"]

_STOP_REASONS = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
}
"""Anthropic's ``stop_reason`` -> MCP's ``stopReason`` (others, such as ``refusal``, are passed as they are)."""

_TOOL_CHOICES = {"auto": "auto", "required": "any", "none": "none"}
"""MCP's ``toolChoice.mode`` -> the ``type`` of Anthropic's ``tool_choice``."""


class AnthropicSampling(ModelSampling):
    """Answers ``sampling/createMessage`` with Anthropic's Messages API, through ``client``.

    ``model`` is used unless a hint of the request's ``modelPreferences``
    matches a key of ``models`` (see :func:`mcp_sync.llm.sampling.choose_model`);
    the answer names the model the API says it used.

    What is sent: ``systemPrompt`` as ``system``; text and images (base64
    image blocks); ``maxTokens`` as ``max_tokens``, ``stopSequences`` as
    ``stop_sequences``; the request's ``tools`` and ``toolChoice``
    (``required`` is Anthropic's ``any``); ``tool_use`` blocks as they are,
    ``tool_result`` blocks with their text and images and ``is_error``.
    Audio: the Messages API takes none, so an audio block in a message is
    refused with ``INVALID_PARAMS`` (the server learns its request cannot be
    heard, rather than a model answering without it); audio inside a tool
    result becomes a short text stand-in, the rest of the result still
    reaching the model. ``temperature`` is not sent: Anthropic's API since
    version 2026-10-21 (the SDK 2.x default) refuses it for every model.
    ``includeContext`` and ``metadata`` are not sent either. An API error
    reaches the server as an ``MCPError`` with the API's status and message
    (never the key).

    Example (``pip install "mcp-sync-py[anthropic]"``)::

        import anthropic
        from mcp_sync import connect
        from mcp_sync.llm import AnthropicSampling

        sampling = AnthropicSampling(
            anthropic.Anthropic(), model="claude-haiku-4-5", models={"sonnet": "claude-sonnet-4-5"}
        )
        with connect(["python", "server.py"], sampling_provider=sampling) as client:
            client.call_tool("summarize", {"uri": "file:///notes.txt"})
    """

    api = "Anthropic"

    def request(self, params: CreateMessageRequestParams, model: str) -> dict[str, Any]:
        return _request(params, model)

    def send(self, request: dict[str, Any]) -> Any:
        return self.client.messages.create(**request)

    def result(self, response: Any) -> CreateMessageResult:
        return _result(response)


def _request(params: CreateMessageRequestParams, model: str) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``params``."""
    messages = [_message(message) for message in params.messages]
    request: dict[str, Any] = {"model": model, "max_tokens": params.max_tokens, "messages": messages}
    if params.system_prompt:
        request["system"] = params.system_prompt
    if params.stop_sequences:
        request["stop_sequences"] = params.stop_sequences
    if params.tools:
        request["tools"] = [_tool(tool) for tool in params.tools]
        if params.tool_choice is not None and params.tool_choice.mode is not None:
            request["tool_choice"] = {"type": _TOOL_CHOICES[params.tool_choice.mode]}
    return request


def _tool(tool: Tool) -> dict[str, Any]:
    definition: dict[str, Any] = {"name": tool.name, "input_schema": tool.input_schema}
    if tool.description:
        definition["description"] = tool.description
    return definition


def _message(message: SamplingMessage) -> dict[str, Any]:
    return {"role": message.role, "content": [_block(block) for block in blocks(message)]}


def _block(block: SamplingMessageContentBlock) -> dict[str, Any]:
    if isinstance(block, ToolUseContent):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultContent):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": _result_content(block),
        }
        if block.is_error:
            result["is_error"] = True
        return result
    if isinstance(block, AudioContent):
        raise MCPError(
            MCP_CODES.INVALID_PARAMS,
            f"Anthropic's Messages API takes no audio ({block.mime_type}): this request cannot be sampled",
            context={"mime_type": block.mime_type},
        )
    return _text_or_image(block)


def _text_or_image(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
    return {"type": "text", "text": block.text}


def _result_content(result: ToolResultContent) -> list[dict[str, Any]]:
    """The content of a ``tool_result`` block: text and images as they are, anything else as text."""
    structured = structured_text(result)
    if structured is not None:
        return [{"type": "text", "text": structured}]
    return [
        _text_or_image(item)
        if isinstance(item, TextContent | ImageContent)
        else {"type": "text", "text": as_text(item, "Anthropic")}
        for item in result.content
    ]


def _result(response: Any) -> CreateMessageResult:
    """The answer from a ``Message``: its text and ``tool_use`` blocks (thinking and server tools' blocks left out)."""
    content: list[SamplingMessageContentBlock] = []
    for block in response.content:
        if block.type == "text":
            content.append(TextContent(text=block.text))
        elif block.type == "tool_use":
            content.append(ToolUseContent(id=block.id, name=block.name, input=dict(block.input)))
    return answer(content, response.model, _STOP_REASONS.get(response.stop_reason, response.stop_reason))
