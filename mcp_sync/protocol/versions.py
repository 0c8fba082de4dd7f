"""Protocol revisions, their order, and what each one lacks.

mcp_sync speaks every handshake-era revision (2024-11-05 to 2025-11-25) and
the stateless revision 2026-07-28. :data:`KNOWN_REVISIONS` lists them all,
oldest first, and :func:`at_least` compares revisions by their place in that
list, never as strings. A peer that negotiated an older revision must not
receive what that revision does not define, so results are adapted with
:func:`adapt_result` before they are sent.

>>> negotiate("2025-03-26")
'2025-03-26'
>>> negotiate("1999-01-01")
'2025-11-25'
>>> at_least("2025-11-25", "2025-06-18"), at_least("zzz", "2025-06-18")
(True, False)
>>> adapt_result("tools/list", {"tools": [{"name": "a", "title": "A", "inputSchema": {}}]}, "2025-03-26")
{'tools': [{'name': 'a', 'inputSchema': {}}]}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import MCP_CODES, MCPError
from .types import LOG_LEVELS

__all__ = [
    "HANDSHAKE_REVISIONS",
    "KNOWN_REVISIONS",
    "LATEST_REVISION",
    "STATELESS_REVISION",
    "STATELESS_REVISIONS",
    "adapt_notification",
    "adapt_result",
    "admitting",
    "at_least",
    "negotiate",
    "revision_index",
]

HANDSHAKE_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions with an ``initialize`` handshake, oldest first."""

STATELESS_REVISIONS = ("2026-07-28",)
"""The stateless revisions (no handshake; each request describes itself), oldest first; defined only here."""

KNOWN_REVISIONS = (*HANDSHAKE_REVISIONS, *STATELESS_REVISIONS)
"""Every revision mcp_sync knows, oldest first: the order :func:`at_least` compares by."""

LATEST_REVISION = HANDSHAKE_REVISIONS[-1]
"""The newest handshake-era revision: what :func:`negotiate` falls back to."""

STATELESS_REVISION = STATELESS_REVISIONS[-1]
"""The newest stateless revision."""

# Position of each revision in KNOWN_REVISIONS, looked up by at_least.
_POSITION = {revision: index for index, revision in enumerate(KNOWN_REVISIONS)}


def revision_index(revision: str) -> int | None:
    """Where ``revision`` stands in :data:`KNOWN_REVISIONS` (0 is the oldest), or ``None`` if unknown.

    >>> revision_index("2024-11-05"), revision_index("2026-07-28"), revision_index("2030-01-01")
    (0, 4, None)
    """
    return _POSITION.get(revision)


def at_least(revision: str, minimum: str) -> bool:
    """Whether ``revision`` is ``minimum`` or a later known revision.

    Revisions are compared by their position in :data:`KNOWN_REVISIONS`, not
    as strings. An unknown ``revision`` (a typo, an empty string, a revision
    from the future) is conservatively *not* at least any known one, so
    nothing a known revision added is sent to a peer whose revision is not
    understood. ``minimum`` must be a known revision (``ValueError``
    otherwise): it is always a constant in the code, and a misspelt one
    would silently turn a feature off.

    >>> at_least("2025-06-18", "2025-06-18"), at_least("2026-07-28", "2025-11-25")
    (True, True)
    >>> at_least("2025-03-26", "2025-06-18"), at_least("9999-99-99", "2024-11-05")
    (False, False)
    """
    floor = _POSITION.get(minimum)
    if floor is None:
        raise ValueError(f"unknown protocol revision {minimum!r} as a minimum; known: {', '.join(KNOWN_REVISIONS)}")
    position = _POSITION.get(revision)
    return position is not None and position >= floor


def negotiate(requested: str, supported: tuple[str, ...] = HANDSHAKE_REVISIONS) -> str:
    """The revision a server answers: the client's if supported, else the latest it has."""
    return requested if requested in supported else supported[-1]


Json = dict[str, Any]

# The adapters below only ever see revisions older than LATEST_REVISION
# (adapt_result passes the latest through), so what 2025-11-25 added is
# dropped unconditionally.

