"""One request of the stateless era (2026-07-28), from the cache or the wire, driven to its complete result.

:func:`exchange` is what :class:`~mcp_sync.client.era.StatelessEra` does
with each request: answer it from the response cache while the server's
``ttlMs`` allows, else send it with the request ``_meta``; answer the
input requests of each interim result with the client's providers and
send it again (for up to ``max_input_rounds`` rounds); and, when a tool
call is refused for a header mismatch, list the tools again and retry once.
:func:`validated` reads any result into its model, in either era.

>>> from mcp_sync.protocol.errors import MCPProtocolError
>>> from mcp_sync.types import ListToolsResult
>>> validated(ListToolsResult, {"tools": []}, "tools/list").tools
[]
>>> try:
...     validated(ListToolsResult, {"tools": 3}, "tools/list")
... except MCPProtocolError as exc:
...     print(exc.code)
MCP.PROTOCOL_INVALID
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, MCPProtocolError, format_validation_error
from ..protocol.stateless import CACHEABLE, INPUT_METHODS
from ..protocol.types import WireModel
from ..runtime.dispatcher import ProgressCallback, Timeout

if TYPE_CHECKING:
    from .core import MCPClient
    from .era import StatelessEra
    from .providers import MissingProvider

__all__ = [
    "answer_inputs",
    "exchange",
    "validated",
]

_R = TypeVar("_R", bound=WireModel)


def validated(model: type[_R], raw: dict[str, Any], method: str) -> _R:
    """``raw``, the result of ``method``, read into ``model``; a mismatch raises ``PROTOCOL_INVALID``."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise MCPProtocolError(
            MCP_CODES.PROTOCOL_INVALID,
            f"invalid {method} result: {format_validation_error(exc)}",
            cause=exc,
            context={"method": method},
        ) from exc


def exchange(
    era: StatelessEra,
    method: str,
    wire: dict[str, Any],
    *,
    timeout: Timeout,
    cancel: threading.Event | None,
    on_progress: ProgressCallback | None,
    fresh: bool,
) -> dict[str, Any]:
    """The complete result of ``method`` with params ``wire``: cached (unless ``fresh``), or asked for."""
    client = era.client
    cache = client.cache if method in CACHEABLE else None
    if cache is not None and not fresh:
        cached = cache.get(method, wire)
        if cached is not None:
            return cached
    original, rounds, relisted = wire, 0, False
    while True:
        # The _meta is built at each round: a provider set meanwhile changes the capabilities it declares.
        shared, own = client.request_meta.shared(era.revision), wire.get("_meta")
        sent = {**wire, "_meta": {**own, **shared} if own else dict(shared)}
        try:
            raw = era.dispatcher.request(method, sent, timeout=timeout, cancel=cancel, on_progress=on_progress)
        except MCPError as exc:
            if method != "tools/call" or exc.jsonrpc_code != JsonRpcCode.HEADER_MISMATCH or relisted:
                raise
            # The server wants Mcp-Param headers we could not know: its tool changed. List again, retry once.
            relisted = True
            client.refresh_tools(timeout=timeout)
            continue
        kind = raw.get("resultType", "complete")  # servers before 2026-07-28 send none
        if kind == "task" and method == "tools/call":
            return raw  # a task (SEP-2663): the caller polls it, see mcp_sync.client.tasks
        if kind == "complete":
            if cache is not None and rounds == 0:  # a result reached through input rounds is the user's, not shared
                cache.store(method, original, raw)
            return raw
        if kind != "input_required" or method not in INPUT_METHODS:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"the server answered {method} with resultType {kind!r}",
                context={"method": method},
            )
        rounds += 1
        if rounds > client.max_input_rounds:
            raise MCPError(
                MCP_CODES.PROTOCOL_INVALID,
                f"the server still asked for input after {client.max_input_rounds} rounds of {method}; "
                "giving up (raise max_input_rounds to allow more)",
                context={"method": method, "rounds": client.max_input_rounds},
            )
        # Each round starts again from the original params: answers and state are those of this round only.
        wire = dict(original)
        answers = answer_inputs(client, method, raw.get("inputRequests"), era.missing_provider)
        if answers:
            wire["inputResponses"] = answers
        if "requestState" in raw:
            wire["requestState"] = raw["requestState"]


def answer_inputs(
    client: MCPClient, method: str, requests: Any, missing: Callable[[str, str], MissingProvider]
) -> dict[str, Any]:
    """The providers' answers to ``inputRequests`` (of an interim result, or of a task), under the same keys.

    ``missing(method, key)`` builds the error for a question whose provider is not set.
    """
    if requests is None:
        return {}
    if not isinstance(requests, dict):
        raise MCPProtocolError(
            MCP_CODES.PROTOCOL_INVALID, f"the inputRequests of {method} are not an object: {requests!r}"
        )
    # The questions' models, loaded the first time a server asks (see protocol.types.CLIENT_FEATURES).
    from ..protocol.types import CreateMessageRequest, ElicitRequest
    from .providers import QUESTIONS, responder

    # What each input request is read as before its provider sees its params (``None``: it has none to read).
    input_requests: dict[str, type[CreateMessageRequest] | type[ElicitRequest] | None] = {
        "sampling/createMessage": CreateMessageRequest,
        "roots/list": None,
        "elicitation/create": ElicitRequest,
    }
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        wanted = request.get("method") if isinstance(request, dict) else None
        if not isinstance(wanted, str) or wanted not in QUESTIONS:
            raise MCPError(
                MCP_CODES.METHOD_NOT_FOUND,
                f"the server asked, while answering {method}, for {wanted!r} (input {key!r}), "
                "which this client does not know",
                context={"method": method, "input": key},
            )
        answer = responder(client, wanted, missing(method, key))
        model = input_requests[wanted]
        params = validated(model, request, wanted).params if model is not None else None
        answers[key] = answer(params).to_wire()
    return answers
