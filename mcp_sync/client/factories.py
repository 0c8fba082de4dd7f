"""A client joined to a server process or a URL: what ``MCPClient.stdio`` and ``MCPClient.http`` do.

The transports below know nothing of the client; the functions here make
the transport, connect the client given to them, and restate a failure to
connect so that it names what was reached (the command and what it
printed, or the URL). This module imports the client only for typing, so
the client's classmethods can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from ..protocol.errors import MCPError
from ..protocol.types import (
    CallToolResult,
    DiscoverResult,
    InitializeRequestParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
)
from ..protocol.types.lazy import build
from ..transports.stdio import ProcessTransport

if TYPE_CHECKING:
    import requests
    import requests.auth

    from .core import MCPClient

# The HTTP transports, ``requests`` and OAuth are imported by open_url, when a URL is
# opened: a client of a server process (``mcp-sync call "python server.py" ...``) loads none of them.

__all__ = ["FIRST_MODELS", "TransportKind", "build_first_models", "open_process", "open_url"]

TransportKind = Literal["auto", "streamable", "sse"]

_FALLBACK_STATUSES = (400, 404, 405)
"""Statuses of the initialize POST after which ``auto`` tries the 2024-11-05 transport."""


FIRST_MODELS = (
    InitializeRequestParams,
    InitializeResult,
    DiscoverResult,
    PaginatedRequestParams,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    CallToolResult,
)
"""The models a connection sends and reads first, in either era: the negotiation, the lists, a tool's result."""


def build_first_models() -> None:
    """Build :data:`FIRST_MODELS` now (a few milliseconds in all), while a server process starts.

    Built at their first use, they would be built once the server has
    answered, on the way from its start to the client's first result (which
    ``mcp-sync call`` and every stdio connection wait for); built meanwhile,
    on the client's core while the server starts on another, they cost no
    time there.
    """
    build(*FIRST_MODELS)


def open_process(client: MCPClient, transport: ProcessTransport, *, connect_timeout: float | None = 30.0) -> MCPClient:
    """Connect ``client`` to the server process of ``transport``; ``client`` is returned.

    Failing to start or to complete the handshake within ``connect_timeout``
    raises an error that names the command, with what the process said on
    stderr (and wrote to stdout, if that was not JSON).
    """
    try:
        client.connect(transport, timeout=connect_timeout)
    except MCPError as exc:
        details = []
        if transport.last_invalid_line is not None:
            details.append(f"it wrote non-JSON to stdout: {transport.last_invalid_line!r}")
        if transport.stderr_tail and "stderr:" not in exc.message:
            details.append("stderr:\n" + "\n".join(transport.stderr_tail))
        where = f"server `{transport.command_line}`"
        raise _restated(exc, where, "; ".join([exc.message, *details]), command=transport.command_line) from exc
    return client


def open_url(
    client: MCPClient,
    url: str,
    *,
    transport: TransportKind = "auto",
    session: requests.Session | None = None,
    headers: Mapping[str, str] | None = None,
    auth: requests.auth.AuthBase | Literal["oauth"] | None = None,
    connect_timeout: float | None = 30.0,
) -> MCPClient:
    """Connect ``client`` to the MCP server at ``url`` over HTTP; ``client`` is returned.

    ``transport`` is ``"streamable"`` (Streamable HTTP), ``"sse"`` (the
    HTTP+SSE transport of 2024-11-05) or ``"auto"``: Streamable HTTP, and if
    the server answers the initialize POST with 400, 404 or 405, HTTP+SSE at
    the same URL. ``session``, ``headers`` and ``auth`` go to :mod:`requests`;
    ``auth="oauth"`` is :class:`~mcp_sync.client.auth.OAuth` with its defaults.
    Failing to connect within ``connect_timeout`` raises an error naming the URL.
    With OAuth and no tokens yet, the limit grows by the sign-in's own bound:
    the first request may wait for a person to sign in.
    """
    if transport not in ("auto", "streamable", "sse"):
        raise ValueError(f"transport must be 'auto', 'streamable' or 'sse', not {transport!r}")
    from .auth.oauth import OAuth

    if auth == "oauth":
        auth = OAuth()
    grace = 0.0
    if isinstance(auth, OAuth) and auth.interaction is not None and auth.tokens(url) is None:
        # The first request may wait for a person to sign in: the handshake's limits grow by the sign-in's.
        grace = auth.interaction_timeout
        connect_timeout = None if connect_timeout is None else connect_timeout + grace
    client.probe_timeout += grace
    try:
        return _open_url(client, url, transport, session, headers, auth, connect_timeout)
    finally:
        client.probe_timeout -= grace


def _open_url(
    client: MCPClient,
    url: str,
    transport: TransportKind,
    session: requests.Session | None,
    headers: Mapping[str, str] | None,
    auth: requests.auth.AuthBase | None,
    connect_timeout: float | None,
) -> MCPClient:
    from ..transports.http.sse import SSEClientTransport
    from ..transports.http.streamable import StreamableHTTPClientTransport

    where = f"the MCP server at {url}"
    first: MCPError | None = None
    if transport != "sse":
        streamable = StreamableHTTPClientTransport(url, session=session, headers=headers, auth=auth)
        try:
            client.connect(streamable, timeout=connect_timeout)
            return client
        except MCPError as exc:
            if transport == "streamable" or streamable.initialize_status not in _FALLBACK_STATUSES:
                raise _restated(exc, where, exc.message, url=url) from exc
            first = exc
    try:
        legacy = SSEClientTransport(url, session=session, headers=headers, auth=auth, connect_timeout=connect_timeout)
        client.connect(legacy, timeout=connect_timeout)
    except MCPError as exc:
        before = f"Streamable HTTP failed ({first.message}), then HTTP+SSE failed: " if first is not None else ""
        raise _restated(exc, where, before + exc.message, url=url) from exc
    return client


def _restated(error: MCPError, where: str, detail: str, **context: str) -> MCPError:
    """``error`` from connecting, restated to name ``where`` the client tried to connect; same code and class."""
    return type(error)(
        error.code,
        f"could not connect to {where}: {detail}",
        cause=error,
        context={**error.context, **context},
        data=error.data,
    )
