"""What the sampling providers backed by a model share: the model to use, the content, the answer, the failures.

A server's ``sampling/createMessage`` names no model; at most it gives
hints (``modelPreferences.hints``, parts of model names, best first). A
provider maps them to a model through a table the user gives, else uses
its default model (:func:`choose_model`). The rest is the same for every
API: the content blocks of a message (:func:`blocks`), a tool result's
content as text where an API takes no other (:func:`as_text`,
:func:`structured_text`), the arguments of a tool call (:func:`tool_input`),
the answer built from what the model said (:func:`answer`), and an API's
failure turned into an error the server can read, without the key
(:func:`failure`).

>>> from mcp_sync.types import ModelHint, ModelPreferences
>>> table = {"claude": "claude-sonnet-4-5", "fast": "claude-haiku-4-5"}
>>> choose_model(ModelPreferences(hints=[ModelHint(name="claude-3-5-sonnet")]), table, "claude-opus-4-1")
'claude-sonnet-4-5'
"""

from __future__ import annotations

import abc
import json
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    ContentBlock,
    CreateMessageRequestParams,
    CreateMessageResult,
    EmbeddedResource,
    ModelPreferences,
    ResourceLink,
    SamplingMessage,
    SamplingMessageContentBlock,
    TextContent,
    TextResourceContents,
    ToolResultContent,
)

__all__ = [
    "ModelSampling",
    "answer",
    "as_text",
    "blocks",
    "choose_model",
    "failure",
    "structured_text",
    "tool_input",
]

log = logging.getLogger(__name__)


