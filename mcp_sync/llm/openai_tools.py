"""Tools for OpenAI's Chat Completions and Responses APIs, the calls its models ask for, and their answers.

Plain dicts, exactly as ``client.chat.completions.create(tools=...)`` and
``client.responses.create(tools=...)`` take them: no ``openai`` import
here. A Chat Completions tool message takes only text, so an image or
audio clip a tool returned is described in words (:func:`~mcp_sync.llm.
content.stand_in`); a Responses ``function_call_output`` takes images
(``input_image``) and PDF files (``input_file``) as they are.

>>> definitions([], "chat", strict=False)
([], {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..protocol.types import CallToolResult
from .content import ERROR_PREFIX, IMAGE_TYPES, Asked, Media, Piece, pieces, stand_in
from .schemas import SchemaProblem, convert_each, openai_strict, plain_object

if TYPE_CHECKING:
    from .toolbox import ModelTool

__all__ = ["Api", "answers", "definitions", "read_calls"]

Api = Literal["chat", "responses"]


def definitions(tools: Sequence[ModelTool], api: Api, *, strict: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The definitions of ``tools`` for ``api``; the tools left out or given less strictly, by name, and why.

    With ``strict``, a tool whose schema cannot follow strict mode's rules
    is given with ``strict: false`` (and named in the problems) rather
    than left out: the model can still call it, and the server still
    checks its arguments.
    """
    converted, problems = convert_each(tools, plain_object)
    result = []
    for tool, schema in converted:
        is_strict = strict
        if strict:
            try:
                schema = openai_strict(schema)
            except SchemaProblem as exc:
                is_strict = False
                problems[tool.name] = f"given with strict: false: {exc}"
        function: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": schema}
        if api == "responses":  # strict is said either way: the Responses API takes a missing one as true
            result.append({"type": "function", **function, "strict": is_strict})
        else:
            result.append({"type": "function", "function": {**function, **({"strict": is_strict} if strict else {})}})
    return result, problems


def read_calls(response: Any) -> tuple[Api, list[Asked]] | None:
    """The calls in a plain (dumped) Chat Completions or Responses answer, or ``None`` if it is neither.

    ``response`` is a ``ChatCompletion``, its ``message``, a list of its
    tool calls, a Responses ``Response`` or a list of its output items.
    """
    if isinstance(response, Mapping):
        if isinstance(response.get("choices"), list):
            choices = response["choices"]
            return "chat", _chat_calls(choices[0].get("message") or {}) if choices else []
        if response.get("object") == "response" and isinstance(response.get("output"), list):
            return "responses", _responses_calls(response["output"])
        if response.get("role") == "assistant" and "type" not in response:
            return "chat", _chat_calls(response)
        return None
    items = [item for item in response if isinstance(item, Mapping)]
    if any(item.get("type") == "function" and "function" in item for item in items):
        return "chat", _chat_calls({"tool_calls": items})
    if any(item.get("type") == "function_call" for item in items):
        return "responses", _responses_calls(items)
    return None


def _chat_calls(message: Mapping[str, Any]) -> list[Asked]:
    return [
        (call["function"].get("name", ""), call["function"].get("arguments"), call.get("id"))
        for call in message.get("tool_calls") or []
        if call.get("type", "function") == "function" and isinstance(call.get("function"), Mapping)
    ]


def _responses_calls(items: Sequence[Mapping[str, Any]]) -> list[Asked]:
    return [
        (item.get("name", ""), item.get("arguments"), item.get("call_id"))
        for item in items
        if item.get("type") == "function_call"
    ]


def answers(api: Api, asked: Sequence[Asked], results: Sequence[CallToolResult]) -> list[dict[str, Any]]:
    """The messages (``chat``) or input items (``responses``) that give ``results`` back to the model."""
    if api == "chat":
        return [
            {"role": "tool", "tool_call_id": call_id or "", "content": _text(result, pieces(result))}
            for (_, _, call_id), result in zip(asked, results, strict=True)
        ]
    return [
        {"type": "function_call_output", "call_id": call_id or "", "output": _output(result)}
        for (_, _, call_id), result in zip(asked, results, strict=True)
    ]


def _text(result: CallToolResult, found: Sequence[Piece]) -> str:
    """All of ``found`` as one text, media described in words; a failure says so first."""
    text = "\n".join(piece if isinstance(piece, str) else stand_in(piece) for piece in found)
    return f"{ERROR_PREFIX}\n{text}" if result.is_error else text


def _output(result: CallToolResult) -> str | list[dict[str, Any]]:
    """A ``function_call_output``'s output: text alone, or text with the images and PDFs it can hold."""
    found = pieces(result)
    if not any(_shown(piece) for piece in found):
        return _text(result, found)
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": ERROR_PREFIX}] if result.is_error else []
    for piece in found:
        if isinstance(piece, str) or not _shown(piece):
            parts.append({"type": "input_text", "text": piece if isinstance(piece, str) else stand_in(piece)})
        elif piece.mime_type in IMAGE_TYPES:
            parts.append({"type": "input_image", "image_url": piece.data_url, "detail": "auto"})
        else:
            name = PurePosixPath(urlsplit(piece.uri or "").path).name or "file.pdf"
            parts.append({"type": "input_file", "filename": name, "file_data": piece.data_url})
    return parts


def _shown(piece: Piece) -> bool:
    """Whether a Responses output can hold ``piece`` as it is (an image, or a PDF file)."""
    if not isinstance(piece, Media) or piece.kind == "audio":
        return False
    return piece.mime_type in IMAGE_TYPES or piece.mime_type == "application/pdf"
