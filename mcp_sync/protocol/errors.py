"""Error codes and exceptions of mcp_sync.

Every failure that mcp_sync raises is an :class:`MCPError` (or one of its two
subclasses) carrying a stable code from :data:`MCP_CODES`::

    try:
        client.call_tool("add", {"a": 1})
    except MCPError as err:
        if err.code == MCP_CODES.INVALID_PARAMS:
            ...

The module also holds the one mapping between those codes and JSON-RPC error
codes, used in both directions by the dispatcher.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = [
    "MCP_CODES",
    "CodeRegistry",
    "JsonRpcCode",
    "MCPError",
    "MCPProtocolError",
    "MCPTransportError",
    "define_codes",
    "error_class_for",
    "format_validation_error",
    "invalid",
    "jsonrpc_code_for",
    "mcp_code_for",
    "validate",
]

_M = TypeVar("_M", bound=BaseModel)


class CodeRegistry:
    """An immutable set of error codes, each ``"<NAMESPACE>.<LEAF>"``.

    >>> codes = define_codes("DEMO", ["BROKEN"])
    >>> codes.BROKEN
    'DEMO.BROKEN'
    """

    __slots__ = ("_codes", "namespace")

    namespace: str
    _codes: Mapping[str, str]

    def __init__(self, namespace: str, leaves: Iterable[str]) -> None:
        codes = {leaf: f"{namespace}.{leaf}" for leaf in leaves}
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "_codes", MappingProxyType(codes))

    def __getattr__(self, leaf: str) -> str:
        try:
            return self._codes[leaf]
        except KeyError:
            raise AttributeError(f"{self.namespace} has no code {leaf!r}") from None

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("error code registries are immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("error code registries are immutable")

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes.values())

    def __len__(self) -> int:
        return len(self._codes)

    def __contains__(self, code: object) -> bool:
        return code in self._codes.values()

    @property
    def leaves(self) -> tuple[str, ...]:
        """The leaf names, in definition order."""
        return tuple(self._codes)

    def __repr__(self) -> str:
        return f"CodeRegistry({self.namespace!r}, {list(self._codes)!r})"


def define_codes(namespace: str, leaves: Iterable[str]) -> CodeRegistry:
    """Build an immutable registry of codes named ``"<namespace>.<leaf>"``."""
    leaves = list(leaves)
    if len(set(leaves)) != len(leaves):
        raise ValueError("error code leaves must be unique")
    return CodeRegistry(namespace, leaves)


MCP_CODES = define_codes(
    "MCP",
    [
        "PROTOCOL_INVALID",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "INTERNAL_ERROR",
        "UNAUTHORIZED",
        "REQUEST_CANCELLED",
        "TIMEOUT",
        "TRANSPORT_CLOSED",
        "TRANSPORT_ERROR",
        "NOT_INITIALIZED",
        "ALREADY_CONNECTED",
        "DUPLICATE_REGISTRATION",
        "NOT_FOUND",
        "PROTOCOL_VERSION_MISMATCH",
        "HANDLER_FAILED",
        # Beyond the seed's fifteen: JSON-RPC and 2026-07-28 wire codes that
        # need their own name so that the mapping below works both ways.
        "PARSE_ERROR",
        "HEADER_MISMATCH",
        "MISSING_CAPABILITY",
    ],
)


class JsonRpcCode:
    """JSON-RPC error codes used by MCP."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    UNAUTHORIZED = -32001
    SESSION_NOT_FOUND = -32001
    """The body of an HTTP 404 for an unknown ``Mcp-Session-Id``, as the reference SDKs send it.

    The same number as :attr:`UNAUTHORIZED`: -32001 is the first code of the
    implementation-defined server-error range (-32000 to -32099), and each
    SDK picked it for its own purpose. The HTTP status tells them apart, so
    the wire value is kept for interoperability (and :attr:`UNAUTHORIZED`
    alone maps back to an MCP code).
    """
    RESOURCE_NOT_FOUND = -32002
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022
    REQUEST_CANCELLED = -32800
    """Answers a cancelled request over HTTP when only a JSON body can answer it (LSP's ``RequestCancelled``)."""


