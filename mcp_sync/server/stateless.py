"""Serving the stateless protocol revision 2026-07-28.

From 2026-07-28 there is no handshake: every request names its revision and
the client's capabilities in ``_meta``, and a handler that needs the client
(elicitation, sampling, roots) does not send it a request but answers with an
``InputRequiredResult``; the client retries the original request with the
answers. :class:`StatelessRequest` reads a request's ``_meta`` and keeps the
answers; :class:`RequestStateSealer` protects the ``requestState`` that
carries earlier rounds' answers between retries.

Handlers are written once for both eras: ``ctx.elicit(...)`` sends a request
to the client in the handshake era, and in this era (through
:class:`~mcp_sync.server.context.StatelessChannel`) raises
:class:`InputRequired` the first time and returns the answer on the retry
(the handler runs again from the start, with the answers it already got).

>>> request = StatelessRequest.read({"_meta": {
...     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
...     "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
... }})
>>> request.revision, request.client_capabilities.elicitation is not None
('2026-07-28', True)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import pydantic_core
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError
from ..protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from ..protocol.types import (
    LOG_LEVELS,
    ClientCapabilities,
    Implementation,
    LoggingLevel,
)
from ..protocol.versions import STATELESS_REVISIONS

if TYPE_CHECKING:
    from ..protocol.types import CreateMessageRequest, ElicitRequest, ListRootsRequest

__all__ = [
    "ClientRequest",
    "InputRequired",
    "MissingClientCapability",
    "RequestStateSealer",
    "StatelessRequest",
]


_R = TypeVar("_R", bound=BaseModel)
ClientRequest: TypeAlias = "CreateMessageRequest | ElicitRequest | ListRootsRequest"  # models loaded when first asked
"""What a handler may need from the client."""
_CAPABILITY_FOR = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


class InputRequired(Exception):
    """A handler needs answers from the client before it can finish (raised, then answered for it).

    ``requests`` holds the questions by key; the session answers the request
    with an ``InputRequiredResult`` carrying them.
    """

    def __init__(self, requests: dict[str, ClientRequest]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests


class MissingClientCapability(MCPError):
    """A 2026-07-28 request lacks a client capability the handler needs (``-32021``)."""

    def __init__(self, capability: str) -> None:
        super().__init__(
            MCP_CODES.MISSING_CAPABILITY,
            f"this request needs the client capability {capability!r}",
            data={"requiredCapabilities": {capability: {}}},
        )


class StatelessRequest:
    """What a 2026-07-28 request says about itself, and the client's answers so far.

    Read from the request with :meth:`read`; ``answers`` gathers the client's
    answers (from ``inputResponses`` and the sealed ``requestState``) by key.
    Requests that describe the client alike share one ``client_capabilities``
    and one ``client_info``, as a handshake-era session's requests do: read
    them, never change them. A plain class with slots, made for each request
    (a dataclass's generated methods are compiled at import, which every
    server's start would pay).

    >>> from mcp_sync.types import ClientCapabilities
    >>> request = StatelessRequest("2026-07-28", ClientCapabilities())
    >>> request.log_level is None and request.answers == {}
    True
    >>> request
    StatelessRequest(revision='2026-07-28', log_level=None, answers=[])
    """

    __slots__ = ("__weakref__", "answers", "asked", "client_capabilities", "client_info", "log_level", "revision")

    def __init__(
        self,
        revision: str,
        client_capabilities: ClientCapabilities,
        client_info: Implementation | None = None,
        log_level: LoggingLevel | None = None,
        answers: dict[str, Any] | None = None,
        asked: int = 0,
    ) -> None:
        self.revision = revision
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.answers: dict[str, Any] = {} if answers is None else answers
        self.asked = asked

    def __repr__(self) -> str:
        return (
            f"StatelessRequest(revision={self.revision!r}, log_level={self.log_level!r}, "
            f"answers={sorted(self.answers)})"
        )

    @classmethod
    def read(cls, params: dict[str, Any]) -> StatelessRequest:
        """Read and check a request's ``_meta``: ``-32602`` when malformed, ``-32022`` for an unknown revision."""
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        revision = meta.get(PROTOCOL_VERSION)
        capabilities = meta.get(CLIENT_CAPABILITIES)
        if not isinstance(revision, str) or not isinstance(capabilities, dict):
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Invalid params: _meta must carry {PROTOCOL_VERSION} and {CLIENT_CAPABILITIES}",
            )
        if revision not in STATELESS_REVISIONS:
            raise MCPError(
                MCP_CODES.PROTOCOL_VERSION_MISMATCH,
                f"Unsupported protocol version: {revision}",
                data={"supported": list(STATELESS_REVISIONS), "requested": revision},
            )
        try:
            client_capabilities, client_info = _described(capabilities, meta.get(CLIENT_INFO))
        except ValidationError as exc:
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"Invalid params: {exc}", cause=exc) from exc
        level = meta.get(LOG_LEVEL)
        return cls(
            revision, client_capabilities, client_info, level if level is not None and level in LOG_LEVELS else None
        )

    def ask(self, request: ClientRequest, result_type: type[_R], key: str | None = None) -> _R:
        """The client's answer to ``request``, or :class:`InputRequired` when it has not given one yet.

        Keys default to the order of asking (``elicitation-1``, ...): a handler
        run again asks in the same order, so the same keys find their answers.
        An answer that does not fit ``result_type`` counts as not given.
        """
        self.asked += 1
        name = key or f"{request.method.split('/')[0]}-{self.asked}"
        self._require(request)
        answer = self.answers.get(name)
        if answer is not None:
            try:
                return result_type.model_validate(answer)
            except ValidationError:
                pass
        raise InputRequired({name: request})

    def ask_all(self, requests: dict[str, ClientRequest]) -> dict[str, Any]:
        """The answers to several requests at once; every missing one is asked in the same round."""
        for request in requests.values():
            self._require(request)
        missing = {name: request for name, request in requests.items() if self.answers.get(name) is None}
        if missing:
            raise InputRequired(missing)
        return {name: self.answers[name] for name in requests}

    def _require(self, request: ClientRequest) -> None:
        capability = _CAPABILITY_FOR[request.method]
        if getattr(self.client_capabilities, capability) is None:
            raise MissingClientCapability(capability)


