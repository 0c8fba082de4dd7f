"""OpenTelemetry spans for MCP requests, named after OpenTelemetry's MCP semantic conventions.

Every request a dispatcher sends gets a span of kind ``CLIENT`` that lasts
until its answer arrives (or it fails); every request it receives gets a span
of kind ``SERVER`` around its handler, which runs with that span current, so
requests the handler makes in turn continue the same trace. The W3C trace
context travels in the request's ``params._meta`` under ``traceparent`` (and
``tracestate``): the sender injects it, the receiver makes its span a child
of it. Spans are named ``"{mcp.method.name} {target}"`` (the tool or prompt
name; the method alone otherwise) and carry ``mcp.method.name``,
``jsonrpc.request.id``, ``gen_ai.tool.name`` and ``gen_ai.operation.name``
(``tools/call``), ``mcp.resource.uri`` (``resources/read``),
``gen_ai.prompt.name`` (``prompts/get``), ``mcp.session.id`` and
``network.transport`` where the transport knows them, and ``error.type`` on
failure (the JSON-RPC error code, ``tool_error`` for a tool result with
``isError``, or the exception's type).

mcp_sync uses the OpenTelemetry *API* only; an application exports spans by
installing an SDK ``TracerProvider``::

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())

Until one is installed, :func:`active_tracer` returns ``None`` and each
request pays for one function call and one global read, nothing more; and
until the application imports ``opentelemetry.trace`` (it must, to install
one) or names one in ``OTEL_PYTHON_TRACER_PROVIDER``, ``opentelemetry`` is
not imported at all.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .telemetry import package_version, provider_named_in_environment

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["TRACER_NAME", "activate", "active_tracer", "deactivate", "end_span", "inject", "result_error", "start_span"]

TRACER_NAME = "mcp_sync"
"""Instrumentation scope name of every mcp_sync span."""

_api: Any = None
"""``opentelemetry.trace``, once imported (not at this module's import)."""
_cached: tuple[object, Tracer | None] = (object(), None)
"""The provider last seen and its tracer (``None`` for the API's no-op and proxy providers)."""


def active_tracer() -> Tracer | None:
    """The tracer of the global tracer provider, or ``None`` while none is configured.

    The provider is read on every call (one module global: the API's own
    ``get_tracer_provider()`` reads the environment each time until one is
    set, which would cost a microsecond per request) and its type checked
    only when it changes, so installing one later takes effect at the next
    request.
    """
    api = _api
    if api is None:
        api = _load()
        if api is None:
            return None
    provider = api._TRACER_PROVIDER
    if provider is None:
        return None
    cached = _cached
    if cached[0] is not provider:
        cached = _remember(api, provider)
    return cached[1]


def _load() -> Any:
    """``opentelemetry.trace`` once a provider may be configured; ``None`` (and nothing imported) while the
    application has not imported it and the environment names no provider."""
    global _api
    if "opentelemetry.trace" not in sys.modules and not provider_named_in_environment("OTEL_PYTHON_TRACER_PROVIDER"):
        return None
    from opentelemetry import trace

    trace.get_tracer_provider()  # installs the provider OTEL_PYTHON_TRACER_PROVIDER names, if it names one
    _api = trace
    return trace


def _remember(api: Any, provider: Any) -> tuple[object, Tracer | None]:
    global _cached

    idle = isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider))
    _cached = (provider, None if idle else provider.get_tracer(TRACER_NAME, package_version()))
    return _cached


def _target(method: str, params: Mapping[str, Any], attributes: dict[str, Any]) -> str:
    """The span's name, filling in the attributes that depend on the method."""
    if method == "tools/call":
        name = params.get("name")
        if isinstance(name, str):
            attributes["gen_ai.tool.name"] = name
            attributes["gen_ai.operation.name"] = "execute_tool"
            return f"{method} {name}"
    elif method == "prompts/get":
        name = params.get("name")
        if isinstance(name, str):
            attributes["gen_ai.prompt.name"] = name
            return f"{method} {name}"
    elif method == "resources/read":
        uri = params.get("uri")
        if isinstance(uri, str):
            attributes["mcp.resource.uri"] = uri
    return method


def start_span(
    tracer: Tracer,
    *,
    server: bool,
    method: str,
    request_id: Any,
    params: Mapping[str, Any],
    transport: object,
) -> Span:
    """Start the span of one request (``server``: one received, else one sent).

    A received request's span is the child of the trace context in its
    ``_meta``; a sent request's span is the child of the current one.
    """
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    attributes: dict[str, Any] = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
    name = _target(method, params, attributes)
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str):
        attributes["mcp.session.id"] = session_id
    network = getattr(transport, "network_transport", None)
    if isinstance(network, str):
        attributes["network.transport"] = network
    if server:
        meta = params.get("_meta")
        # Without a trace context the span starts a trace (or joins the current one), as the official SDK does.
        parent = propagate.extract(meta) if isinstance(meta, dict) and "traceparent" in meta else None
        return tracer.start_span(name, parent, SpanKind.SERVER, attributes)
    return tracer.start_span(name, None, SpanKind.CLIENT, attributes)


def inject(span: Span, meta: dict[str, Any]) -> None:
    """Write ``span``'s trace context (``traceparent``, ``tracestate``) into a request's ``_meta``."""
    from opentelemetry import propagate, trace

    propagate.inject(meta, trace.set_span_in_context(span))


def end_span(span: Span, error_type: str | None) -> None:
    """End ``span``, marked failed with ``error.type`` when ``error_type`` is given."""
    if error_type is not None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def result_error(method: str, result: Mapping[str, Any]) -> str | None:
    """``tool_error`` for a ``tools/call`` result that reports a failed tool, else ``None``."""
    return "tool_error" if method == "tools/call" and result.get("isError") is True else None


def activate(span: Span) -> object:
    """Make ``span`` the current one on this thread; returns the token :func:`deactivate` takes."""
    from opentelemetry import context, trace

    return context.attach(trace.set_span_in_context(span))


def deactivate(token: object) -> None:
    """Undo :func:`activate`."""
    from opentelemetry import context

    context.detach(token)  # type: ignore[arg-type]
