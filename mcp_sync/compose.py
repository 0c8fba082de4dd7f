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
  client whose call is in flight (all clients, when none is; none, when
  the proxy cannot tell which of several clients' calls it belongs to);
* the target's sampling, elicitation and roots requests are relayed to the
  client whose call they belong to, through that call's context (in
  2026-07-28 on either side they become input-required rounds, answered on
  the retry); see below for how that call is found;
* an upstream that dies fails the calls in flight at once with its
  ``TRANSPORT_CLOSED`` error; the next call connects again (a command is
  started again), and the downstream sessions stay open.

* resource subscriptions: a client's subscription is made upstream, and the
  target's updates reach the clients that subscribed (also through a
  server the proxy is mounted in); a client's roots list change is told to
  the target, which is then given that client's roots. Between calls, a
  shared connection gives the target the union of the roots of every
  handshake-era client that has some, as last asked: each client is asked
  on its own as it connects and as its roots change (see
  :data:`ROOTS_TIMEOUT`), and the target told of the change (not of
  sessions coming and going). A URI the proxy serves itself (a server
  mounted in it) stays with the proxy: its mounts hear of the subscription.

Each side speaks its own era: the upstream client negotiates with the
target, the proxy serves both eras to its clients. Each downstream session
has an upstream connection of its own (opened at its first request, closed
as it ends); ``shared=True`` has one serve them all. Sessions of a single
request (a 2026-07-28 request over HTTP), the clients of a server the proxy
is mounted in and local calls use the proxy's own connection. A question
of a 2026-07-28 target travels with its call and always reaches the right
client. A handshake-era target's question goes to the call it relates to
when the transport says which: Streamable HTTP sends it on the response
stream of that tool call, resource read or prompt. When nothing relates it
(stdio never does: its wire has no field for it), it goes to the calling
client only while the calls in flight on the connection are all that one
client's; with calls of several clients in flight it is refused (a JSON-RPC
error to the target saying why) rather than put to a client that may not be
the one asked, except ``roots/list`` on a shared connection, which is
answered with every client's roots as between calls.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
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
from .runtime.dispatcher import ProgressCallback
from .runtime.request_context import RequestContext, acting_for, current_request
from .server.authorization import AuthInfo
from .server.backend import Notice
from .server.context import NO_CLIENT, ClientChannel, Context, ProgressReporter
from .server.core import MCPServer
from .server.session import HANDSHAKE_WAIT, ServerSession
from .server.stateless import InputRequired