_Described = tuple[ClientCapabilities, Implementation | None]
_DESCRIBED: dict[bytes, tuple[Any, _Described]] = {}
"""The models of each client description seen lately, by the exact JSON of its capabilities and info."""
_DESCRIBED_ENTRIES = 64
"""How many descriptions :data:`_DESCRIBED` keeps (it starts afresh when full)."""
_DESCRIBED_BYTES = 4096
"""The longest description kept there (longer ones are validated each time)."""


def _described(capabilities: dict[str, Any], info: Any) -> _Described:
    """A request's client capabilities and client info as models: validated once per distinct pair, then shared.

    A client sends the same two objects with each of its requests, and
    validating them again was most of what a 2026-07-28 request cost the
    server over a handshake-era one. The key is their exact JSON, which
    tells ``true`` from ``1`` and keeps the order of members; a hit must
    also equal that JSON read back, which tells a tuple or a non-string key
    (params built in Python, not read from JSON) from what was cached.
    Requests with the same description share its models, as a handshake-era
    session's requests share the ones ``initialize`` gave: read, never changed.
    """
    try:
        key = pydantic_core.to_json((capabilities, info))
    except PydanticSerializationError:
        key = b""  # not JSON at all (params built in Python): validated each time
    hit = _DESCRIBED.get(key)
    if hit is not None and hit[0] == [capabilities, info]:
        return hit[1]
    models = (
        ClientCapabilities.model_validate(capabilities),
        (Implementation.model_validate(info) if info is not None else None),
    )
    if key and len(key) <= _DESCRIBED_BYTES:
        if len(_DESCRIBED) >= _DESCRIBED_ENTRIES:
            _DESCRIBED.clear()
        # Compared against the JSON read back, not the request's own objects, which its handler may change.
        _DESCRIBED[key] = (pydantic_core.from_json(key), models)
    return models


class RequestStateSealer:
    """Seals and opens ``requestState``: answers of earlier rounds, signed and bounded.

    The state is HMAC-SHA256 signed with a per-server secret, bound to the
    request's method and parameters, expires after ``ttl`` seconds and may
    not exceed ``max_bytes``. Tampered, foreign or expired state is refused
    with ``-32602``. Servers behind a load balancer share one ``secret``.

    >>> sealer = RequestStateSealer(b"shared secret")
    >>> digest = sealer.digest("tools/call", {"name": "book"})
    >>> sealer.open(sealer.seal(digest, {"elicitation-1": {"action": "cancel"}}), digest)
    {'elicitation-1': {'action': 'cancel'}}
    """

    def __init__(self, secret: bytes | None = None, *, ttl: float = 600.0, max_bytes: int = 256 * 1024) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self.secret_given = bool(secret)
        """Whether the secret was given (to share it), rather than made by this sealer."""
        self.ttl = ttl
        self.max_bytes = max_bytes

    @staticmethod
    def digest(method: str, params: dict[str, Any]) -> str:
        """What identifies a request across its retries: method and params without the round's inputs."""
        salient = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
        data = json.dumps([method, salient], sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(data.encode()).hexdigest()

    def seal(self, digest: str, answers: dict[str, Any]) -> str:
        """The state to send with an ``InputRequiredResult``."""
        body = json.dumps({"d": digest, "a": answers, "x": time.time() + self.ttl}, separators=(",", ":")).encode()
        if len(body) > self.max_bytes:
            raise MCPError(MCP_CODES.INTERNAL_ERROR, "the request state grew beyond its limit")
        signature = hmac.new(self._secret, body, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(signature + body).decode("ascii")

    def open(self, state: str, digest: str) -> dict[str, Any]:
        """The answers sealed in ``state``; ``INVALID_PARAMS`` when it is not ours, altered, expired or foreign."""
        try:
            raw = base64.urlsafe_b64decode(state.encode("ascii"))
        except (ValueError, UnicodeError):
            raw = b""
        if base64.urlsafe_b64encode(raw).decode("ascii") != state:
            raw = b""  # only the exact text we sealed: the decoder would ignore trailing junk
        signature, body = raw[:32], raw[32:]
        expected = hmac.new(self._secret, body, hashlib.sha256).digest()
        if len(raw) > self.max_bytes + 32 or not hmac.compare_digest(signature, expected):
            raise MCPError(MCP_CODES.INVALID_PARAMS, "Invalid params: requestState failed verification")
        payload = json.loads(body)
        if payload["d"] != digest or payload["x"] < time.time():
            raise MCPError(MCP_CODES.INVALID_PARAMS, "Invalid params: requestState is expired or for another request")
        answers: dict[str, Any] = payload["a"]
        return answers


def resource_not_found(error: MCPError) -> MCPError:
    """A handshake-era ``-32002`` resource-not-found, as 2026-07-28 reports it (``-32602``, with the URI)."""
    return MCPError(
        error.code,
        error.message,
        context=error.context,
        data={"uri": error.context.get("uri")},
        jsonrpc_code=JsonRpcCode.INVALID_PARAMS,
    )
