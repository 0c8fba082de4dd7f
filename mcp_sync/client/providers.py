"""The client's answers to the server's questions: sampling, roots and elicitation, in either era.

A server asks its client to sample a model, to list its roots or to ask
the user something. In the handshake era the question comes as a request
of its own (``sampling/createMessage``...); in the stateless era it comes
as an input request inside an interim result. Either way the same provider
of the client answers it, through :func:`responder`; only the error for a
missing provider differs, and each era passes its own (a
:data:`MissingProvider`).

>>> from mcp_sync import MCPClient
>>> from mcp_sync.protocol.errors import MCP_CODES, MCPError
>>> from mcp_sync.types import Root
>>> client = MCPClient(roots_provider=lambda: [Root(uri="file:///work")])
>>> def refuse(kind: ProviderKind) -> MCPError:
...     return MCPError(MCP_CODES.METHOD_NOT_FOUND, f"no {kind} here")
>>> responder(client, "roots/list", refuse)(None).roots[0].uri
'file:///work'
>>> try:
...     responder(client, "sampling/createMessage", refuse)
... except MCPError as exc:
...     print(exc.message)
no sampling here
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    CreateMessageRequestParams,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    SamplingCapability,
    WireModel,
)

if TYPE_CHECKING:
    from .core import MCPClient

__all__ = [
    "QUESTIONS",
    "ElicitParams",
    "MissingProvider",
    "ProviderKind",
    "Responder",
    "elicitation_capability",
    "responder",
    "sampling_capability",
    "with_schema_defaults",
]

ProviderKind = Literal["sampling", "roots", "elicitation"]
"""Which provider a question needs (also the word the errors use for it)."""

MissingProvider = Callable[[ProviderKind], MCPError]
"""Builds the error for a question whose provider is not set: each era says it its own way."""

Responder = Callable[[Any], WireModel]
"""A provider made ready to answer one question: takes the question's params, returns the answer."""


class ElicitParams(ElicitRequestFormParams):
    """The params of a handshake-era ``elicitation/create``: form mode as always, URL mode read as such.

    A URL-mode request is read into :class:`~mcp_sync.types.ElicitRequestURLParams`
    (see :func:`responder`); a form-mode one is a form, its errors named as before.
    """

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, dict) and obj.get("mode") == "url":
            return ElicitRequestURLParams.model_validate(obj, *args, **kwargs)
        return ElicitRequestFormParams.model_validate(obj, *args, **kwargs)


QUESTIONS: dict[str, tuple[ProviderKind, type[WireModel] | None]] = {
    "sampling/createMessage": ("sampling", CreateMessageRequestParams),
    "roots/list": ("roots", None),
    "elicitation/create": ("elicitation", ElicitParams),
}
"""The questions a server may ask its client: method -> (provider kind, model of the params, if any)."""

_T = TypeVar("_T")


def _present(provider: _T | None, kind: ProviderKind, missing: MissingProvider) -> _T:
    if provider is None:
        raise missing(kind)
    return provider


def responder(client: MCPClient, method: str, missing: MissingProvider) -> Responder:
    """The client's provider for the question ``method``, ready to answer; ``missing(kind)`` is raised without one.

    The provider is looked up now, before the question's params are read: a
    client without the provider refuses the question whatever it says. The
    roots read to answer ``roots/list`` become the client's known roots.
    ``method`` must be one of :data:`QUESTIONS`.
    """
    kind = QUESTIONS[method][0]
    if kind == "roots":
        list_roots = _present(client.roots_provider, kind, missing)

        def answer_roots(params: Any) -> WireModel:
            return ListRootsResult(roots=client.read_roots(list_roots))

        return answer_roots
    if kind == "sampling":
        return _present(client.sampling_provider, kind, missing)
    elicit = _present(client.elicitation_provider, kind, missing)
    url_mode = bool(getattr(elicit, "url_mode", False))

    def answer(params: ElicitRequestFormParams | ElicitRequestURLParams) -> WireModel:
        if isinstance(params, ElicitRequestURLParams):
            if not url_mode:
                raise MCPError(MCP_CODES.INVALID_PARAMS, "this client does not support URL-mode elicitation")
            return elicit(params)  # type: ignore[arg-type]  # a provider with url_mode takes both
        result = elicit(params)
        return with_schema_defaults(result, params) if client.elicitation_defaults else result

    return answer


def elicitation_capability(provider: object | None) -> ElicitationCapability | None:
    """What a client with elicitation ``provider`` declares: form mode, and URL mode when the provider takes it.

    >>> elicitation_capability(None) is None, elicitation_capability(print).to_wire()
    (True, {'form': {}})
    """
    if provider is None:
        return None
    return ElicitationCapability(form={}, url={} if getattr(provider, "url_mode", False) else None)


def sampling_capability(provider: object | None) -> SamplingCapability | None:
    """What a client with sampling ``provider`` declares: sampling, with tools when the provider takes them.

    A provider that can pass the request's ``tools`` to its model says so
    with a true ``supports_tools`` attribute (as :class:`mcp_sync.llm.OpenAISampling` does).

    >>> sampling_capability(None) is None, sampling_capability(print).to_wire()
    (True, {})
    >>> class WithTools:
    ...     supports_tools = True
    >>> sampling_capability(WithTools()).to_wire()
    {'tools': {}}
    """
    if provider is None:
        return None
    return SamplingCapability(tools={} if getattr(provider, "supports_tools", False) else None)


def with_schema_defaults(result: ElicitResult, params: ElicitRequestFormParams) -> ElicitResult:
    """An accepted form's ``content`` with each field it leaves out set to the requested schema's default (SEP-1034).

    What the provider answered wins; a declined or cancelled form is left as is.

    >>> from mcp_sync.types import ElicitRequestedSchema, StringSchema, BooleanSchema
    >>> schema = ElicitRequestedSchema(
    ...     properties={"region": StringSchema(default="eu"), "confirm": BooleanSchema(default=True)}
    ... )
    >>> form = ElicitRequestFormParams(message="Where?", requested_schema=schema)
    >>> with_schema_defaults(ElicitResult(action="accept", content={"region": "us"}), form).content
    {'region': 'us', 'confirm': True}
    """
    if result.action != "accept":
        return result
    defaults = {name: field.default for name, field in params.requested_schema.properties.items()}
    filled = {name: value for name, value in defaults.items() if value is not None}
    return result.model_copy(update={"content": {**filled, **(result.content or {})}})