_TO_JSONRPC: Mapping[str, int] = MappingProxyType(
    {
        MCP_CODES.PARSE_ERROR: JsonRpcCode.PARSE_ERROR,
        MCP_CODES.PROTOCOL_INVALID: JsonRpcCode.INVALID_REQUEST,
        MCP_CODES.METHOD_NOT_FOUND: JsonRpcCode.METHOD_NOT_FOUND,
        MCP_CODES.INVALID_PARAMS: JsonRpcCode.INVALID_PARAMS,
        MCP_CODES.INTERNAL_ERROR: JsonRpcCode.INTERNAL_ERROR,
        MCP_CODES.UNAUTHORIZED: JsonRpcCode.UNAUTHORIZED,
        MCP_CODES.NOT_FOUND: JsonRpcCode.RESOURCE_NOT_FOUND,
        MCP_CODES.HEADER_MISMATCH: JsonRpcCode.HEADER_MISMATCH,
        MCP_CODES.MISSING_CAPABILITY: JsonRpcCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        MCP_CODES.PROTOCOL_VERSION_MISMATCH: JsonRpcCode.UNSUPPORTED_PROTOCOL_VERSION,
    }
)
_FROM_JSONRPC: Mapping[int, str] = MappingProxyType({v: k for k, v in _TO_JSONRPC.items()})


def jsonrpc_code_for(code: str) -> int:
    """The JSON-RPC error code that carries ``code`` on the wire.

    Codes that only make sense locally (timeouts, closed transports, ...)
    travel as ``-32603`` (internal error).
    """
    return _TO_JSONRPC.get(code, JsonRpcCode.INTERNAL_ERROR)


def mcp_code_for(jsonrpc_code: int) -> str:
    """The MCP code for a JSON-RPC error code received from a peer.

    Codes outside the mapping (application-defined ones such as ``-32000``)
    become ``HANDLER_FAILED``; the original number stays on the exception as
    :attr:`MCPError.jsonrpc_code`.
    """
    return _FROM_JSONRPC.get(jsonrpc_code, MCP_CODES.HANDLER_FAILED)