__all__ = ["ProxyServer", "ServerGroup", "configured_servers", "connect_all", "proxy", "server_target"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_KINDS = ("tools", "resources", "prompts")
_CHANGES = {f"notifications/{kind}/list_changed": kind for kind in _KINDS}
_JOIN_TIMEOUT = 10.0
"""The longest close() waits for the worker to finish its current task (seconds)."""
ROOTS_TIMEOUT = 5.0
"""With ``shared=True``: the longest the proxy waits for one downstream client's roots (seconds).

Each client is asked on its own, off every lock, as it connects and as its
roots change; one that fails or does not answer in time gives no roots.
"""


@dataclass(frozen=True, eq=False)
class _Call:
    """A downstream call being forwarded: its handler context, and its request (what it sends travels with)."""

    ctx: Context
    request: RequestContext | None

    @property
    def client(self) -> object:
        """Whom the call is for: its downstream session; the call itself when that session is no one's own (a
        session serving one request at a time for any client, 2026-07-28 over HTTP) or there is none (a local call)."""
        session = self.ctx.session
        return session if session is not None and not session.per_request else self

    @contextlib.contextmanager
    def speaking(self) -> Iterator[Context]:
        """On any thread: send to the calling client as its handler would (over HTTP, on that request's stream)."""
        with acting_for(self.request):
            yield self.ctx

    def progressed(self, params: ProgressNotificationParams) -> None:
        """The upstream call's progress, for the calling client (also how a question is known to be this call's)."""
        with self.speaking() as ctx:
            ctx.progress(params.progress, params.total, params.message)


class _InFlight:
    """The downstream calls being forwarded, to relay the target's questions and logs to the right client.

    A question asked on the thread making the call (a 2026-07-28 target's
    input requests are answered there) goes to that call; a handshake-era
    target's request goes to the call it relates to (see :func:`_related`).
    When nothing relates it (stdio, or Streamable HTTP's standalone stream),
    it can only be the calling client's while the calls in flight are all one
    client's: then it goes to the latest of them; with calls of several
    clients in flight :meth:`current` refuses to guess.
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
        """The call the target's request being handled on this thread is for; ``None`` when no call is in flight.

        Raises ``MCPError`` (``MISSING_CAPABILITY``) when calls of several
        clients are in flight and nothing says which one the request is for:
        sent to the wrong one, one person's question would be put to another.
        """
        call: _Call | None = getattr(self._local, "call", None)
        if call is not None:
            return call
        related = _related()
        with self._lock:
            calls = list(self._calls)
        # Compared with ==: a bound method is made anew each time, equal while its call is the same.
        mine = [call for call in calls if call.progressed == related]
        if mine:
            return mine[0]
        clients = {id(call.client) for call in calls}
        if len(clients) > 1:
            raise MCPError(
                MCP_CODES.MISSING_CAPABILITY,
                f"the proxy cannot tell which of its clients this request is for: calls of {len(clients)} clients "
                "are in flight on its connection to the target, and nothing relates the request to one of them "
                "(over stdio nothing can)",
            )
        return calls[-1] if calls else None

    def on_own_thread(self, call: _Call) -> bool:
        return getattr(self._local, "call", None) is call


class _Link:
    """One upstream connection and what rides on it: the lists it read, the calls it carries, its subscriptions.

    ``session`` is the downstream session it serves alone; ``None`` for the
    proxy's shared one (see :class:`ProxyServer`).
    """

    def __init__(self, session: ServerSession | None) -> None:
        self.session = session
        self.lock = threading.Lock()
        """Held while the connection is opened (again) or closed."""
        self.client: MCPClient | None = None
        self.snapshot: dict[str, list[Any]] = {}
        self.in_flight = _InFlight()
        self.subscribers: dict[str, set[int]] = {}
        """By resource URI: the id() of each downstream session subscribed to it through this connection."""
        self.calls = 0
        self.ended = False
        """The downstream session ended: the connection closes once its last call returns."""
        self.closed = False


class ProxyServer(MCPServer):
    """An :class:`MCPServer` serving a target server's tools, resources, templates and prompts.

    Made by :func:`proxy`; see :mod:`mcp_sync.compose` for what passes through.
    Each downstream session gets an upstream connection of its own, opened at
    its first request and closed as it ends (``shared=False``, the default);
    with ``shared=True`` one connection serves them all. Tools, resources and
    prompts registered on the proxy itself are served beside the target's
    (the target's win a name clash for tools and prompts; a URI is looked up
    here first). :meth:`close` stops serving and closes every upstream
    connection.
    """

    def __init__(
        self,
        target: str | Sequence[str] | MCPServer,
        *,
        name: str | None = None,
        shared: bool = False,
        connect_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.target = target
        self.shared = shared
        self._connect_options = dict(connect_options or {})
        self._proxy_lock = threading.Lock()
        self._closed = False
        self._links: dict[int, _Link] = {}
        """The upstream connections of the downstream sessions served alone, by id() of the session's transport."""
        self._downstream: dict[int, ServerSession] = {}
        """This proxy's open downstream sessions, by id() of their transport (how a listing finds its session)."""
        self._work: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._roots_kept: dict[int, list[Root]] = {}
        """With shared=True: each downstream session's roots as last asked, by id() of its transport."""
        self._roots_asked: dict[int, int] = {}
        """With shared=True: by id() of a session's transport, the number of its latest ask (only that one is kept)."""
        self._asks = itertools.count()
        # Asks the downstream clients for their roots (shared=True), side by side: a slow one delays no other.
        self._asking = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="mcp-sync-proxy-roots")
        self._shared = _Link(None)
        # Opened at once: a target that cannot be reached fails here, before anything is served. This
        # connection serves local calls, mounts and the sessions of one request each (2026-07-28 over
        # HTTP, stateless HTTP), which have no session to keep a connection for; with shared=True, all.
        upstream = self._connection(self._shared)
        peer = upstream.server_info
        said = upstream.initialize_result or upstream.discover_result  # one of them, by the era
        instructions = said.instructions if said is not None else None
        super().__init__(name or peer.name, peer.version, title=peer.title, instructions=instructions)
        self._worker = threading.Thread(target=self._run_worker, name="mcp-sync-proxy-worker", daemon=True)
        self._worker.start()

    # ---------------------------------------------------------- upstream

    def _open(self, link: _Link) -> MCPClient:
        """A new upstream connection for ``link``: its lists read, their changes and its resource updates watched."""
        client = connect(
            self.target,
            sampling_provider=functools.partial(self._sample, link),
            elicitation_provider=functools.partial(self._elicit, link),
            roots_provider=functools.partial(self._client_roots, link),
            log_handler=functools.partial(self._log, link),
            log_level="debug",  # everything: each downstream session filters at its own level
            **self._connect_options,
        )
        with contextlib.ExitStack() as undo:
            undo.callback(client.close)  # unless the watching below is set up
            if client.negotiated_era == "stateless":
                # The stream ends with the connection; nothing else needs to close it.
                client.listen(
                    tools=True,
                    prompts=True,
                    resources=True,
                    on_notification=functools.partial(self._on_stream, link, client),
                )
            else:
                for method in _CHANGES:
                    client.on_notification(method, functools.partial(self._on_stream, link, client, method))
            client.on_notification("notifications/resources/updated", functools.partial(self._on_updated, link))
            for uri in list(link.subscribers):  # a connection opened again keeps the subscriptions
                client.subscribe_resource(uri)
            undo.pop_all()
        # What connecting listed (the client fills its caches as it connects), from now on kept live.
        link.snapshot = {
            "tools": client.tools(),
            "resources": client.resources(),
            "templates": client.resource_templates(),
            "prompts": client.prompts(),
        }
        return client

    def _connection(self, link: _Link) -> MCPClient:
        """``link``'s connection, opened first if it has none or it ended (the downstream sessions then told)."""
        with link.lock:
            if self._closed or link.closed:
                said = "the proxy is closed" if self._closed else "the downstream session ended"
                raise MCPError(MCP_CODES.TRANSPORT_CLOSED, said)
            current = link.client
            if current is not None and current.initialized:
                return current
            if current is not None:
                current.close()
            link.client = fresh = self._open(link)
        if current is not None:
            for kind in _KINDS:
                self._tell(link, kind)
        return fresh

    def _close_link(self, link: _Link) -> None:
        with link.lock:
            link.closed = True
            client = link.client
        if client is not None:
            client.close()

    def _on_stream(self, link: _Link, client: MCPClient, method: str, params: dict[str, Any]) -> None:
        """On a reader thread: hand the list change to the worker (listing here would block the reader)."""
        self._work.put(
            functools.partial(self._relist, link, client, _CHANGES[method])
        )  # only list changes were asked for

    def _on_updated(self, link: _Link, params: dict[str, Any]) -> None:
        """On a reader thread: a resource subscribed to through ``link`` changed; the worker tells its subscribers."""
        uri = str(params.get("uri"))  # a malformed one names no URI subscribed to, and reaches nobody
        self._work.put(functools.partial(self._updated, link, uri))

    def _updated(self, link: _Link, uri: str) -> None:
        with self._proxy_lock:
            wanting = set(link.subscribers.get(uri, ()))
        for session in self.sessions:
            if id(session) in wanting:
                session.resource_updated(uri)
        if link.session is None:
            for watcher in self._watchers:  # the servers this proxy is mounted in: their subscribers, by their URI
                watcher(Notice("resource_updated", uri))

    def _read_list(self, client: MCPClient, link: _Link, kind: str) -> None:
        """List ``kind`` of the target again into the snapshot the listings serve."""
        if kind == "tools":
            link.snapshot["tools"] = client.refresh_tools()
        elif kind == "prompts":
            link.snapshot["prompts"] = client.refresh_prompts()
        else:
            link.snapshot["resources"] = client.refresh_resources()
            link.snapshot["templates"] = _templates(client)

    def _run_worker(self) -> None:
        """The worker: what the reader threads hand over (listing again, telling the subscribers, roots), in order."""
        while True:
            task = self._work.get()
            if task is None:
                return
            task()

    def _relist(self, link: _Link, client: MCPClient, kind: str) -> None:
        try:
            self._read_list(client, link, kind)
        except MCPError as exc:
            # The upstream went away meanwhile: the next call connects again and lists everything.
            log.warning("the proxy could not list the target's %s again: %s", kind, exc)
            return
        self._tell(link, kind)

    def _tell(self, link: _Link, kind: str) -> None:
        """Tell the downstream sessions ``link`` serves that its ``kind`` list changed."""
        if link.session is not None:
            link.session.list_changed(kind)
            return
        for session in self._on_shared():
            session.list_changed(kind)
        for watcher in self._watchers:  # the servers this proxy is mounted in
            watcher(Notice("list_changed", kind))

    def _on_shared(self) -> list[ServerSession]:
        """The downstream sessions the shared connection serves: those without one of their own."""
        with self._proxy_lock:
            own = set(self._links)
        return [session for session in self.sessions if id(session.transport) not in own]

    def upstream(self, session: ServerSession | None = None) -> MCPClient:
        """The connection to the target serving ``session`` (the shared one without), opened again if it ended.

        After a reconnection the lists are read again and the downstream sessions told.
        """
        return self._connection(self._link_for(session))

    # ------------------------------------------------- downstream sessions

    def prepare_session(self, session: ServerSession) -> None:
        """Keep ``session`` and listen to it before it serves: its first request may need both at once.

        Its upstream connection (unless shared) is opened at its first request.
        """
        key = id(session.transport)
        session.transport.on_close(functools.partial(self._session_ended, key))  # no end goes unheard
        with self._proxy_lock:
            self._downstream[key] = session
        session.dispatcher.on_notification(
            "notifications/roots/list_changed", functools.partial(self._roots_heard, key)
        )
        if self.shared:  # the union the shared connection gives between calls: this client's part, once it can ask
            session.dispatcher.on_notification(
                "notifications/initialized", lambda params: self._ask_roots(key, session, tell=False)
            )

    def _session_ended(self, key: int, reason: BaseException | None = None) -> None:
        """A downstream session ended: its connection closes (once its calls return), its subscriptions end."""
        with self._proxy_lock:
            session = self._downstream.pop(key, None)
            link = self._links.pop(key, None)
            self._roots_kept.pop(key, None)
            self._roots_asked.pop(key, None)
            if link is not None:
                link.ended = True
                idle = link.calls == 0
            subscriber = id(session)
            gone = [uri for uri, wanting in self._shared.subscribers.items() if subscriber in wanting]
        if gone:
            self._work.put(functools.partial(self._unsubscribe, self._shared, subscriber, gone))
        if link is not None and idle:
            # On the worker, not here: this runs as the downstream transport closes, and a first request
            # may be opening this link meanwhile, waiting for the downstream client (roots/list) with the
            # link's lock held; that wait fails only once the close has gone on (a minute's deadlock else).
            self._work.put(functools.partial(self._close_link, link))

    def _link_for(self, session: ServerSession | None) -> _Link:
        """The upstream connection ``session`` uses: its own, made now if it has none; else the shared one."""
        if self.shared or session is None or session.server is not self or session.per_request:
            return self._shared
        key = id(session.transport)
        with self._proxy_lock:
            link = self._links.get(key)
            if link is None:
                if key not in self._downstream:
                    raise MCPError(MCP_CODES.TRANSPORT_CLOSED, "the downstream session ended")
                link = self._links[key] = _Link(session)
        return link

    def _current_link(self) -> _Link:
        """The link of the downstream session whose request this thread serves (the shared one for none)."""
        request = current_request()
        with self._proxy_lock:
            session = self._downstream.get(id(request.dispatcher.transport)) if request is not None else None
        return self._link_for(session)

    def _served(self, link: _Link) -> dict[str, list[Any]]:
        """What ``link``'s target has, as last listed (connecting first if need be)."""
        with _unreachable():
            self._connection(link)
        return link.snapshot

    def _roots_heard(self, key: int, params: dict[str, Any]) -> None:
        """On the downstream reader thread: the client is asked elsewhere (the answer comes on this thread)."""
        if not self.shared:
            self._work.put(functools.partial(self._roots_changed, key))
            return
        with self._proxy_lock:
            session = self._downstream.get(key)
        if session is not None:  # none: it ended meanwhile
            self._ask_roots(key, session, tell=True)

    def _ask_roots(self, key: int, session: ServerSession, *, tell: bool) -> None:
        """With shared=True: ask ``session``'s client for its roots on the pool, then (``tell``) tell the target."""
        with self._proxy_lock:
            if self._closed or key not in self._downstream:
                return  # nothing to ask for: the proxy closed, or the session ended
            asked = self._roots_asked[key] = next(self._asks)
            self._asking.submit(self._read_roots, key, session, tell, asked)

    def _read_roots(self, key: int, session: ServerSession, tell: bool, asked: int) -> None:
        """On the asking pool: keep ``session``'s roots for the union (none if it fails or is slow).

        Two asks of one session may answer out of order: only the latest one asked is kept (and tells).
        """
        # A client may send `initialized` right behind `initialize`, and its listener here can run before
        # initialize was served: its capabilities are known once it has been.
        session.dispatcher.wait_served("initialize", HANDSHAKE_WAIT)
        if session.client_capabilities.roots is None or session.per_request:
            return  # it has none, or cannot be asked (a request of its own, 2026-07-28): it gives none
        try:
            roots = session.list_roots(timeout=ROOTS_TIMEOUT).roots
        except MCPError as exc:
            log.info("a downstream client did not list its roots for the target: %s", exc)
            roots = []
        with self._proxy_lock:
            if self._roots_asked.get(key) != asked:
                return  # it ended meanwhile (its roots are no longer given), or was asked again since
            self._roots_kept[key] = roots
        if tell:
            self._work.put(functools.partial(self._roots_changed, key))

    def _union_of_roots(self) -> list[Root]:
        """The roots of every session on the shared connection, as last asked, each URI once (no client is asked)."""
        with self._proxy_lock:
            known = [self._roots_kept.get(id(session.transport), []) for session in self._downstream.values()]
        found: dict[str, Root] = {}
        for roots in known:
            for root in roots:
                found.setdefault(str(root.uri), root)
        return list(found.values())

    def _roots_changed(self, key: int) -> None:
        """On the worker: a downstream client's roots changed; its upstream connection tells the target (which asks).

        Only the notification: the roots are not read here (``refresh_roots()``
        would), since asking a client on the worker would hold every other
        session's work for as long as that client takes. The target's
        ``roots/list`` is answered on the upstream client's own threads.
        """
        with self._proxy_lock:
            link = self._shared if self.shared else self._links.get(key)
        client = None if link is None else link.client
        if client is not None:  # none: not connected yet (a new connection reads the roots as it opens)
            with contextlib.suppress(MCPError):  # the connection ended meanwhile: a new one reads the roots
                client.roots_changed()  # the client's own way to say it, in the era it speaks (or nothing)

    def subscription_changed(self, session: ServerSession, uri: str, subscribed: bool) -> None:
        """Subscribe to ``uri`` upstream as a downstream client does (the last one to leave unsubscribes).

        A URI the proxy serves itself (its own registrations, or a server
        mounted in it) is not the target's: only the watchers are told.
        """
        super().subscription_changed(session, uri, subscribed)  # the mounts: a refusal there refuses here
        if self._serves_itself(uri):
            return
        link = self._link_for(session)
        if not subscribed:
            self._unsubscribe(link, id(session), [uri], held=True)
            return
        # Known before the round trip: a session that ends meanwhile has it ended (see below).
        with self._proxy_lock:
            link.subscribers.setdefault(uri, set()).add(id(session))
        try:
            self._connection(link).subscribe_resource(uri)  # a refusal reaches the downstream client
        except BaseException:
            self._drop_subscriber(link, id(session), uri)
            raise
        with self._proxy_lock:
            kept = id(session) in link.subscribers.get(uri, ())
        if session.closed or not kept:
            # The session ended (or unsubscribed) during the round trip: its end may have reached the target first.
            self._unsubscribe(link, id(session), [uri])

    def _serves_itself(self, uri: str) -> bool:
        """Whether ``uri`` is one of the proxy's own resources or matches one of its own templates."""
        return self.registry.serves_resource(uri)

    def _drop_subscriber(self, link: _Link, subscriber: int, uri: str) -> None:
        """``subscriber``'s subscription to ``uri`` was refused: it no longer counts (nothing to end upstream)."""
        with self._proxy_lock:
            wanting = link.subscribers.get(uri, set())
            wanting.discard(subscriber)
            if not wanting:
                link.subscribers.pop(uri, None)

    def _unsubscribe(self, link: _Link, subscriber: int, uris: list[str], *, held: bool = False) -> None:
        """``subscriber`` no longer wants ``uris``: end those nobody else wants upstream.

        ``held``: only those it subscribed to (a client may unsubscribe from
        what it never asked for, or twice); otherwise (its subscribe came
        back after it left) each is ended unless another subscriber wants it.
        """
        with self._proxy_lock:
            unwanted = []
            for uri in uris:
                wanting = link.subscribers.get(uri, set())
                if held and subscriber not in wanting:
                    continue
                wanting.discard(subscriber)
                if not wanting:
                    link.subscribers.pop(uri, None)
                    unwanted.append(uri)
        for uri in unwanted:
            with contextlib.suppress(MCPError):  # closed, or gone upstream already: nothing left to stop
                self._connection(link).unsubscribe_resource(uri)
            with self._proxy_lock:
                wanted = uri in link.subscribers
            if wanted:
                # Another session subscribed meanwhile: its subscribe may have reached the target before this
                # unsubscribe, which ended it there.
                with contextlib.suppress(MCPError):  # (refused or closed now: as for an upstream update lost)
                    self._connection(link).subscribe_resource(uri)

    def close(self) -> None:
        """Stop serving, close every upstream connection and end the worker. Idempotent."""
        self.stop()
        with self._proxy_lock:
            closing, self._closed = not self._closed, True
            links = [self._shared, *self._links.values()]
            self._links.clear()
        if closing:
            for link in links:
                self._close_link(link)  # first: a listing in progress fails at once, and the worker is free
            self._work.put(None)
            self._worker.join(_JOIN_TIMEOUT)
            # The sessions are closed (stop()): an ask still waiting fails at once.
            self._asking.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ProxyServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------- the target's requests

    @staticmethod
    def _caller(link: _Link, what: str) -> _Call:
        call = link.in_flight.current()
        if call is None:
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, f"no client call is in flight through the proxy to {what}")
        return call

    @staticmethod
    def _relay(link: _Link, call: _Call, ask: Callable[[ClientChannel], _T]) -> _T:
        """``ask`` the calling client; a 2026-07-28 round met on a reader thread is kept for the call."""
        try:
            with call.speaking() as ctx:
                return ask(ctx.channel)
        except InputRequired as needed:
            if link.in_flight.on_own_thread(call):
                raise  # through the upstream call, which it ends, to the downstream session
            link.in_flight.deferred[id(call)] = needed
            raise MCPError(MCP_CODES.MISSING_CAPABILITY, "the downstream client answers in its next round") from None

    def _sample(self, link: _Link, params: CreateMessageRequestParams) -> CreateMessageResult:
        return self._relay(
            link, self._caller(link, "sample"), lambda channel: channel.create_message(params, None, None)
        )

    def _elicit(self, link: _Link, params: ElicitRequestFormParams) -> ElicitResult:
        return self._relay(link, self._caller(link, "elicit"), lambda channel: channel.elicit(params, None, None))

    def _client_roots(self, link: _Link) -> list[Root]:
        try:
            call = link.in_flight.current()
        except MCPError:
            if not self.shared:
                raise
            # Not one client's: answered as between calls, with every client's roots (what the target is given
            # then anyway), rather than with one client's that may not be the asking call's.
            call = None
        if call is not None:
            return self._relay(link, call, lambda channel: channel.list_roots(None, None)).roots
        session = link.session
        if session is None:
            # Between calls on the proxy's own connection: with shared=True it serves every session, and the
            # target gets all their roots as last asked (never asked here: this may run with the link's lock
            # held, as the connection opens again); otherwise it serves no client of its own (local calls, mounts).
            return self._union_of_roots() if self.shared else []
        if session.client_capabilities.roots is None:
            return []  # a client without roots
        return session.list_roots().roots  # its own client, between calls (a handshake-era one can be asked)

    def _log(self, link: _Link, params: LoggingMessageNotificationParams) -> None:
        try:
            call = link.in_flight.current()
        except MCPError:
            # Not one client's, and maybe a call's: given to every client it could put one person's data before
            # another, so none gets it (the proxy's own log says so).
            log.info("dropped a log message of the target: calls of several clients are in flight, none named")
            return
        if call is not None:
            with call.speaking() as ctx:
                ctx.log(params.level, params.data, params.logger)
        elif link.session is not None:
            link.session.log(params.level, params.data, params.logger)
        else:
            for session in self._on_shared():  # not those with a connection of their own: theirs tells them
                session.log(params.level, params.data, params.logger)

    @contextlib.contextmanager
    def _forwarding(self, ctx: Context, link: _Link) -> Iterator[tuple[_Call, MCPClient]]:
        """Forward one call on ``link``: its connection (opened again if it ended), the call known as in flight."""
        with self._proxy_lock:
            link.calls += 1
        try:
            with link.in_flight.serving(ctx) as call, _unreachable():
                yield call, self._connection(link)
        finally:
            with self._proxy_lock:
                link.calls -= 1
                last = link.ended and link.calls == 0
            if last:  # its session ended during the call: the call was cancelled upstream, now close
                self._close_link(link)

    # -------------------------------------------------------------- listings

    def list_tools(self, auth: AuthInfo | None = None) -> list[Tool]:
        """The target's tools as last listed, then the proxy's own."""
        return [*self._served(self._current_link())["tools"], *super().list_tools(auth)]

    def get_tool(self, name: str) -> Tool | None:
        """The target's tool ``name`` (as last listed), else the proxy's own, else ``None``."""
        theirs = self._served(self._current_link())["tools"]
        return next((tool for tool in theirs if tool.name == name), None) or super().get_tool(name)

    def list_resources(self, auth: AuthInfo | None = None) -> list[Resource]:
        """The proxy's own resources, then the target's as last listed."""
        return [*super().list_resources(auth), *self._served(self._current_link())["resources"]]

    def list_resource_templates(self, auth: AuthInfo | None = None) -> list[ResourceTemplate]:
        """The proxy's own resource templates, then the target's as last listed."""
        return [*super().list_resource_templates(auth), *self._served(self._current_link())["templates"]]

    def list_prompts(self, auth: AuthInfo | None = None) -> list[Prompt]:
        """The target's prompts as last listed, then the proxy's own."""
        return [*self._served(self._current_link())["prompts"], *super().list_prompts(auth)]

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
        ctx = context or Context(cancelled=cancel, progress=progress, server=self, channel=NO_CLIENT)
        link = self._link_for(ctx.session)
        if not any(tool.name == name for tool in self._served(link)["tools"]):
            return super().invoke_tool(name, arguments, cancel=cancel, progress=progress, context=context)

        with self._forwarding(ctx, link) as (call, upstream):
            return upstream.call_tool(name, arguments, cancel=ctx.cancelled, progress=call.progressed)

    def read_resource(self, uri: str, *, context: Context | None = None) -> ReadResourceResult:
        """Read ``uri``: one of the proxy's own resources, else the target's."""
        try:
            return super().read_resource(uri, context=context)
        except MCPError as exc:
            if exc.code != MCP_CODES.NOT_FOUND:
                raise
        ctx = context or Context(server=self, channel=NO_CLIENT)
        with self._forwarding(ctx, self._link_for(ctx.session)) as (call, upstream):
            try:
                # Its progress callback is the call's, as for a tool: how the target's questions are related to it.
                return upstream.read_resource(uri, cancel=ctx.cancelled, progress=call.progressed)
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
        ctx = context or Context(server=self, channel=NO_CLIENT)
        link = self._link_for(ctx.session)
        if not any(prompt.name == name for prompt in self._served(link)["prompts"]):
            return super().get_prompt(name, arguments, context=context)
        with self._forwarding(ctx, link) as (call, upstream):
            return upstream.get_prompt(name, arguments, cancel=ctx.cancelled, progress=call.progressed)

    def complete(self, params: CompleteRequestParams, context: Context | None = None) -> CompleteResult:
        """The target's completions (a target without completion refuses, as it would directly)."""
        given = params.context.arguments if params.context is not None else None
        argument = params.argument
        upstream = self.upstream(context.session if context is not None else None)
        return upstream.complete(params.ref, argument.name, argument.value, context=given)