class ModelSampling(abc.ABC):
    """A sampling provider backed by a model's API, through the user's own SDK client: what every API shares.

    It picks the model (:func:`choose_model`), builds the API's request
    (:meth:`request`), sends it (:meth:`send`), turns an SDK's exception into
    an ``MCPError`` without the key (:func:`failure`), and reads the answer
    (:meth:`result`). :class:`~mcp_sync.llm.OpenAISampling` and
    :class:`~mcp_sync.llm.AnthropicSampling` fill in the three methods; so can
    a subclass for another API.

    >>> class Echo(ModelSampling):
    ...     api = "Echo"
    ...     def request(self, params, model):
    ...         return {"model": model, "text": blocks(params.messages[-1])[0].text}
    ...     def send(self, request):
    ...         return request
    ...     def result(self, response):
    ...         return answer([TextContent(text=response["text"])], response["model"], "endTurn")
    >>> from mcp_sync.types import CreateMessageRequestParams
    >>> hi = SamplingMessage(role="user", content=TextContent(text="hi"))
    >>> asked = CreateMessageRequestParams(messages=[hi], max_tokens=5)
    >>> Echo(None, model="echo-1")(asked).content.text
    'hi'
    """

    api: ClassVar[str]
    """The API's name, as errors say it."""

    supports_tools = True
    """The request's ``tools`` are given to the model: a client with this provider declares ``sampling.tools``."""

    def __init__(self, client: Any, *, model: str, models: Mapping[str, str] | None = None) -> None:
        self.client = client
        self.model = model
        self.models = dict(models or {})

    def __call__(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        """Send ``params`` to the model; its answer (``MCPError`` when the API fails)."""
        request = self.request(params, choose_model(params.model_preferences, self.models, self.model))
        try:
            response = self.send(request)
        except Exception as exc:  # whatever the SDK raised reaches the server as an error, never a crash
            raise failure(exc, self.api, self.client) from exc
        return self.result(response)

    @abc.abstractmethod
    def request(self, params: CreateMessageRequestParams, model: str) -> dict[str, Any]:
        """The keyword arguments of the SDK's call for ``params``, asking ``model``."""

    @abc.abstractmethod
    def send(self, request: dict[str, Any]) -> Any:
        """Call the SDK with ``request``; its response."""

    @abc.abstractmethod
    def result(self, response: Any) -> CreateMessageResult:
        """The answer read from the SDK's ``response``."""


def choose_model(preferences: ModelPreferences | None, models: Mapping[str, str] | None, default: str) -> str:
    """The model for a request: the first hint that matches a key of ``models`` picks its value, else ``default``.

    Hints are read in the server's order (its first preference first). A
    hint matches a key equal to it (case aside); failing that, the first key
    (in the table's order) that contains it (``"sonnet"`` matches
    ``"claude-sonnet"``); failing that, the first key it contains
    (``"claude-3-5-sonnet"`` matches ``"claude"``). A hint is never taken as
    a model name by itself: the server does not choose what the user pays for.

    >>> from mcp_sync.types import ModelHint
    >>> hints = ModelPreferences(hints=[ModelHint(name="gemini"), ModelHint(name="sonnet")])
    >>> choose_model(hints, {"claude-sonnet": "claude-sonnet-4-5"}, "claude-haiku-4-5")
    'claude-sonnet-4-5'
    >>> choose_model(hints, None, "claude-haiku-4-5")
    'claude-haiku-4-5'
    """
    if not models or preferences is None or not preferences.hints:
        return default
    keys = [(key.lower(), value) for key, value in models.items()]
    for hint in preferences.hints:
        name = (hint.name or "").lower()
        # Ranked by (0: equal, 1: the key contains the hint, 2: the hint contains the key), then the table's order.
        ranked = [
            (0 if key == name else 1 if name in key else 2, order, value)
            for order, (key, value) in enumerate(keys)
            if name and (name in key or key in name)
        ]
        if ranked:
            return min(ranked)[2]
    return default


def blocks(message: SamplingMessage) -> list[SamplingMessageContentBlock]:
    """The content blocks of ``message`` (one block or a list of them on the wire), as a list."""
    return list(message.content) if isinstance(message.content, list) else [message.content]


def answer(content: list[SamplingMessageContentBlock], model: str, stop_reason: str | None) -> CreateMessageResult:
    """The assistant's answer: one block as itself (what servers before 2025-11-25 read), several as a list.

    >>> answer([], "gpt-4.1", "endTurn").to_wire()
    {'role': 'assistant', 'content': {'type': 'text', 'text': ''}, 'model': 'gpt-4.1', 'stopReason': 'endTurn'}
    """
    chosen = content or [TextContent(text="")]
    single = chosen[0] if len(chosen) == 1 else chosen
    return CreateMessageResult(role="assistant", content=single, model=model, stop_reason=stop_reason)


def tool_input(arguments: str | None, name: str) -> dict[str, Any]:
    """The arguments a model gave a tool call as JSON text, read into the object MCP's ``tool_use`` holds.

    >>> tool_input('{"a": 1}', "add"), tool_input("", "now")
    ({'a': 1}, {})
    >>> try:
    ...     tool_input("[1]", "add")
    ... except MCPError as exc:
    ...     print(exc.message)
    the model's arguments for tool 'add' are not a JSON object: '[1]'
    """
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise MCPError(
            MCP_CODES.INTERNAL_ERROR, f"the model's arguments for tool {name!r} are not a JSON object: {arguments!r}"
        )
    return value


def as_text(item: ContentBlock, api: str) -> str:
    """A tool result's content block as text, for an API whose tool results cannot hold it as it is.

    Text is itself, an embedded text resource its text; what has no text
    (an image, audio, a binary resource, a link) is named in a short stand-in,
    so the model knows something was there.

    >>> from mcp_sync.types import AudioContent
    >>> as_text(AudioContent(data="UklG", mime_type="audio/wav"), "OpenAI")
    '[audio/wav audio left out: OpenAI takes none in a tool result]'
    >>> as_text(ResourceLink(uri="file:///a.txt", name="a.txt"), "OpenAI")
    '[resource link: file:///a.txt]'
    """
    if isinstance(item, TextContent):
        return item.text
    if isinstance(item, EmbeddedResource):
        contents = item.resource
        if isinstance(contents, TextResourceContents):
            return contents.text
        return f"[resource {contents.uri} ({contents.mime_type or 'binary'}) left out: it is not text]"
    if isinstance(item, ResourceLink):
        return f"[resource link: {item.uri}]"
    return f"[{item.mime_type} {item.type} left out: {api} takes none in a tool result]"


def structured_text(result: ToolResultContent) -> str | None:
    """A tool result's ``structuredContent`` as JSON text, when it has no content blocks to say it.

    >>> structured_text(ToolResultContent(tool_use_id="1", content=[], structured_content={"sum": 3}))
    '{"sum": 3}'
    """
    if result.content or result.structured_content is None:
        return None
    return json.dumps(result.structured_content)


def failure(exc: Exception, api: str, client: object) -> MCPError:
    """The error the server is sent when the ``api``'s SDK raised ``exc``: what the API said, without the key.

    An HTTP error keeps its status and the API's own message; anything else
    (a connection refused, a timeout) its type and text. The client's key,
    should the text hold it, is replaced.

    >>> class Refused(Exception):
    ...     status_code = 401
    ...     body = {"error": {"message": "Incorrect API key provided: sk-123456789"}}
    >>> class Client:
    ...     api_key = "sk-123456789"
    >>> failure(Refused(), "OpenAI", Client()).message
    'OpenAI refused the sampling request (HTTP 401): Incorrect API key provided: [redacted]'
    >>> class BadGateway(Exception):
    ...     status_code = 502
    ...     body = "<html>Bad gateway</html>"
    >>> failure(BadGateway("Error code: 502"), "Anthropic", object()).message
    'Anthropic refused the sampling request (HTTP 502): Error code: 502'
    >>> failure(TimeoutError("timed out"), "Anthropic", object()).message
    'Anthropic could not be reached for the sampling request: TimeoutError: timed out'
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        detail = _api_message(getattr(exc, "body", None)) or str(exc)
        message = f"{api} refused the sampling request (HTTP {status}): {detail}"
    else:
        message = f"{api} could not be reached for the sampling request: {type(exc).__name__}: {exc}"
    key = getattr(client, "api_key", None)
    if isinstance(key, str) and key:
        message = message.replace(key, "[redacted]")
    log.warning("%s", message)
    return MCPError(MCP_CODES.INTERNAL_ERROR, message, cause=exc, context={"api": api, "status": status})


def _api_message(body: Any) -> str | None:
    """The ``message`` of an API's error body: ``{"error": {"message": ...}}`` or the ``error`` object itself."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        return _api_message(inner)
    message = body.get("message")
    return message if isinstance(message, str) else None