_LISTED = ("tools", "resources", "resourceTemplates", "prompts")
"""The keys of the listing results whose items gained fields over the revisions."""


def _drop(item: Json, *keys: str) -> Json:
    return {k: v for k, v in item.items() if k not in keys}


def _map_list(result: Json, key: str, change: Callable[[Json], Json]) -> Json:
    if key not in result:
        return result
    return {**result, key: [change(item) for item in result[key]]}


def _before_2025_06_18(item: Json) -> Json:
    """A listed item or content block without what 2025-06-18 added to it.

    That revision added ``title`` and ``_meta`` to tools, resources, templates
    and prompts, ``outputSchema`` to tools, ``_meta`` to content blocks and
    ``lastModified`` to annotations.
    """
    item = _drop(item, "title", "outputSchema", "_meta")
    annotations = item.get("annotations")
    if isinstance(annotations, dict):
        item["annotations"] = _drop(annotations, "lastModified")
    return item


def _without_argument_titles(prompt: Json) -> Json:
    if "arguments" not in prompt:
        return prompt
    return {**prompt, "arguments": [_drop(a, "title") for a in prompt["arguments"]]}


def _adapt_content(blocks: list[Json], revision: str) -> list[Json]:
    """Content blocks the revision can carry; unknown kinds become text."""
    adapted = []
    for block in blocks:
        kind = block.get("type")
        if kind == "audio" and not at_least(revision, "2025-03-26"):
            block = {"type": "text", "text": f"[audio content ({block.get('mimeType')}) omitted]"}
        elif kind == "resource_link" and not at_least(revision, "2025-06-18"):
            block = {"type": "text", "text": f"Resource: {block.get('name')} <{block.get('uri')}>"}
        elif kind == "resource_link":
            block = _drop(block, "icons")
        if not at_least(revision, "2025-06-18"):
            block = _before_2025_06_18(block)
            if kind == "resource":
                block["resource"] = _drop(block["resource"], "_meta")
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


def _adapt_read_resource(result: Json, revision: str) -> Json:
    if at_least(revision, "2025-06-18"):
        return result
    return _map_list(result, "contents", lambda contents: _drop(contents, "_meta"))


def _adapt_initialize(result: Json, revision: str) -> Json:
    info = dict(result.get("serverInfo", {}))
    capabilities = dict(result.get("capabilities", {}))
    info = _drop(info, "icons", "description", "websiteUrl")
    if not at_least(revision, "2025-06-18"):
        info = _drop(info, "title")
    if not at_least(revision, "2025-03-26"):
        capabilities = _drop(capabilities, "completions")
    return {**result, "serverInfo": info, "capabilities": capabilities}


def _adapt_listing(result: Json, revision: str) -> Json:
    for key in _LISTED:
        result = _map_list(result, key, lambda item: _drop(item, "icons", "execution"))
    if not at_least(revision, "2025-06-18"):
        for key in _LISTED:
            result = _map_list(result, key, _before_2025_06_18)
        result = _map_list(result, "prompts", _without_argument_titles)
    if not at_least(revision, "2025-03-26"):
        result = _map_list(result, "tools", lambda tool: _drop(tool, "annotations"))
    return result


_RESULT_ADAPTERS: dict[str, Callable[[Json, str], Json]] = {
    "initialize": _adapt_initialize,
    "tools/call": _adapt_call_tool,
    "prompts/get": _adapt_get_prompt,
    "resources/read": _adapt_read_resource,
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


def admitting(level: str) -> tuple[str, ...]:
    """The levels a client may choose (``logging/setLevel``) that let a message of ``level`` through: those up to it.

    The one rule of log levels: a session checks its client's level against
    it, and the Redis backend checks each shared session's level in Redis with it.

    >>> admitting("notice")
    ('debug', 'info', 'notice')
    """
    return LOG_LEVELS[: LOG_LEVELS.index(level) + 1]


def check_log_level(level: str) -> None:
    """Raise ``INVALID_PARAMS`` unless ``level`` is one of :data:`LOG_LEVELS`."""
    if level not in LOG_LEVELS:
        raise MCPError(MCP_CODES.INVALID_PARAMS, f"unknown log level {level!r}")
