"""Function declarations for Google's Gemini (google-genai), the calls its models ask for, and the answer.

Plain dicts, exactly as ``types.GenerateContentConfig(tools=...)`` and
``client.models.generate_content(contents=...)`` take them: no
``google.genai`` import here. The declarations' ``parameters`` are
Gemini's OpenAPI ``Schema`` (see :func:`~mcp_sync.llm.schemas.gemini`),
which the SDK checks field by field; ``parameters_json_schema`` would pass
any dict unchecked to the service. A function response holds the text as
``{"output": ...}`` (``{"error": ...}`` for a failure) and images and PDF
files as inline parts; audio and other files are described in words.

>>> definitions([])
([], {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..protocol.types import CallToolResult
from .content import IMAGE_TYPES, Asked, Media, pieces, stand_in
from .schemas import SchemaProblem, gemini

if TYPE_CHECKING:
    from .toolbox import ModelTool

__all__ = ["answers", "definitions", "read_calls"]


def definitions(tools: Sequence[ModelTool]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One ``Tool`` (as a dict) declaring ``tools``, in a list; the tools left out or cut short, by name, and why.

    A tool without parameters is declared without ``parameters`` (Gemini
    refuses an object with no properties). No tools: an empty list.
    """
    declarations = []
    problems: dict[str, str] = {}
    for tool in tools:
        cuts: list[str] = []
        try:
            schema = gemini(tool.tool.input_schema, cuts)
        except SchemaProblem as exc:
            problems[tool.name] = f"left out: {exc}"
            continue
        if cuts:
            problems[tool.name] = "given cut short: " + "; ".join(cuts)
        declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if schema.get("properties"):
            declaration["parameters"] = schema
        declarations.append(declaration)
    return ([{"function_declarations": declarations}] if declarations else []), problems


def read_calls(response: Any) -> list[Asked] | None:
    """The function calls of a plain (dumped) ``GenerateContentResponse``, ``Content``, or list of parts or calls.

    Both spellings are read: the SDK's (``function_call``) and the REST API's (``functionCall``).
    """
    if isinstance(response, Mapping):
        if "candidates" in response:  # a response; a blocked prompt's has no candidates
            candidates = response["candidates"] or [{}]
            items = (candidates[0].get("content") or {}).get("parts") or []
        elif isinstance(response.get("parts"), list):
            items = response["parts"]
        else:
            return None
    elif any(isinstance(item, Mapping) and (_call_of(item) or "args" in item) for item in response):
        items = response
    else:
        return None
    found = []
    for item in items:
        call = _call_of(item) or (item if "args" in item else None)
        if call is not None:
            found.append((call.get("name") or "", call.get("args"), call.get("id")))
    return found


def _call_of(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    call = part.get("function_call") or part.get("functionCall")
    return call if isinstance(call, Mapping) else None


def answers(asked: Sequence[Asked], results: Sequence[CallToolResult]) -> list[dict[str, Any]]:
    """One ``Content`` (as a dict, role ``user``) with a ``function_response`` part for each call (none without)."""
    if not asked:
        return []
    parts = []
    for (name, _, call_id), result in zip(asked, results, strict=True):
        found = pieces(result)
        shown = [piece for piece in found if isinstance(piece, Media) and _shown(piece)]
        text = "\n".join(piece if isinstance(piece, str) else stand_in(piece) for piece in found if piece not in shown)
        response: dict[str, Any] = {
            "name": name,
            "response": {"error" if result.is_error else "output": text},
        }
        if call_id:
            response["id"] = call_id
        if shown:
            response["parts"] = [{"inline_data": {"mime_type": one.mime_type, "data": one.raw()}} for one in shown]
        parts.append({"function_response": response})
    return [{"role": "user", "parts": parts}]


def _shown(piece: Media) -> bool:
    """Whether a function response may hold ``piece`` as an inline part (an image, or a PDF file)."""
    return piece.kind != "audio" and (piece.mime_type in IMAGE_TYPES or piece.mime_type == "application/pdf")
