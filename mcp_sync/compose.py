"""Proxies and composition: an :class:`~mcp_sync.server.MCPServer` that serves another MCP server, on any transport.

:func:`proxy` connects to a target (a URL, a command line or an
``MCPServer``) as a client and returns a server whose tools, resources,
templates and prompts are the target's, kept live, and whose calls are
forwarded to it. Serve it like any server: ``serve_stdio()``, ``start()``,
or the HTTP app.

>>> import mcp_sync
>>> backend = mcp_sync.MCPServer("backend")
>>> _ = backend.register_tool("hello", lambda args, ctx: "hi " + args["name"])
>>> with mcp_sync.proxy(backend) as front:
...     [tool.name for tool in front.list_tools()], front.invoke_tool("hello", {"name": "Ada"}).text
(['hello'], 'hi Ada')

What passes through, and how:

* lists: the target's list-changed notifications (unasked in the handshake
  era, on a ``subscriptions/listen`` stream in 2026-07-28) make the proxy
  list again, then tell its own clients;
* calls: progress goes back to the calling client, its cancellation
  cancels the upstream call, and the target's log messages reach the
  client whose call is in flight (all clients, when none is);
* the target's sampling, elicitation and roots requests are relayed to the
  client whose call is in flight, through that call's context (in 2026-07-28
  on either side they become input-required rounds, answered on the retry);
* an upstream that dies fails the calls in flight at once with its
  ``TRANSPORT_CLOSED`` error; the next call connects again (a command is
  started again), and the downstream sessions stay open.

Each side speaks its own era: the upstream client negotiates with the
target, the proxy serves both eras to its clients. One upstream connection
is shared by every downstream session. While several calls are in flight
at once, a handshake-era target's question (which does not say which call
it belongs to) goes to the client of the latest call; with a 2026-07-28
target the question travels with its call and always reaches the right one.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .client.core import MCPClient
from .connect import connect
from .protocol.errors import MCP_CODES, MCPError, MCPTransportError
from .protocol.types import (
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    GetPromptResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
    Tool,
)
from .runtime.dispatcher import RequestContext, acting_for, current_request
from .server.auth import AuthInfo
from .server.context import NO_CLIENT, ClientChannel, Context, ProgressReporter
from .server.core import MCPServer
from .server.stateless import InputRequired

__all__ = ["ProxyServer", "ServerGroup", "configured_servers", "connect_all", "proxy", "server_target"]

log = logging.getLogger("mcp_sync.compose")

_T = TypeVar("_T")
_KINDS = ("tools", "resources", "prompts")
_CHANGES = {f"notifications/{kind}/list_changed": kind for kind in _KINDS}
_STOP = ""
"""Put on the change queue by close(): the list worker ends."""
_JOIN_TIMEOUT = 10.0
"""The longest close() waits for the list worker to finish its current listing (seconds)."""


@dataclass(frozen=True, eq=False)
class _Call:
    """A downstream call being forwarded: its handler context, and its request (what it sends travels with)."""

    ctx: Context
    request: RequestContext | None

    @contextlib.contextmanager
    def speaking(self) -> Iterator[Context]:
        """On any thread: send to the calling client as its handler would (over HTTP, on that request's stream)."""
        with acting_for(self.request):
            yield self.ctx


class _InFlight:
    """The downstream calls being forwarded, to relay the target's questions and logs to the right client.

    A question asked on the thread making the call (a 2026-07-28 target's
    input requests are answered there) goes to that call; one asked on a
    reader thread (a handshake-era target's requests) to the latest call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[_Call] = []
        self._local = threading.local()
        self.deferred: dict[int, InputRequired] = {}
        """By id() of a call: the downstream's own input round, met on a reader thread."""

    @contextlib.contextmanager
    def serving(self, ctx: Context) -> Iterator[_Call]:
        call = _Call(ctx, current_request())  # on the handler's thread: its request
        with self._lock:
            self._calls.append(call)
        self._local.call = call
        try:
            yield call
        finally:
            self._local.call = None
            with self._lock:
                self._calls.remove(call)
                deferred = self.deferred.pop(id(call), None)
            if deferred is not None:
                # A 2026-07-28 downstream must answer first: the upstream call was refused; ask it.
                raise deferred

    def current(self) -> _Call | None:
        call: _Call | None = getattr(self._local, "call", None)
        if call is not None:
            return call
        with self._lock:
            return self._calls[-1] if self._calls else None

    def on_own_thread(self, call: _Call) -> bool:
        return getattr(self._local, "call", None) is call


class ProxyServer(MCPServer):
    """An :class:`MCPServer` serving a target server's tools, resources, templates and prompts.

    Made by :func:`proxy`; see :mod:`mcp_sync.compose` for what passes through.
    Tools, resources and prompts registered on the proxy itself are served
    beside the target's (the target's win a name clash for tools and
    prompts; a URI is looked up here first). :meth:`close` stops serving and
    closes the upstream connection.
    """

    def __init__(
        self,
        target: str | Sequence[str] | MCPServer,
        *,
        name: str | None = None,
        connect_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.target = target
        self._connect_options = dict(connect_options or {})
        self._in_flight = _InFlight()
        self._upstream_lock = threading.Lock()
        self._closed = False
        self._snapshot: dict[str, list[Any]] = {}
        self._changes: queue.SimpleQueue[str] = queue.SimpleQueue()
        upstream = self._open()  # a target that cannot be reached fails here, before anything is served
        peer = upstream.server_info
        said = upstream.initialize_result or upstream.discover_result  # one of them, by the era
        instructions = said.instructions if said is not None else None
        super().__init__(name or peer.name, peer.version, title=peer.title, instructions=instructions)
        # Always the latest connection, even once closed: a listing then fails like any other (no None to test).
        self._upstream = upstream
        self._worker = threading.Thread(target=self._watch, name="mcp-sync-proxy-lists", daemon=True)
        self._worker.start()

    # ---------------------------------------------------------- upstream

    def _open(self) -> MCPClient:
        """A new upstream connection, its lists read and its list changes watched."""
        client = connect(
            self.target,
            sampling_provider=self._sample,
            elicitation_provider=self._elicit,
            roots_provider=self._client_roots,
            log_handler=self._log,
            log_level="debug",  # everything: each downstream session filters at its own level
            **self._connect_options,
        )
        with contextlib.ExitStack() as undo:
            undo.callback(client.close)  # unless the watching below is set up
            if client.negotiated_era == "stateless":
                # The stream ends with the connection; nothing else needs to close it.
                client.listen(tools=True, prompts=True, resources=True, on_notification=self._on_stream)
            else:
                for method in _CHANGES:
                    client.on_notification(method, functools.partial(self._on_stream, method))
            undo.pop_all()
        # What connecting listed (the client fills its caches as it connects), from now on kept live.
        self._snapshot = {
            "tools": client.tools(),
            "resources": client.resources(),
            "templates": client.resource_templates(),
            "prompts": client.prompts(),
        }
        return client

    def _on_stream(self, method: str, params: dict[str, Any]) -> None:
        """On a reader thread: hand the list change to the list worker (listing here would block the reader)."""
        self._changes.put(_CHANGES[method])  # only list changes were asked for

    def _read_list(self, client: MCPClient, kind: str) -> None:
        """List ``kind`` of the target again into the snapshot the listings serve."""
        if kind == "tools":
            self._snapshot["tools"] = client.refresh_tools()
        elif kind == "prompts":
            self._snapshot["prompts"] = client.refresh_prompts()
        else:
            self._snapshot["resources"] = client.refresh_resources()
            self._snapshot["templates"] = _templates(client)

    def _watch(self) -> None:
        """The list worker: on each upstream list change, list again, then tell the downstream sessions."""
        while True:
            kind = self._changes.get()
            if kind == _STOP:
                return
            self._relist(kind)

    def _relist(self, kind: str) -> None:
        try:
            self._read_list(self._upstream, kind)
        except MCPError as exc:
            # The upstream went away meanwhile: the next call connects again and lists everything.
            log.warning("the proxy could not list the target's %s again: %s", kind, exc)
            return
        self._list_changed(kind)

    def upstream(self) -> MCPClient:
        """The connection to the target, opened again first if it ended (the target died, or was stopped).

        After a reconnection the lists are read again and the downstream sessions told.
        """
        with self._upstream_lock:
            if self._closed:
                raise MCPError(MCP_CODES.TRANSPORT_CLOSED, "the proxy is closed")
            current = self._upstream
            if current.initialized:
                return current
            current.close()
            self._upstream = fresh = self._open()
        for kind in _KINDS:
            self._list_changed(kind)
        return fresh

    def close(self) -> None:
        """Stop serving, close the upstream connection and end the list worker. Idempotent."""
        self.stop()
        with self._upstream_lock:
            closing, self._closed = not self._closed, True
        if closing:
            self._upstream.close()  # first: a listing in progress fails at once, and the worker is free
            self._changes.put(_STOP)
            self._worker.join(_JOIN_TIMEOUT)

    def __enter__(self) -> ProxyServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------- the target's requests

    def _caller(self, what: str) -> _Call:
        call = self._in_flight.current()
        if call is None:
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, f"no client call is in flight through the proxy to {what}")
        return call

    def _relay(self, call: _Call, ask: Callable[[ClientChannel], _T]) -> _T:
        """``ask`` the calling client; a 2026-07-28 round met on a reader thread is kept for the call."""
        try:
            with call.speaking() as ctx:
                return ask(ctx.channel)
        except InputRequired as needed:
            if self._in_flight.on_own_thread(call):
                raise  # through the upstream call, which it ends, to the downstream session
            self._in_flight.deferred[id(call)] = needed
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the downstream client answers in its next round") from None

    def _sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        return self._relay(self._caller("sample"), lambda channel: channel.create_message(params, None, None))

    def _elicit(self, params: ElicitRequestFormParams) -> ElicitResult:
        return self._relay(self._caller("elicit"), lambda channel: channel.elicit(params, None, None))

    def _client_roots(self) -> list[Root]:
        call = self._in_flight.current()
        if call is None:
            return []  # asked at connect, or between calls: no client to ask
        return self._relay(call, lambda channel: channel.list_roots(None, None)).roots

    def _log(self, params: LoggingMessageNotificationParams) -> None:
        call = self._in_flight.current()
        if call is None:
            self.log(params.level, params.data, params.logger)
            return
        with call.speaking() as ctx:
            ctx.log(params.level, params.data, params.logger)

    @contextlib.contextmanager
    def _forwarding(self, ctx: Context) -> Iterator[tuple[_Call, MCPClient]]:
        """Forward one call: the upstream connection (opened again if it ended), the call known as in flight.

        An upstream connection that fails is said as such: over the wire its
        code would read as a plain internal error, so ``data["upstream"]`` names it.
        """
        with self._in_flight.serving(ctx) as call:
            try:
                yield call, self.upstream()
            except MCPTransportError as exc:
                raise MCPError(
                    exc.code,
                    f"the proxy's target is unreachable: {exc.message}",
                    data={"upstream": exc.code},
                    cause=exc,
                ) from exc

    # -------------------------------------------------------------- listings

    def list_tools(self, auth: AuthInfo | None = None) -> list[Tool]:
        """The target's tools as last listed, then the proxy's own."""
        return [*self._snapshot["tools"], *super().list_tools(auth)]

    def get_tool(self, name: str) -> Tool | None:
        """The target's tool ``name`` (as last listed), else the proxy's own, else ``None``."""
        return next((tool for tool in self._snapshot["tools"] if tool.name == name), None) or super().get_tool(name)

    def list_resources(self, auth: AuthInfo | None = None) -> list[Resource]:
        """The proxy's own resources, then the target's as last listed."""
        return [*super().list_resources(auth), *self._snapshot["resources"]]

    def list_resource_templates(self, auth: AuthInfo | None = None) -> list[ResourceTemplate]:
        """The proxy's own resource templates, then the target's as last listed."""
        return [*super().list_resource_templates(auth), *self._snapshot["templates"]]

    def list_prompts(self, auth: AuthInfo | None = None) -> list[Prompt]:
        """The target's prompts as last listed, then the proxy's own."""
        return [*self._snapshot["prompts"], *super().list_prompts(auth)]

    # ----------------------------------------------------------------- calls

    def invoke_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressReporter | None = None,
        context: Context | None = None,
    ) -> CallToolResult:
        """Call the target's tool ``name`` (the proxy's own if the target has none by that name).

        Errors of the upstream connection (``TRANSPORT_CLOSED``, a timeout)
        are raised as they are, not turned into a tool error.
        """
        if not any(tool.name == name for tool in self._snapshot["tools"]):
            return super().invoke_tool(name, arguments, cancel=cancel, progress=progress, context=context)
        ctx = context or Context(cancelled=cancel, progress=progress, server=self, channel=NO_CLIENT)

        with self._forwarding(ctx) as (call, upstream):

            def forward_progress(params: ProgressNotificationParams) -> None:
                with call.speaking():
                    ctx.progress(params.progress, params.total, params.message)

            return upstream.call_tool(name, arguments, cancel=ctx.cancelled, on_progress=forward_progress)

    def read_resource(self, uri: str, *, context: Context | None = None) -> ReadResourceResult:
        """Read ``uri``: one of the proxy's own resources, else the target's."""
        try:
            return super().read_resource(uri, context=context)
        except MCPError as exc:
            if exc.code != MCP_CODES.NOT_FOUND:
                raise
        ctx = context or Context(server=self, channel=NO_CLIENT)
        with self._forwarding(ctx) as (_, upstream):
            try:
                return upstream.read_resource(uri, cancel=ctx.cancelled)
            except MCPError as exc:
                if exc.code != MCP_CODES.INVALID_PARAMS:
                    raise
                # A 2026-07-28 target says "no such resource" with -32602 (the only param is the URI): raised
                # as NOT_FOUND, each downstream era gets its own code for it (-32002 in the handshake era).
                raise MCPError(MCP_CODES.NOT_FOUND, exc.message, context={"uri": uri}, cause=exc) from exc

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, context: Context | None = None
    ) -> GetPromptResult:
        """Render the target's prompt ``name`` (the proxy's own if the target has none by that name)."""
        if not any(prompt.name == name for prompt in self._snapshot["prompts"]):
            return super().get_prompt(name, arguments, context=context)
        ctx = context or Context(server=self, channel=NO_CLIENT)
        with self._forwarding(ctx) as (_, upstream):
            return upstream.get_prompt(name, arguments, cancel=ctx.cancelled)

    def complete(self, params: CompleteRequestParams, context: Context | None = None) -> CompleteResult:
        """The target's completions (a target without completion refuses, as it would directly)."""
        given = params.context.arguments if params.context is not None else None
        argument = params.argument
        return self.upstream().complete(params.ref, argument.name, argument.value, context=given)


