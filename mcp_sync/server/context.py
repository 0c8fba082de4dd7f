"""The context a tool, resource or prompt handler receives.

A handler that declares a parameter annotated with :class:`Context` gets
one: it reports progress, sends log messages, notices cancellation, and
reaches the client for sampling, elicitation and roots.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> @server.tool
... def count(n: int, ctx: Context) -> str:
...     for step in range(n):
...         if ctx.cancelled.is_set():
...             return "stopped"
...         ctx.progress(step + 1, n, f"step {step + 1}")
...     return "done"
>>> server.invoke_tool("count", {"n": 3}).text
'done'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    Implementation,
    ListRootsRequest,
    ListRootsResult,
    LoggingLevel,
    ModelPreferences,
    ReadResourceResult,
    RequestId,
    RequestParams,
    Root,
    SamplingMessage,
    TextContent,
)

if TYPE_CHECKING:
    from .core import MCPServer
    from .session import ServerSession
    from .stateless import ModernRequest

__all__ = ["Context", "Elicited", "ProgressReporter"]


ProgressReporter = Callable[[float, "float | None", "str | None"], None]
T = TypeVar("T")


@dataclass(frozen=True)
class Elicited(Generic[T]):
    """The user's answer to :meth:`Context.elicit`.

    ``action`` is ``"accept"``, ``"decline"`` or ``"cancel"``; ``data`` is
    the answer (an instance of the model asked for, or a dict for a plain
    schema) when accepted, else ``None``.
    """

    action: Literal["accept", "decline", "cancel"]
    data: T | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted and answered."""
        return self.action == "accept"


class Context:
    """What a handler knows about the call it serves, and how it talks back.

    ``cancelled`` is set when the client cancels the call or goes away;
    ``session`` is ``None`` for local calls such as
    :meth:`MCPServer.invoke_tool`, where the methods that need a client
    raise ``MISSING_CAPABILITY``.
    """

    def __init__(
        self,
        *,
        request_id: RequestId | None = None,
        cancelled: threading.Event | None = None,
        session: ServerSession | None = None,
        server: MCPServer | None = None,
        progress: ProgressReporter | None = None,
        meta: dict[str, Any] | None = None,
        modern: ModernRequest | None = None,
    ) -> None:
        self.request_id = request_id
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        self.session = session
        self.server = server if server is not None or session is None else session.server
        self.meta = meta or {}
        self.modern = modern
        self._progress = progress

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version (from initialize, or from this request in 2026-07-28)."""
        if self.modern is not None:
            return self.modern.client_info
        return None if self.session is None else self.session.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do."""
        if self.modern is not None:
            return self.modern.client_capabilities
        return ClientCapabilities() if self.session is None else self.session.client_capabilities

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (a no-op unless the caller asked for progress)."""
        if self._progress is not None:
            self._progress(progress, total, message)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client, subject to its log level.

        A 2026-07-28 request gets log messages only when it named a level.
        """
        if self.session is None:
            return
        if self.modern is None:
            self.session.log(level, data, logger)
        elif self.modern.log_level is not None:
            self.session.log(level, data, logger, minimum=self.modern.log_level)

    def _client(self, what: str) -> ServerSession:
        if self.session is None:
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, f"{what} needs a connected client")
        return self.session

    def ask_all(self, requests: dict[str, CreateMessageRequest | ElicitRequest | ListRootsRequest]) -> dict[str, Any]:
        """Several questions for the client at once (2026-07-28): all asked in one round.

        Returns the raw answers by key; in the handshake era each request is
        sent to the client in turn.
        """
        if self.modern is not None:
            return self.modern.ask_all(requests)
        session = self._client("input")
        answers: dict[str, Any] = {}
        for name, request in requests.items():
            if isinstance(request, CreateMessageRequest):
                answers[name] = session.create_message(request.params).to_wire()
            elif isinstance(request, ElicitRequest):
                answers[name] = session.elicit(request.params).to_wire()
            else:
                answers[name] = session.list_roots().to_wire()
        return answers

    def sample(
        self,
        messages: str | Sequence[str | SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: ModelPreferences | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> CreateMessageResult:
        """Ask the client's language model for a message; strings are user messages.

        Raises ``MISSING_CAPABILITY`` when the client cannot sample (and the
        server has no sampling provider of its own).
        """
        items = [messages] if isinstance(messages, str) else list(messages)
        params = CreateMessageRequestParams(
            messages=[
                SamplingMessage(role="user", content=TextContent(text=m)) if isinstance(m, str) else m for m in items
            ],
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            stop_sequences=stop_sequences,
            model_preferences=model_preferences,
        )
        if self.modern is not None:
            return self.modern.ask(CreateMessageRequest(params=params), CreateMessageResult, key)
        return self._client("sampling").create_message(params, timeout=timeout)

    def elicit(
        self, message: str, schema: type[T] | dict[str, Any], *, timeout: float | None = None, key: str | None = None
    ) -> Elicited[T]:
        """Ask the user, through the client, for the fields of ``schema``.

        ``schema`` is a pydantic model (whose fields must be strings,
        numbers, booleans or enums, as the spec allows) or a JSON schema;
        the accepted answer comes back as an instance of the model (or a
        dict). Raises ``MISSING_CAPABILITY`` when the client cannot elicit,
        and ``PROTOCOL_INVALID`` when the answer does not fit the model.
        """
        model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        requested: dict[str, Any] = (
            model.model_json_schema() if model is not None else dict(cast("dict[str, Any]", schema))
        )
        requested.pop("title", None)
        params = ElicitRequestFormParams(message=message, requested_schema=requested)
        if self.modern is not None:
            result = self.modern.ask(ElicitRequest(params=params), ElicitResult, key)
        else:
            result = self._client("elicitation").elicit(params, timeout=timeout)
        if result.action != "accept":
            return Elicited(result.action)
        if model is None:
            return Elicited("accept", cast(T, result.content))
        try:
            return Elicited("accept", cast(T, model.model_validate(result.content or {})))
        except ValidationError as exc:
            raise MCPError(MCP_CODES.PROTOCOL_INVALID, f"the client's answer does not fit: {exc}", cause=exc) from exc

    def list_roots(self, *, timeout: float | None = None, key: str | None = None) -> list[Root]:
        """The client's roots (directories or locations it lets the server work in)."""
        if self.modern is not None:
            return self.modern.ask(ListRootsRequest(params=RequestParams()), ListRootsResult, key).roots
        return self._client("roots").list_roots(timeout=timeout).roots

    def read_resource(self, uri: str) -> ReadResourceResult:
        """Read one of this server's own resources."""
        if self.server is None:
            raise MCPError(MCP_CODES.NOT_FOUND, f"no server to read {uri} from")
        return self.server.read_resource(uri, context=self)