class MCPError(Exception):
    """A failure with a stable :data:`MCP_CODES` code.

    ``context`` holds structured details (a method name, an exit code, ...);
    ``data`` is what travels in the JSON-RPC error's ``data`` field;
    ``jsonrpc_code`` is the number used on the wire.

    >>> err = MCPError(MCP_CODES.NOT_FOUND, "no tool 'x'", context={"name": "x"})
    >>> err.code, err.jsonrpc_code
    ('MCP.NOT_FOUND', -32002)
    """

    code: str
    message: str
    context: dict[str, Any]
    data: Any
    jsonrpc_code: int

    def __new__(cls, code: str, *args: Any, **kwargs: Any) -> MCPError:
        # The code decides the class, so ``except MCPProtocolError`` sees every protocol
        # failure however it was raised: ``MCPError(PROTOCOL_INVALID, ...)`` is built as an
        # MCPProtocolError; naming a class that contradicts the code is a programming error.
        family = error_class_for(code)
        if code not in MCP_CODES:
            return super().__new__(cls)  # __init__ says what is wrong with it
        if cls is MCPError:
            return super().__new__(family)
        named = MCPProtocolError if issubclass(cls, MCPProtocolError) else family
        named = MCPTransportError if issubclass(cls, MCPTransportError) else named
        if not issubclass(cls, family) or named is not family:
            raise TypeError(f"{code} is raised as {family.__name__}, not {cls.__name__}")
        return super().__new__(cls)

    def __init__(
        self,
        code: str,
        message: str,
        *,
        cause: BaseException | None = None,
        context: Mapping[str, Any] | None = None,
        data: Any = None,
        jsonrpc_code: int | None = None,
    ) -> None:
        if code not in MCP_CODES:
            raise ValueError(f"unknown MCP error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.context = dict(context or {})
        self.data = data
        self.jsonrpc_code = jsonrpc_code_for(code) if jsonrpc_code is None else jsonrpc_code
        self.__cause__ = cause

    @property
    def cause(self) -> BaseException | None:
        """The exception that led to this one, if any."""
        return self.__cause__

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own reduce would call the class with ``args`` (the message alone).
        state = {"context": self.context, "data": self.data, "jsonrpc_code": self.jsonrpc_code}
        return (_rebuild, (type(self), self.code, self.message, state))

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class MCPTransportError(MCPError):
    """The connection failed or is closed (``TRANSPORT_CLOSED``, ``TRANSPORT_ERROR``).

    >>> type(MCPError(MCP_CODES.TRANSPORT_CLOSED, "gone")).__name__
    'MCPTransportError'
    """


class MCPProtocolError(MCPError):
    """A message broke the protocol: malformed JSON or envelopes, an unsupported revision, mismatched headers.

    Every error whose code is ``PROTOCOL_INVALID``, ``PROTOCOL_VERSION_MISMATCH``,
    ``PARSE_ERROR`` or ``HEADER_MISMATCH`` is one, whichever class its raiser named.
    """


_FAMILY: Mapping[str, type[MCPError]] = MappingProxyType(
    {
        MCP_CODES.TRANSPORT_CLOSED: MCPTransportError,
        MCP_CODES.TRANSPORT_ERROR: MCPTransportError,
        MCP_CODES.PROTOCOL_INVALID: MCPProtocolError,
        MCP_CODES.PROTOCOL_VERSION_MISMATCH: MCPProtocolError,
        MCP_CODES.PARSE_ERROR: MCPProtocolError,
        MCP_CODES.HEADER_MISMATCH: MCPProtocolError,
    }
)
"""The class each code is raised as (codes not listed: :class:`MCPError` itself)."""


def _rebuild(cls: type[MCPError], code: str, message: str, state: dict[str, Any]) -> MCPError:
    """An error again from what :meth:`MCPError.__reduce__` kept (for copy and pickle)."""
    return cls(code, message, context=state["context"], data=state["data"], jsonrpc_code=state["jsonrpc_code"])


def error_class_for(code: str) -> type[MCPError]:
    """The exception class an error with ``code`` has.

    >>> error_class_for(MCP_CODES.PARSE_ERROR).__name__, error_class_for(MCP_CODES.TIMEOUT).__name__
    ('MCPProtocolError', 'MCPError')
    """
    return _FAMILY.get(code, MCPError)


def format_validation_error(exc: ValidationError) -> str:
    """One line naming each failing field by its path, e.g. ``arguments.a: ...``."""
    parts = []
    for error in exc.errors(include_url=False):
        path = ".".join(str(p) for p in error["loc"]) or "(root)"
        parts.append(f"{path}: {error['msg']}")
    return "; ".join(parts)


def invalid(
    exc: ValidationError, code: str, what: str, *, context: Mapping[str, Any] | None = None, data: Any = None
) -> MCPError:
    """The error that says ``what`` did not validate, field by field: ``"<what>: <path>: <msg>; ..."``.

    The one way a pydantic :class:`~pydantic.ValidationError` becomes an
    :class:`MCPError` of ``code`` (its class follows the code, as always):
    ``INVALID_PARAMS`` for what a peer sent to be served, ``PROTOCOL_INVALID``
    for an answer that does not fit its result.

    >>> from pydantic import BaseModel
    >>> class Point(BaseModel):
    ...     x: int
    >>> try:
    ...     Point.model_validate({})
    ... except ValidationError as exc:
    ...     invalid(exc, MCP_CODES.PROTOCOL_INVALID, "invalid answer")
    MCPProtocolError('MCP.PROTOCOL_INVALID', 'invalid answer: x: Field required')
    """
    return MCPError(code, f"{what}: {format_validation_error(exc)}", cause=exc, context=context, data=data)


def validate(
    model: type[_M], value: Any, code: str, what: str, *, context: Mapping[str, Any] | None = None, data: Any = None
) -> _M:
    """``value`` read into ``model``; the :func:`invalid` error of ``code`` when it does not fit.

    >>> from pydantic import BaseModel
    >>> class Point(BaseModel):
    ...     x: int
    >>> validate(Point, {"x": 1}, MCP_CODES.INVALID_PARAMS, "Invalid params").x
    1
    >>> validate(Point, {}, MCP_CODES.INVALID_PARAMS, "Invalid params", context={"tool": "move"})
    Traceback (most recent call last):
      ...
    mcp_sync.protocol.errors.MCPError: [MCP.INVALID_PARAMS] Invalid params: x: Field required
    """
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise invalid(exc, code, what, context=context, data=data) from exc