def _templates(client: MCPClient) -> list[ResourceTemplate]:
    """The target's resource templates (a server without the method has none: the client knows that case)."""
    client._refresh_templates_if_served()  # the client's own rule, not a second copy of it
    return client.resource_templates()


def proxy(target: str | Sequence[str] | MCPServer, *, name: str | None = None, **connect_options: Any) -> ProxyServer:
    """A server serving ``target``'s tools, resources, templates and prompts, forwarding every call to it.

    ``target`` is what :func:`mcp_sync.connect` takes (a URL, a command line,
    an ``MCPServer``), as are ``connect_options`` (``headers``, ``auth``,
    ``env``, ``timeout``, ``era`` ...; the providers and ``log_handler`` are
    the proxy's own). ``name`` defaults to the target's. The target is
    connected to at once: one that cannot be reached raises here. Close the
    proxy (or use it in a ``with`` block) to close the upstream connection.

    >>> import mcp_sync
    >>> backend = mcp_sync.MCPServer("weather")
    >>> _ = backend.register_tool("forecast", lambda args, ctx: "sunny")
    >>> with mcp_sync.proxy(backend, name="front") as front, mcp_sync.connect(front) as client:
    ...     client.server_info.name, client.call_tool("forecast").text
    ('front', 'sunny')
    """
    return ProxyServer(target, name=name, connect_options=connect_options)


