"""Mounting: one server's tools, resources, templates and prompts served by another, under a prefix.

:meth:`MCPServer.mount <mcp_sync.server.core.MCPServer.mount>` makes a
:class:`Mount`. Names get the prefix and an underscore (``forecast`` under
``weather`` is ``weather_forecast``); a resource URI gets the prefix as its
first segment after the scheme (``notes://readme`` is
``notes://weather/readme``, a template ``notes://{name}`` is
``notes://weather/{name}``; a URI without ``://`` is put under
``weather/``), so that two mounted servers with the same URIs stay apart.
Calls go to the mounted server in this process with the caller's context:
progress, logs, cancellation and questions to the client work as if the
mounted server served the call itself. The mounted server's list changes
(registrations, or a proxy's target changing) update the mount at once and
reach the mounting server's clients as its own list changes; its
``mark_resource_updated`` reaches the clients subscribed to the URI here.
A client's subscription to a mounted URI is passed on to the mounted
server (a mounted proxy subscribes at its target, and its target's updates
come back here), and ended as the client unsubscribes, as its session ends
(on a thread of the mount's, so that the session's close never waits for a
mounted proxy's target), or at :meth:`Mount.unmount`, which waits for that
thread.

>>> from mcp_sync import MCPServer
>>> weather, app = MCPServer("weather"), MCPServer("app")
>>> _ = weather.register_tool("forecast", lambda args, ctx: "sunny")
>>> mounted = app.mount(weather, prefix="weather")
>>> [tool.name for tool in app.list_tools()], app.invoke_tool("weather_forecast").text
(['weather_forecast'], 'sunny')
>>> _ = weather.register_tool("alerts", lambda args, ctx: "none")
>>> [tool.name for tool in app.list_tools()]
['weather_forecast', 'weather_alerts']
>>> mounted.unmount()
>>> app.list_tools()
[]
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.errors import MCPError
from ..protocol.types import Prompt, Resource, ResourceTemplate, Tool
from . import apps
from .backend import Notice

if TYPE_CHECKING:
    from ..protocol.types import ReadResourceResult
    from .context import Context
    from .core import MCPServer
    from .session import ServerSession

__all__ = ["Mount"]

_JOIN_TIMEOUT = 10.0
"""The longest :meth:`Mount.unmount` waits for the subscriptions of ended sessions to be ended (seconds)."""


class Mount:
    """``other`` served by ``parent`` under ``prefix`` (see the module's description); :meth:`unmount` ends it."""

    def __init__(self, parent: MCPServer, other: MCPServer, prefix: str) -> None:
        if not prefix:
            raise ValueError("mount() needs a non-empty prefix")
        self.parent = parent
        self.other = other
        self.prefix = prefix
        self._lock = threading.RLock()
        self._active = True
        # What this mount registered on the parent, by kind: the parent's key -> the mounted item.
        self._served: dict[str, dict[str, Any]] = {"tools": {}, "resources": {}, "templates": {}, "prompts": {}}
        self._subscribed: dict[int, tuple[ServerSession, set[str], Callable[[], None]]] = {}
        """By id() of a parent's session: it, the mounted server's URIs it subscribed to here, its close unwatcher."""
        self._ending: list[tuple[ServerSession, set[str]]] = []
        """The subscriptions of parent's sessions that ended, for the releaser thread to end in the mounted server."""
        self._releaser: threading.Thread | None = None
        self._unwatch = other.on_notice(self._heard)
        self._unfollow = parent.on_subscription(self._subscription)
        self._unhook_stop = parent.on_stop(self._join_releaser)  # the parent's stop() leaves no releaser running
        try:
            for kind in ("tools", "resources", "prompts"):
                self.sync(kind)
        except BaseException:
            self.unmount()  # a name the parent has already: nothing of this mount stays
            raise

    def name(self, name: str) -> str:
        """The parent's name for the mounted item ``name``."""
        return f"{self.prefix}_{name}"

    def uri(self, uri: str) -> str:
        """The parent's URI (or template) for the mounted server's ``uri``."""
        scheme, separator, rest = uri.partition("://")
        return f"{scheme}://{self.prefix}/{rest}" if separator else f"{self.prefix}/{uri}"

    def original(self, uri: str) -> str:
        """The mounted server's URI for the parent's ``uri`` (the inverse of :meth:`uri`)."""
        scheme, separator, rest = uri.partition("://")
        inside = f"{self.prefix}/"
        return f"{scheme}://{rest.removeprefix(inside)}" if separator else uri.removeprefix(inside)

    def sync(self, kind: str) -> None:
        """Make the parent's registrations of ``kind`` from this mount match the mounted server's list."""
        with self._lock:
            if not self._active:
                return  # unmounted while a notice was on its way
            if kind == "tools":
                self._update("tools", {self.name(t.name): t for t in self.other.list_tools()}, self._add_tool)
            elif kind == "prompts":
                self._update("prompts", {self.name(p.name): p for p in self.other.list_prompts()}, self._add_prompt)
            else:
                resources = {self.uri(r.uri): r for r in self.other.list_resources()}
                self._update("resources", resources, self._add_resource)
                templates = {self.uri(t.uri_template): t for t in self.other.list_resource_templates()}
                self._update("templates", templates, self._add_template)

    def _update(self, kind: str, wanted: dict[str, Any], add: Any) -> None:
        served = self._served[kind]
        for key in [key for key, item in served.items() if wanted.get(key) != item]:
            self._remove(kind, key)
        for key, item in wanted.items():
            if key not in served:
                add(key, item)
                served[key] = item

    def _remove(self, kind: str, key: str) -> None:
        del self._served[kind][key]
        if kind == "tools":
            self.parent.unregister_tool(key)
        elif kind == "prompts":
            self.parent.unregister_prompt(key)
        else:
            self.parent.unregister_resource(key)

    def _add_tool(self, key: str, tool: Tool) -> None:
        def call(arguments: Any, ctx: Context) -> Any:
            return self.other.invoke_tool(tool.name, arguments, context=ctx)

        self.parent.register_tool(
            key,
            call,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            title=tool.title,
            annotations=tool.annotations,
            icons=tool.icons,
            meta=apps.mounted_tool_meta(self.parent, tool, self.uri),
        )

    def _add_prompt(self, key: str, prompt: Prompt) -> None:
        def render(arguments: Any, ctx: Context) -> Any:
            return self.other.get_prompt(prompt.name, arguments, context=ctx)

        self.parent.register_prompt(
            key,
            render,
            title=prompt.title,
            description=prompt.description,
            arguments=prompt.arguments,
            icons=prompt.icons,
            meta=prompt.meta,
        )

    def _read(self, uri: str, original: str, ctx: Context) -> ReadResourceResult:
        """Read ``original`` from the mounted server; the contents say the URI they were read as here."""
        result = self.other.read_resource(original, context=ctx)
        contents = [item.model_copy(update={"uri": uri}) for item in result.contents]
        return result.model_copy(update={"contents": contents})

    def _add_resource(self, key: str, resource: Resource) -> None:
        self.parent.register_resource(
            key,
            lambda uri, ctx: self._read(uri, resource.uri, ctx),
            name=resource.name,
            title=resource.title,
            description=resource.description,
            mime_type=resource.mime_type,
            size=resource.size,
            annotations=resource.annotations,
            icons=resource.icons,
            meta=resource.meta,
        )

    def _add_template(self, key: str, template: ResourceTemplate) -> None:

        def read(uri: str, params: dict[str, str], ctx: Context) -> ReadResourceResult:
            return self._read(uri, self.original(uri), ctx)

        self.parent.register_resource_template(
            key,
            read,
            name=template.name,
            title=template.title,
            description=template.description,
            mime_type=template.mime_type,
            annotations=template.annotations,
            icons=template.icons,
            meta=template.meta,
        )

    def _heard(self, notice: Notice) -> None:
        """A server-wide notification of the mounted server: follow it on the parent."""
        if notice.kind == "list_changed":
            self.sync(notice.subject)
        else:
            self.parent.mark_resource_updated(self.uri(notice.subject))

    def _subscription(self, session: ServerSession, uri: str, subscribed: bool) -> None:
        """A parent's client subscribed to ``uri`` or stopped: if the URI is this mount's, so does the mounted server.

        On the client's request thread: the mounted server's refusal refuses the subscription.
        """
        original = self.original(uri)
        if self.uri(original) != uri:
            return  # not under this mount's prefix
        if subscribed:
            # Known before the round trip, so that a session ending during it is heard.
            with self._lock:
                if not self._active:
                    return  # unmounted meanwhile: nothing is passed on
                known = self._subscribed.get(id(session))
                if known is None:
                    stop = session.transport.on_close(lambda reason: self._session_ended(session))
                    known = self._subscribed[id(session)] = (session, set(), stop)
                known[1].add(original)
            try:
                self.other.subscription_changed(session, original, True)
            except BaseException:
                with self._lock:
                    known[1].discard(original)
                raise
            self._kept(session, original, known)
        else:
            with self._lock:
                known = self._subscribed.get(id(session))
                (known[1] if known is not None else set()).discard(original)  # none: it subscribed before the mount
            self.other.subscription_changed(session, original, False)

    def _kept(self, session: ServerSession, original: str, known: tuple[ServerSession, set[str], Any]) -> None:
        """After subscribing to ``original``: end it at once if the session ended or the mount went meanwhile.

        Their own ending of it may have reached the mounted server before the subscription did.
        """
        with self._lock:
            mine = self._subscribed.get(id(session)) is known
            if mine and not session.transport.closed:
                return
            if mine:  # closed before its close handler was registered: that handler never runs
                del self._subscribed[id(session)]
                known[2]()
            left = set(known[1]) if mine else {original}
        self._release(session, left)

    def _session_ended(self, session: ServerSession) -> None:
        """As a parent's session closes without unsubscribing: the releaser thread stops the mounted server for it.

        Not here: a mounted proxy unsubscribes at its target, and the session's close would wait for that.
        """
        with self._lock:
            known = self._subscribed.pop(id(session), None)
            if known is None:
                return  # unmounted meanwhile
            self._ending.append((session, known[1]))
            if self._releaser is None:
                self._releaser = threading.Thread(target=self._run_releaser, name="mcp-sync-mount-release", daemon=True)
                self._releaser.start()

    def _run_releaser(self) -> None:
        """The releaser thread: ends the ended sessions' subscriptions, then ends itself."""
        while True:
            with self._lock:
                if not self._ending:
                    self._releaser = None
                    return
                session, uris = self._ending.pop(0)
            self._release(session, uris)

    def _release(self, session: ServerSession, uris: set[str]) -> None:
        for original in sorted(uris):
            with contextlib.suppress(MCPError):  # a mounted proxy closed meanwhile: nothing is left to stop
                self.other.subscription_changed(session, original, False)

    def unmount(self) -> None:
        """Take the mounted server's items off the parent, stop following it and end the subscriptions passed on.

        Idempotent.
        """
        with self._lock:
            self._active = False
            self._unwatch()
            self._unfollow()
            self._unhook_stop()
            for kind, served in self._served.items():
                for key in list(served):
                    self._remove(kind, key)
            subscribed, self._subscribed = self._subscribed, {}
            releaser = self._releaser
        for session, uris, stop in subscribed.values():
            stop()
            self._release(session, uris)
        if releaser is not None:
            releaser.join(_JOIN_TIMEOUT)

    def _join_releaser(self) -> None:
        """Wait (bounded) for the releaser thread, if it runs: at the end of the parent's ``stop()``."""
        with self._lock:
            releaser = self._releaser
        if releaser is not None:
            releaser.join(_JOIN_TIMEOUT)