def _related() -> ProgressCallback | None:
    """In the upstream client's handler of a target's request: the progress callback of the call it relates to.

    Over Streamable HTTP the target sends a request made while answering a
    call on that call's response stream, and the transport says which; the
    proxy gives each call a progress callback of its own, which the client's
    dispatcher keeps with the call. Stdio and memory carry no such relation
    (the handshake-era wire has no field for it): ``None``.
    """
    question = current_request()
    if question is None:
        return None
    find = getattr(question.dispatcher.transport, "related_request", None)  # Streamable HTTP's only
    related = find(question.request_id) if find is not None else None
    return None if related is None else question.dispatcher.progress_callback(related)


@contextlib.contextmanager
def _unreachable() -> Iterator[None]:
    """Say an upstream connection that fails as such: over the wire its code would read as a plain internal error,
    so ``data["upstream"]`` names it."""
    try:
        yield
    except MCPTransportError as exc:
        raise MCPError(
            exc.code, f"the proxy's target is unreachable: {exc.message}", data={"upstream": exc.code}, cause=exc
        ) from exc


def _templates(client: MCPClient) -> list[ResourceTemplate]:
    """The target's resource templates (a server without the method has none: the client knows that case)."""
    client.refresh_templates_if_served()  # the client's own rule, not a second copy of it
    return client.resource_templates()


def proxy(
    target: str | Sequence[str] | MCPServer, *, name: str | None = None, shared: bool = False, **connect_options: Any
) -> ProxyServer:
    """A server serving ``target``'s tools, resources, templates and prompts, forwarding every call to it.

    ``target`` is what :func:`mcp_sync.connect` takes (a URL, a command line,
    an ``MCPServer``), as are ``connect_options`` (``headers``, ``auth``,
    ``env``, ``timeout``, ``era`` ...; the providers and ``log_handler`` are
    the proxy's own). ``name`` defaults to the target's. ``shared=True``
    serves every client on one upstream connection (by default each client
    session has its own). The target is connected to at once: one that
    cannot be reached raises here. Close the proxy (or use it in a ``with``
    block) to close the upstream connections.

    >>> import mcp_sync
    >>> backend = mcp_sync.MCPServer("weather")
    >>> _ = backend.register_tool("forecast", lambda args, ctx: "sunny")
    >>> with mcp_sync.proxy(backend, name="front") as front, mcp_sync.connect(front) as client:
    ...     client.server_info.name, client.call_tool("forecast").text
    ('front', 'sunny')
    """
    return ProxyServer(target, name=name, shared=shared, connect_options=connect_options)


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
