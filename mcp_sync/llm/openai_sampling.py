"""A server's sampling requests answered by an OpenAI model, through the user's own ``openai`` client.

:class:`OpenAISampling` is a sampling provider (``MCPClient(sampling_provider=...)``):
each ``sampling/createMessage`` becomes one ``client.chat.completions.create``
call, and the completion becomes the answer. The client object is the
user's (``openai.OpenAI``, ``AzureOpenAI``, or anything with the same
``chat.completions.create``): its key, base URL, proxies, retries and
timeout apply. Nothing here imports ``openai``.
"""

from __future__ import annotations

import json
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
from .sampling import ModelSampling, answer, as_text, blocks, structured_text, tool_input

__all__ = ["OpenAISampling"]

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse", "function_call": "toolUse"}
"""OpenAI's ``finish_reason`` -> MCP's ``stopReason`` (others, such as ``content_filter``, are passed as they are).

OpenAI says ``"stop"`` both for a natural end and for a stop sequence met: both read as ``endTurn``."""

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
"""The audio types the chat API's ``input_audio`` takes, by MIME type, and the ``format`` it names them by."""


class OpenAISampling(ModelSampling):
    """Answers ``sampling/createMessage`` with OpenAI's Chat Completions API, through ``client``.

    ``model`` is used unless a hint of the request's ``modelPreferences``
    matches a key of ``models`` (see :func:`mcp_sync.llm.sampling.choose_model`);
    the answer names the model the API says it used.

    What is sent: ``systemPrompt`` as a first ``system`` message; text, images
    (``image_url`` with a data URL) and audio (``input_audio``, WAV or MP3;
    other audio is refused with ``INVALID_PARAMS``); ``maxTokens`` as
    ``max_completion_tokens``, ``temperature``, ``stopSequences`` as ``stop``;
    the request's ``tools`` as function tools and ``toolChoice`` as
    ``tool_choice``. A ``tool_use`` block is an assistant ``tool_calls``
    entry; a ``tool_result`` a ``tool`` message with its ``tool_call_id``,
    holding text only (images and audio in it become a short stand-in, an
    error result is prefixed ``Error:``). ``includeContext`` and ``metadata``
    are not sent. An API error reaches the server as an ``MCPError`` with
    the API's status and message (never the key).

    Example (``pip install "mcp-sync-py[openai]"``)::

        import openai
        from mcp_sync import connect
        from mcp_sync.llm import OpenAISampling

        sampling = OpenAISampling(openai.OpenAI(), model="gpt-4.1-mini", models={"gpt-4.1": "gpt-4.1"})
        with connect(["python", "server.py"], sampling_provider=sampling) as client:
            client.call_tool("summarize", {"uri": "file:///notes.txt"})
    """

    api = "OpenAI"

    def request(self, params: CreateMessageRequestParams, model: str) -> dict[str, Any]:
        return _request(params, model)

    def send(self, request: dict[str, Any]) -> Any:
        return self.client.chat.completions.create(**request)

    def result(self, response: Any) -> CreateMessageResult:
        return _result(response)


def _request(params: CreateMessageRequestParams, model: str) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``params``."""
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        messages.extend(_messages(message))
    request: dict[str, Any] = {"model": model, "messages": messages, "max_completion_tokens": params.max_tokens}
    if params.temperature is not None:
        request["temperature"] = params.temperature
    if params.stop_sequences:
        request["stop"] = params.stop_sequences
    if params.tools:
        request["tools"] = [_tool(tool) for tool in params.tools]
        if params.tool_choice is not None and params.tool_choice.mode is not None:
            request["tool_choice"] = params.tool_choice.mode  # OpenAI names the modes as MCP does
    return request


def _tool(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _messages(message: SamplingMessage) -> list[dict[str, Any]]:
    """One MCP message as chat messages: its tool results as ``tool`` messages first, then the rest."""
    results: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks(message):
        if isinstance(block, ToolResultContent):
            results.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": _result_text(block)})
        elif isinstance(block, ToolUseContent):
            function = {"name": block.name, "arguments": json.dumps(block.input)}
            calls.append({"id": block.id, "type": "function", "function": function})
        else:
            parts.append(_part(block))
    if not parts and not calls:
        return results
    said: dict[str, Any] = {"role": message.role}
    if len(parts) == 1 and parts[0]["type"] == "text":
        said["content"] = parts[0]["text"]
    else:
        said["content"] = parts or None  # an assistant message of tool calls alone has no content
    if calls:
        said["tool_calls"] = calls
    return [*results, said]


def _part(block: TextContent | ImageContent | AudioContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    if isinstance(block, AudioContent):
        audio_format = _AUDIO_FORMATS.get(block.mime_type.lower())
        if audio_format is None:
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"OpenAI's chat API takes WAV or MP3 audio, not {block.mime_type}",
                context={"mime_type": block.mime_type},
            )
        return {"type": "input_audio", "input_audio": {"data": block.data, "format": audio_format}}
    return {"type": "text", "text": block.text}


def _result_text(result: ToolResultContent) -> str:
    """A tool result as the text of a ``tool`` message (the chat API takes nothing else there)."""
    text = structured_text(result) or "\n".join(as_text(item, "OpenAI") for item in result.content)
    return f"Error: {text}" if result.is_error else text


def _result(response: Any) -> CreateMessageResult:
    """The answer from a ``ChatCompletion``: its first choice's text (or refusal) and tool calls."""
    choice = response.choices[0]
    message = choice.message
    content: list[SamplingMessageContentBlock] = []
    text = message.content or getattr(message, "refusal", None)
    if text:
        content.append(TextContent(text=text))
    for call in message.tool_calls or []:
        name = call.function.name
        content.append(ToolUseContent(id=call.id, name=name, input=tool_input(call.function.arguments, name)))
    return answer(content, response.model, _STOP_REASONS.get(choice.finish_reason, choice.finish_reason))
