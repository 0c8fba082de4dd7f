"""Protocol revisions and what each one lacks.

mcp_sync speaks every handshake-era revision (2024-11-05 to 2025-11-25).
A peer that negotiated an older revision must not receive what that revision
does not define, so results are adapted with :func:`adapt_result` before they
are sent.

>>> negotiate("2025-03-26")
'2025-03-26'
>>> negotiate("1999-01-01")
'2025-11-25'
>>> adapt_result("tools/list", {"tools": [{"name": "a", "title": "A", "inputSchema": {}}]}, "2025-03-26")
{'tools': [{'name': 'a', 'inputSchema': {}}]}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "HANDSHAKE_REVISIONS",
    "LATEST_REVISION",
    "STATELESS_REVISION",
    "adapt_notification",
    "adapt_result",
    "at_least",
    "negotiate",
]

HANDSHAKE_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions with an ``initialize`` handshake, oldest first."""

LATEST_REVISION = HANDSHAKE_REVISIONS[-1]
STATELESS_REVISION = "2026-07-28"


def at_least(revision: str, minimum: str) -> bool:
    """Whether ``revision`` is ``minimum`` or newer (revisions are ISO dates)."""
    return revision >= minimum


def negotiate(requested: str, supported: tuple[str, ...] = HANDSHAKE_REVISIONS) -> str:
    """The revision a server answers: the client's if supported, else the latest it has."""
    return requested if requested in supported else supported[-1]


Json = dict[str, Any]

_ICON_HOLDERS = ("tools", "resources", "resourceTemplates", "prompts")


def _drop(item: Json, *keys: str) -> Json:
    return {k: v for k, v in item.items() if k not in keys}


def _drop_in_list(result: Json, key: str, *fields: str) -> Json:
    if key not in result:
        return result
    return {**result, key: [_drop(item, *fields) for item in result[key]]}


def _adapt_content(blocks: list[Json], revision: str) -> list[Json]:
    """Content blocks the revision can carry; unknown kinds become text."""
    adapted = []
    for block in blocks:
        kind = block.get("type")
        if kind == "audio" and not at_least(revision, "2025-03-26"):
            block = {"type": "text", "text": f"[audio content ({block.get('mimeType')}) omitted]"}
        elif kind == "resource_link" and not at_least(revision, "2025-06-18"):
            block = {"type": "text", "text": f"Resource: {block.get('name')} <{block.get('uri')}>"}
        adapted.append(block)
    return adapted


def _adapt_call_tool(result: Json, revision: str) -> Json:
    result = {**result, "content": _adapt_content(result.get("content", []), revision)}
    if not at_least(revision, "2025-06-18"):
        result.pop("structuredContent", None)
    return result


def _adapt_get_prompt(result: Json, revision: str) -> Json:
    messages = [{**m, "content": _adapt_content([m["content"]], revision)[0]} for m in result.get("messages", [])]
    return {**result, "messages": messages}


def _adapt_initialize(result: Json, revision: str) -> Json:
    info = dict(result.get("serverInfo", {}))
    capabilities = dict(result.get("capabilities", {}))
    if not at_least(revision, "2025-11-25"):
        info = _drop(info, "icons", "description", "websiteUrl")
    if not at_least(revision, "2025-06-18"):
        info = _drop(info, "title")
    if not at_least(revision, "2025-03-26"):
        capabilities = _drop(capabilities, "completions")
    return {**result, "serverInfo": info, "capabilities": capabilities}


def _adapt_listing(result: Json, revision: str) -> Json:
    if not at_least(revision, "2025-11-25"):
        for key in _ICON_HOLDERS:
            result = _drop_in_list(result, key, "icons", "execution")
    if not at_least(revision, "2025-06-18"):
        for key in _ICON_HOLDERS:
            result = _drop_in_list(result, key, "title", "outputSchema")
        if "prompts" in result:
            result["prompts"] = [
                {**p, "arguments": [_drop(a, "title") for a in p["arguments"]]} if "arguments" in p else p
                for p in result["prompts"]
            ]
    if not at_least(revision, "2025-03-26"):
        result = _drop_in_list(result, "tools", "annotations")
    return result


_RESULT_ADAPTERS: dict[str, Callable[[Json, str], Json]] = {
    "initialize": _adapt_initialize,
    "tools/call": _adapt_call_tool,
    "prompts/get": _adapt_get_prompt,
    "tools/list": _adapt_listing,
    "resources/list": _adapt_listing,
    "resources/templates/list": _adapt_listing,
    "prompts/list": _adapt_listing,
}


def adapt_result(method: str, result: Json, revision: str) -> Json:
    """``result`` of ``method`` without what ``revision`` does not define."""
    if revision == LATEST_REVISION:
        return result
    adapter = _RESULT_ADAPTERS.get(method)
    return result if adapter is None else adapter(result, revision)


def adapt_notification(method: str, params: Json, revision: str) -> Json:
    """Notification ``params`` without what ``revision`` does not define."""
    if method == "notifications/progress" and not at_least(revision, "2025-03-26"):
        return _drop(params, "message")
    return params