def configured_servers(config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """The ``mcpServers`` entries of ``config`` (a mapping, or the path of a JSON file), by name.

    >>> configured_servers({"mcpServers": {"web": {"url": "http://127.0.0.1:8000/mcp"}}})
    {'web': {'url': 'http://127.0.0.1:8000/mcp'}}
    """
    read: Mapping[str, Any] = (
        config if isinstance(config, Mapping) else json.loads(Path(config).read_text(encoding="utf-8"))
    )
    return dict(read["mcpServers"])


def server_target(name: str, entry: Mapping[str, Any]) -> tuple[str | list[str], dict[str, Any]]:
    """What :func:`mcp_sync.connect` takes for one ``mcpServers`` entry: the target and its options.

    >>> server_target("files", {"command": "npx", "args": ["-y", "files-server"], "env": {"ROOT": "/srv"}})
    (['npx', '-y', 'files-server'], {'env': {'ROOT': '/srv'}, 'inherit_env': True})
    >>> server_target("web", {"url": "https://mcp.example.com/mcp"})
    ('https://mcp.example.com/mcp', {'headers': None})
    """
    if "url" in entry:
        return entry["url"], {"headers": entry.get("headers")}
    if "command" in entry:
        return [entry["command"], *entry.get("args", ())], {"env": entry.get("env"), "inherit_env": True}
    raise ValueError(f"mcpServers entry {name!r} has neither a command nor a url")


class ServerGroup:
    """Several connected servers used as one (made by :func:`connect_all`).

    :meth:`tools` lists every server's tools, each named ``SERVER_tool``;
    :meth:`call_tool` sends a call so named to its server. ``clients`` holds
    the connected servers' clients by name, ``failures`` what kept the
    others from starting. :meth:`close` (or the end of a ``with`` block)
    closes them all.
    """

    def __init__(self, clients: Mapping[str, MCPClient], failures: Mapping[str, Exception]) -> None:
        self.clients = dict(clients)
        self.failures = dict(failures)

    def __getitem__(self, name: str) -> MCPClient:
        """The client of the server ``name`` (``KeyError`` if it is not connected)."""
        return self.clients[name]

    def tools(self) -> list[Tool]:
        """Every connected server's tools (as its client last listed them), named ``SERVER_tool``."""
        return [
            tool.model_copy(update={"name": f"{server}_{tool.name}"})
            for server, client in self.clients.items()
            for tool in client.tools()
        ]

    def route(self, name: str) -> tuple[MCPClient, str]:
        """The client and the tool's own name for ``SERVER_tool``; ``NOT_FOUND`` when no server has it."""
        for server, client in self.clients.items():
            tool = name.removeprefix(f"{server}_")
            if tool != name and any(known.name == tool for known in client.tools()):
                return client, tool
        raise MCPError(MCP_CODES.NOT_FOUND, f"no connected server has the tool {name!r}", context={"tool": name})

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, **options: Any) -> CallToolResult:
        """Call ``SERVER_tool`` on its server; ``options`` as :meth:`MCPClient.call_tool` takes them."""
        client, tool = self.route(name)
        return client.call_tool(tool, arguments, **options)

    def close(self) -> None:
        """Close every connection. Idempotent."""
        for client in self.clients.values():
            client.close()

    def __enter__(self) -> ServerGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def connect_all(
    config: Mapping[str, Any] | str | os.PathLike[str], *, connect_timeout: float | None = 30.0, **options: Any
) -> ServerGroup:
    """Connect to every server of an ``mcpServers`` configuration, at once; one object for them all.

    ``config`` is the JSON form desktop apps and editors use (a mapping, or
    the path of a JSON file): ``{"mcpServers": {NAME: {"command": ...,
    "args": [...], "env": {...}}, NAME: {"url": ..., "headers": {...}}}}``.
    A server that fails to start is logged and kept in ``failures``; the
    others work. ``options`` go to :func:`mcp_sync.connect` for each server.
    An entry with neither ``command`` nor ``url`` raises ``ValueError``.

    >>> import mcp_sync, sys
    >>> config = {"mcpServers": {"echo": {"command": sys.executable, "args": ["examples/echo_server.py"]}}}
    >>> with mcp_sync.connect_all(config) as servers:
    ...     servers.call_tool("echo_echo", {"text": "hi"}).text
    'hi'
    """
    targets = {name: server_target(name, entry) for name, entry in configured_servers(config).items()}
    clients: dict[str, MCPClient] = {}
    failures: dict[str, Exception] = {}
    # Started side by side: a server slow to start (npx installing, say) delays none of the others.
    with concurrent.futures.ThreadPoolExecutor(max(1, len(targets)), thread_name_prefix="mcp-sync-connect") as pool:
        started = {
            name: pool.submit(connect, target, connect_timeout=connect_timeout, **kind, **options)
            for name, (target, kind) in targets.items()
        }
        for name, future in started.items():
            try:
                clients[name] = future.result()
            except Exception as exc:
                log.warning("the MCP server %r did not start: %s", name, exc)
                failures[name] = exc
    return ServerGroup(clients, failures)
