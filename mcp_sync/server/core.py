"""MCPServer: the host that serves a registry of tools, resources and prompts to MCP clients.

>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo", "1.0")
>>> tool = server.register_tool(
...     "add",
...     lambda args, ctx: str(args["a"] + args["b"]),
...     description="Add two numbers",
...     input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
... )
>>> server.invoke_tool("add", {"a": 1, "b": 2}).content[0].text
'3'

What a server declares lives in its :attr:`~MCPServer.registry` (a
:class:`~mcp_sync.server.registry.ServerRegistry`; the ``register_*``
methods and decorators here are its own); what serves lives here: a server
serves any number of connections at once, each transport given to
:meth:`MCPServer.start` becoming a :class:`~mcp_sync.server.session.ServerSession`
with its own negotiated revision, capabilities, subscriptions and log level;
it tells them of changes (notices), runs tasks, and holds the providers and
middleware its requests go through.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload

from pydantic import BaseModel

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.types import (
    Icon,
    Implementation,
    LoggingLevel,
    RequestId,
    Tool,
    ToolAnnotations,
    WireModel,
)
from ..protocol.versions import check_log_level
from ..runtime.dispatcher import DEFAULT_TIMEOUT, Clock
from ..runtime.events import EventBus
from ..runtime.telemetry import Telemetry
from ..runtime.transport import Route
from . import apps
from .authorization import AuthInfo, Authorizer
from .backend import Backend, InProcessBackend, Notice
from .context import NO_CLIENT, Context, ProgressReporter
from .registry import (
    Completer,
    ExtensionMethod,
    PromptHandler,
    ResourceHandler,
    ServerRegistry,
    TemplateHandler,
    ToolHandler,
)
from .results import paginate, to_complete_result
from .session import ServerSession
from .stateless import RequestStateSealer

if TYPE_CHECKING:
    from ..protocol.skills import SkillEntry
    from ..protocol.tasks import TaskSupport
    from ..runtime.transport import Transport
    from .middleware import Middleware
    from .mount import Mount
    from .skills import SkillCatalogue
    from .stats import ServerStats
    from .tasks import TaskRunner

__all__ = [
    "CompletionProvider",
    "MCPServer",
    "SamplingProvider",
]

log = logging.getLogger(__name__)


# Protocols rather than Callable aliases so that their models load when first used (see
# protocol.types.ON_DEMAND) while typing.get_type_hints still resolves every signature that names them.
class SamplingProvider(Protocol):
    """Answers this server's own sampling needs when the client cannot sample: any function of the request's
    params and the asking call's context.

    >>> from mcp_sync.types import CreateMessageResult, TextContent
    >>> server = MCPServer("demo")
    >>> server.set_sampling_provider(
    ...     lambda params, ctx: CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="echo")
    ... )
    """

    def __call__(self, params: models.CreateMessageRequestParams, ctx: Context, /) -> models.CreateMessageResult: ...


class CompletionProvider(Protocol):
    """Completes arguments no completer registered for them covers: any function of the ``completion/complete``
    params and the request's context, giving a result or the suggested values.

    >>> server = MCPServer("demo")
    >>> server.set_completion_provider(lambda params, ctx: ["red", "green"])
    """

    def __call__(
        self, params: models.CompleteRequestParams, ctx: Context, /
    ) -> models.CompleteResult | Sequence[str]: ...


F = TypeVar("F", bound=Callable[..., Any])
_M = TypeVar("_M", bound=BaseModel)


_FIRST_SWEEP = 64
"""How many sessions a server keeps before it first sweeps out the closed ones."""


class MCPServer:
    """An MCP server: register tools, resources and prompts, then :meth:`start` transports.

    What is registered is kept in :attr:`registry` (a :class:`ServerRegistry`);
    the server hosts it: its connections, the notices they are sent, its
    tasks, providers and middleware.

    ``page_size`` makes the list methods return pages of that many items
    (``None``: everything at once); ``timeout`` bounds the server's own
    requests to clients (sampling, roots, elicitation); ``max_workers``
    bounds the handler threads of each connection. For 2026-07-28 clients,
    ``cache_ttl_ms`` and ``cache_scope`` are the caching hints of discovery,
    list and read results, and ``request_state_secret`` signs the state of
    multi round-trip requests (give every instance behind a load balancer
    the same one; by default each server makes its own).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "public",
        request_state_secret: bytes | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_workers: int = 16,
        id_generator: Callable[[], RequestId] | None = None,
        clock: Clock | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.info = Implementation(name=name, version=version, title=title)
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.request_state_sealer = RequestStateSealer(request_state_secret)
        self.timeout = timeout
        self.max_workers = max_workers
        self.id_generator = id_generator
        self.clock = clock
        self.telemetry = telemetry
        self.events = EventBus()
        self._watchers: tuple[Callable[[Notice], None], ...] = ()
        self._subscription_watchers: tuple[Callable[[ServerSession, str, bool], None], ...] = ()
        self._stop_waiters: tuple[Callable[[], None], ...] = ()
        self.backend: Backend = InProcessBackend()
        """What the processes serving this server share (see :mod:`~mcp_sync.server.backend`).

        In-process by default; the HTTP app sets it from its ``backend`` option.
        """
        self.log_level: LoggingLevel | None = None
        self.authorizer: Authorizer | None = None
        self.sampling_provider: SamplingProvider | None = None
        self.completion_provider: CompletionProvider | None = None
        self.middlewares: tuple[Middleware, ...] = ()
        """The middleware chain, outermost first (see :meth:`add_middleware`)."""
        self._lock = threading.RLock()
        self.registry = ServerRegistry(changed=self._list_changed, declare_tasks=lambda: self.tasks)
        """What this server declares: its tools, resources, templates, prompts, roots, completers and methods."""
        self.extensions = self.registry.extensions
        """The extensions declared under ``capabilities.extensions``: identifier -> settings (the registry's)."""
        self._info_wire: tuple[Implementation, dict[str, Any]] | None = None
        self._skills: SkillCatalogue | None = None
        self._tasks: TaskRunner | None = None
        # By the id() of each session's transport (alive while its session is kept); closed
        # sessions are swept out as new ones start, once the table doubled since the last sweep.
        self._sessions: dict[int, ServerSession] = {}
        self._sweep_at = _FIRST_SWEEP
        self._running = False

    # ------------------------------------------- declarations (the registry's)

    def register_tool(
        self,
        name: str,
        handler: ToolHandler,
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | type[BaseModel] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        task: TaskSupport = "forbidden",
        before_task: ToolHandler | None = None,
        ui: str | None = None,
        visibility: Iterable[str] | None = None,
    ) -> Tool:
        """Register a tool; ``handler(arguments, ctx)`` runs on each call (see :meth:`ServerRegistry.register_tool`).

        ``ui`` names the tool's app (a ``ui://`` resource, see
        :meth:`add_app_resource`) and ``visibility`` who may call it
        (``"model"``, ``"app"``; both by default): see :mod:`mcp_sync.server.apps`.

        >>> server = MCPServer("demo")
        >>> server.register_tool("hi", lambda arguments, ctx: "hello").name
        'hi'
        """
        return self.registry.register_tool(
            name,
            handler,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            title=title,
            annotations=annotations,
            icons=icons,
            meta=apps.tool_meta(self, meta, ui, visibility),
            scopes=scopes,
            task=task,
            before_task=before_task,
        )

    def unregister_tool(self, name: str) -> None:
        """Remove a tool; ``NOT_FOUND`` if there is none by that name."""
        self.registry.unregister_tool(name)

    def register_resource(
        self,
        uri: str,
        handler: ResourceHandler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: models.Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> models.Resource:
        """Register a resource at a fixed ``uri`` (see :meth:`ServerRegistry.register_resource`)."""
        return self.registry.register_resource(
            uri,
            handler,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=annotations,
            icons=icons,
            meta=meta,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            scopes=scopes,
        )

    def register_resource_template(
        self,
        uri_template: str,
        handler: TemplateHandler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: models.Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> models.ResourceTemplate:
        """Register a family of resources such as ``"users://{id}/profile"`` (see
        :meth:`ServerRegistry.register_resource_template`).
        """
        return self.registry.register_resource_template(
            uri_template,
            handler,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            icons=icons,
            meta=meta,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            scopes=scopes,
        )

    def unregister_resource(self, uri: str) -> None:
        """Remove a resource or resource template; ``NOT_FOUND`` if there is none."""
        self.registry.unregister_resource(uri)

    def register_prompt(
        self,
        name: str,
        handler: PromptHandler,
        *,
        title: str | None = None,
        description: str | None = None,
        arguments: Iterable[models.PromptArgument] | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> models.Prompt:
        """Register a prompt; ``handler(arguments, ctx)`` returns its messages (see
        :meth:`ServerRegistry.register_prompt`).
        """
        return self.registry.register_prompt(
            name,
            handler,
            title=title,
            description=description,
            arguments=arguments,
            icons=icons,
            meta=meta,
            scopes=scopes,
        )

    def unregister_prompt(self, name: str) -> None:
        """Remove a prompt; ``NOT_FOUND`` if there is none by that name."""
        self.registry.unregister_prompt(name)

    def register_root(self, uri: str, name: str | None = None) -> models.Root:
        """Record a root (a directory or location) that this server works within."""
        return self.registry.register_root(uri, name)

    def unregister_root(self, uri: str) -> None:
        """Forget a root; ``NOT_FOUND`` if there is none."""
        self.registry.unregister_root(uri)

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Iterable[str] = (),
        task: TaskSupport = "forbidden",
        ui: str | None = None,
        visibility: Iterable[str] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        scopes: Iterable[str] = (),
        task: TaskSupport = "forbidden",
        ui: str | None = None,
        visibility: Iterable[str] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a plain function as a tool (``@server.tool`` or ``@server.tool(...)``; see
        :meth:`ServerRegistry.tool`; ``ui`` and ``visibility`` as for :meth:`register_tool`).

        >>> server = MCPServer("demo")
        >>> @server.tool
        ... def add(a: int, b: int = 0) -> int:
        ...     "Add two numbers."
        ...     return a + b
        >>> server.invoke_tool("add", {"a": 2, "b": 3}).structured_content
        {'result': 5}
        """
        register = self.registry.tool(
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            meta=apps.tool_meta(self, meta, ui, visibility),
            structured_output=structured_output,
            scopes=scopes,
            task=task,
        )
        return register if fn is None else register(fn)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: models.Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a function as a resource, or as a template when ``uri`` has ``{parameters}``
        (see :meth:`ServerRegistry.resource`).

        >>> server = MCPServer("demo")
        >>> @server.resource("users://{user_id}/name")
        ... def user_name(user_id: int) -> str:
        ...     return f"user number {user_id}"
        >>> server.read_resource("users://7/name").text
        'user number 7'
        """
        return self.registry.resource(
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            icons=icons,
            meta=meta,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            scopes=scopes,
        )

    def add_app_resource(
        self,
        uri: str,
        *,
        html: str | None = None,
        path: str | Path | None = None,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: Mapping[str, Iterable[str]] | None = None,
        permissions: Iterable[str] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> models.Resource:
        """Serve an MCP App's HTML at ``uri`` (``ui://...``) as ``text/html;profile=mcp-app``, and declare the apps
        extension (see :func:`mcp_sync.server.apps.add_app_resource`).

        >>> server = MCPServer("demo")
        >>> server.add_app_resource("ui://demo/app.html", html="<!doctype html>", csp={"connectDomains": []}).meta
        {'ui': {'csp': {'connectDomains': []}}}
        """
        return apps.add_app_resource(
            self,
            uri,
            html=html,
            path=path,
            name=name,
            title=title,
            description=description,
            csp=csp,
            permissions=permissions,
            domain=domain,
            prefers_border=prefers_border,
        )

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> F | Callable[[F], F]:
        """Register a function as a prompt; its parameters are the prompt's arguments (see
        :meth:`ServerRegistry.prompt`).

        >>> server = MCPServer("demo")
        >>> @server.prompt
        ... def review(code: str, language: str = "python") -> str:
        ...     "Ask for a code review."
        ...     return f"Review this {language}: {code}"
        >>> [a.name for a in server.list_prompts()[0].arguments]
        ['code', 'language']
        """
        register = self.registry.prompt(
            name=name, title=title, description=description, icons=icons, meta=meta, scopes=scopes
        )
        return register if fn is None else register(fn)

    def completion(
        self, *, prompt: str | None = None, template: str | None = None, argument: str
    ) -> Callable[[Completer], Completer]:
        """Register suggestions for one argument of a prompt or a resource template (see
        :meth:`ServerRegistry.completion`).

        >>> server = MCPServer("demo")
        >>> @server.completion(prompt="review", argument="language")
        ... def languages(value, arguments):
        ...     return [name for name in ("python", "perl", "rust") if name.startswith(value)]
        """
        return self.registry.completion(prompt=prompt, template=template, argument=argument)

    def mount(self, other: MCPServer, prefix: str) -> Mount:
        """Serve ``other``'s tools, resources, templates and prompts here too, under ``prefix``; live.

        ``forecast`` becomes ``weather_forecast``, ``notes://readme`` becomes
        ``notes://weather/readme`` (see :mod:`~mcp_sync.server.mount`);
        ``other`` may be a proxy. The returned mount's ``unmount()`` ends it.

        >>> weather, app = MCPServer("weather"), MCPServer("app")
        >>> _ = weather.register_tool("forecast", lambda args, ctx: "sunny")
        >>> app.mount(weather, prefix="weather").parent.invoke_tool("weather_forecast").text
        'sunny'
        """
        from .mount import Mount

        return Mount(self, other, prefix)

    # ---------------------------------------------------- listings and calls
    # (what a session serves; a server serving another one's, a proxy, overrides them)

    def list_tools(self, auth: AuthInfo | None = None) -> list[Tool]:
        """The registered tools, in registration order (with ``auth``: only those it has the scopes of)."""
        return self.registry.list_tools(auth)

    def get_tool(self, name: str) -> Tool | None:
        """The registered tool called ``name``, or ``None``.

        >>> MCPServer("demo").get_tool("missing") is None
        True
        """
        return self.registry.get_tool(name)

    def list_resources(self, auth: AuthInfo | None = None) -> list[models.Resource]:
        """The registered fixed resources (with ``auth``: only those it has the scopes of)."""
        return self.registry.list_resources(auth)

    def list_resource_templates(self, auth: AuthInfo | None = None) -> list[models.ResourceTemplate]:
        """The registered resource templates (with ``auth``: only those it has the scopes of)."""
        return self.registry.list_resource_templates(auth)

    def list_prompts(self, auth: AuthInfo | None = None) -> list[models.Prompt]:
        """The registered prompts (with ``auth``: only those it has the scopes of)."""
        return self.registry.list_prompts(auth)

    def scopes_for(self, method: str, params: Mapping[str, Any]) -> frozenset[str]:
        """The scopes a request needs for the item it names (see :meth:`ServerRegistry.scopes_for`).

        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("reset", lambda args, ctx: "done", scopes=["admin"])
        >>> sorted(server.scopes_for("tools/call", {"name": "reset"}))
        ['admin']
        """
        return self.registry.scopes_for(method, params)

    def all_scopes(self) -> frozenset[str]:
        """Every scope some tool, resource, template or prompt needs (for ``scopes_supported``)."""
        return self.registry.all_scopes()

    def list_roots(self) -> list[models.Root]:
        """The registered roots."""
        return self.registry.list_roots()

    def page(self, items: Sequence[_M], cursor: str | None) -> tuple[list[_M], str | None]:
        """One page of a listing, at this server's ``page_size``."""
        return paginate(items, cursor, self.page_size)

    def invoke_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressReporter | None = None,
        context: Context | None = None,
    ) -> models.CallToolResult:
        """Run a tool here, without a client (or for one, with the ``context`` of its request).

        Invalid arguments raise ``INVALID_PARAMS``; an unknown tool raises
        ``NOT_FOUND``; an exception in the handler becomes a result with
        ``is_error=True``; a call whose ``cancel`` event was set raises
        ``REQUEST_CANCELLED``.
        """
        # A local call has no client: its context gets the channel that says so.
        ctx = context or Context(cancelled=cancel, progress=progress, server=self, channel=NO_CLIENT)
        return self.registry.call_tool(name, arguments, ctx)

    def read_resource(self, uri: str, *, context: Context | None = None) -> models.ReadResourceResult:
        """Read a resource here, without a client; ``NOT_FOUND`` for an unknown URI."""
        return self.registry.read_resource(uri, context or Context(server=self, channel=NO_CLIENT))

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, context: Context | None = None
    ) -> models.GetPromptResult:
        """Render a prompt here, without a client.

        An unknown prompt raises ``NOT_FOUND``; a missing required argument
        raises ``INVALID_PARAMS``.
        """
        return self.registry.get_prompt(name, arguments, context or Context(server=self, channel=NO_CLIENT))

    def get_prompt_messages(self, name: str, arguments: Mapping[str, str] | None = None) -> list[models.PromptMessage]:
        """Just the messages of :meth:`get_prompt`."""
        return self.get_prompt(name, arguments).messages

    def complete(self, params: models.CompleteRequestParams, context: Context | None = None) -> models.CompleteResult:
        """Argument completions: from a completer registered for that argument, else the
        completion provider, else none."""
        result = self.registry.complete(params)
        if result is not None:
            return result
        if self.completion_provider is None:
            return to_complete_result([])
        return to_complete_result(self.completion_provider(params, context or Context(server=self, channel=NO_CLIENT)))

    # ------------------------------------------------------------- middleware

    def add_middleware(self, middleware: Middleware) -> Middleware:
        """Add ``middleware(call, next)`` to the chain, inside those added before it; returns it.

        It runs around every request this server handles and around each
        tool call, resource read and prompt get, in both eras and on every
        transport: see :mod:`mcp_sync.server.middleware` for what it may do,
        with examples (rate limiting, an audit log, error shaping).

        >>> server = MCPServer("demo")
        >>> timed = server.add_middleware(lambda call, next: next(call))
        >>> server.middlewares == (timed,)
        True
        """
        with self._lock:
            self.middlewares = (*self.middlewares, middleware)
        return middleware

    def middleware(self, middleware: Middleware) -> Middleware:
        """:meth:`add_middleware` as a decorator.

        >>> server = MCPServer("demo")
        >>> @server.middleware
        ... def passing(call, next):
        ...     return next(call)
        >>> server.middlewares == (passing,)
        True
        """
        return self.add_middleware(middleware)

    # -------------------------------------------------------------- providers

    def set_authorizer(self, authorizer: Authorizer | None) -> None:
        """Gate every request: a call for which ``authorizer(info)`` is false gets ``UNAUTHORIZED``."""
        self.authorizer = authorizer

    def set_sampling_provider(self, provider: SamplingProvider | None) -> None:
        """Answer this server's own sampling needs when the client cannot sample."""
        self.sampling_provider = provider

    def set_completion_provider(self, provider: CompletionProvider | None) -> None:
        """Supply argument completions for ``completion/complete``."""
        self.completion_provider = provider

    def set_log_level(self, level: LoggingLevel) -> None:
        """The least severe level sent to clients that have not chosen one."""
        check_log_level(level)
        self.log_level = level

    # ----------------------------------------------------------- connections

    def register_method(
        self,
        method: str,
        params: type[WireModel],
        handler: Callable[[Any, Context], WireModel],
        *,
        cacheable: bool = False,
    ) -> None:
        """Answer requests ``method`` (an extension's) with ``handler(params, ctx)`` (see
        :meth:`ServerRegistry.register_method`).

        >>> from mcp_sync.protocol.types import EmptyResult, PaginatedRequestParams
        >>> server = MCPServer("demo")
        >>> server.register_method("example/noop", PaginatedRequestParams, lambda params, ctx: EmptyResult())
        >>> server.extension_method("example/noop").cacheable
        False
        """
        self.registry.register_method(method, params, handler, cacheable=cacheable)

    def extension_method(self, method: str) -> ExtensionMethod | None:
        """The extension method registered as ``method``, if any."""
        return self.registry.extension_method(method)

    def skill_catalogue(self) -> SkillCatalogue:
        """The skills this server serves; the first call declares the skills extension and its methods."""
        # Imported here, as tasks are: a server that serves no skills never loads their models.
        from .skills import SkillCatalogue

        with self._lock:
            if self._skills is None:
                self._skills = SkillCatalogue(self)
                self._skills.declare()
            return self._skills

    def add_skills(self, path: str | Path) -> list[SkillEntry]:
        """Serve the Agent Skills under ``path`` with the skills extension (SEP-2640); the entries added.

        Each subdirectory holding a ``SKILL.md`` is a skill; see
        :func:`mcp_sync.server.skills.add_skills`.

        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "hello").mkdir()
        >>> _ = (root / "hello" / "SKILL.md").write_text("---\\nname: hello\\ndescription: Greet\\n---\\nHi.\\n")
        >>> server = MCPServer("demo")
        >>> [skill.name for skill in server.add_skills(root)], "skills/list" in server.extension_methods()
        (['hello'], True)
        """
        from .skills import add_skills

        return add_skills(self, path)

    @property
    def tasks(self) -> TaskRunner:
        """What runs this server's task tools; the first use declares the tasks extension and its methods.

        Set its ``store`` (before the first task) to keep tasks elsewhere than in memory.

        >>> server = MCPServer("demo")
        >>> server.tasks.max_threads, "tasks/get" in server.extension_methods()
        (8, True)
        """
        with self._lock:
            if self._tasks is None:
                from .tasks import TaskRunner, install

                self._tasks = TaskRunner(self)
                install(self, self._tasks)
            return self._tasks

    @functools.cached_property
    def runs_own_tools(self) -> bool:
        """Whether :meth:`invoke_tool` is this class's own, not a subclass's (a proxy's, say).

        A session may then serve ``tools/call`` from :attr:`registry` itself.

        >>> MCPServer("demo").runs_own_tools
        True
        """
        return type(self).invoke_tool is MCPServer.invoke_tool

    @property
    def task_runner(self) -> TaskRunner | None:
        """:attr:`tasks` once a tool may run as a task (or it was used), else ``None``."""
        return self._tasks

    def check_tool_arguments(self, name: str, arguments: Mapping[str, Any] | None) -> None:
        """Raise ``INVALID_PARAMS`` when ``arguments`` do not fit tool ``name`` (before it runs as a task)."""
        self.registry.check_tool_arguments(name, arguments)

    def task_support(self, name: str) -> tuple[TaskSupport, ToolHandler | None]:
        """Whether tool ``name`` runs as a task, and what runs before its task starts."""
        return self.registry.task_support(name)

    def extension_methods(self) -> list[str]:
        """The names of the extension methods this server answers."""
        return self.registry.extension_methods()

    @property
    def sessions(self) -> list[ServerSession]:
        """The open connections."""
        with self._lock:
            return [s for s in self._sessions.values() if not s.closed]

    def serve_stdio(self) -> None:
        """Serve this server on stdin and stdout until stdin closes or SIGTERM/SIGINT arrives.

        See :func:`mcp_sync.server.stdio.serve_stdio`: while it serves, ``print()``
        goes to stderr and reading stdin gives end-of-file, so tools cannot
        corrupt the protocol.
        """
        from .stdio import serve_stdio

        serve_stdio(self)

    def start(self, transport: Transport, *, per_request: bool = False) -> ServerSession:
        """Serve MCP on ``transport``; returns the new connection's session.

        The same transport twice raises ``ALREADY_CONNECTED``; different
        transports each get their own session. ``per_request``: each request
        the session serves stands alone (see :attr:`ServerSession.per_request`).
        """
        with self._lock:
            if id(transport) in self._sessions:
                raise MCPError(MCP_CODES.ALREADY_CONNECTED, "this transport is already served")
            ended: list[ServerSession] = []
            if len(self._sessions) >= self._sweep_at:
                # Amortised: a server starting a session per request (stateless HTTP) with
                # thousands of long-lived ones open must not scan them all each time.
                ended = [s for s in self._sessions.values() if s.closed]
                for old in ended:
                    del self._sessions[id(old.transport)]
                self._sweep_at = max(_FIRST_SWEEP, 2 * len(self._sessions))
            session = ServerSession(self, transport, per_request=per_request)
            self._sessions[id(transport)] = session
            self._running = True
        for old in ended:
            old.close()  # joins the handler threads of connections that ended
        try:
            self.prepare_session(session)
        except BaseException:
            session.close()  # the transport too, and the server forgets it: nothing half-started stays
            raise
        session.start()
        return session

    def prepare_session(self, session: ServerSession) -> None:
        """Called by :meth:`start` with each new session before it serves its first message.

        Does nothing here. A subclass that keeps its own record of sessions, or
        listens to a session's notifications, does it in this hook rather than after
        ``start`` returns: by then the session's first requests may already be
        running on its handler threads. If the hook raises, the session is closed
        (its transport with it) and ``start`` raises the same error.

        >>> class Counting(MCPServer):
        ...     started = 0
        ...     def prepare_session(self, session: ServerSession) -> None:
        ...         Counting.started += 1
        >>> from mcp_sync.transports.memory import InMemoryTransport
        >>> server = Counting("counting")
        >>> _, end = InMemoryTransport.pair()
        >>> _ = server.start(end)
        >>> Counting.started
        1
        >>> server.stop()
        """

    def forget(self, session: ServerSession) -> None:
        """Let go of ``session`` now: it closed (those that end otherwise are swept out as sessions start).

        A session calls this as it closes; a session not (or no longer) kept is ignored.
        """
        with self._lock:
            if self._sessions.get(id(session.transport)) is session:
                del self._sessions[id(session.transport)]

    def stop(self, timeout: float = 5.0) -> None:
        """Close every connection. The server may be started again afterwards.

        Every connection is closed first, which cancels every running handler
        at once; then their threads (and the tasks' threads) are waited for,
        ``timeout`` seconds in all however many connections there are (a
        handler that ignores its cancellation is left running then).
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
            self._running = False
            tasks = self._tasks
        for session in sessions:
            session.transport.close()
        for session in sessions:
            session.close(max(0.0, deadline - time.monotonic()))
        if tasks is not None:
            tasks.close(max(0.0, deadline - time.monotonic()))
        for wait in self._stop_waiters:
            wait()  # (what the sessions' ends started: a mount's release of their subscriptions)

    def subscription_changed(self, session: ServerSession, uri: str, subscribed: bool) -> None:
        """Called as ``session``'s client subscribes to ``uri`` (``subscribed``) or stops; the watchers are told.

        The session keeps its subscriptions itself; a server that serves
        another one's resources (a proxy) overrides this to subscribe there
        too (see :class:`~mcp_sync.compose.ProxyServer`). Raising refuses a subscription.
        The watchers are those of :meth:`on_subscription`.
        """
        for watcher in self._subscription_watchers:
            watcher(session, uri, subscribed)

    def on_subscription(self, watcher: Callable[[ServerSession, str, bool], None]) -> Callable[[], None]:
        """Call ``watcher(session, uri, subscribed)`` as a client subscribes here or stops; returns the unsubscriber.

        A mount follows its parent's subscriptions this way, to pass them on
        to a mounted proxy. A watcher that raises refuses the subscription.

        >>> server = MCPServer("demo")
        >>> heard = []
        >>> stop = server.on_subscription(lambda session, uri, subscribed: heard.append((uri, subscribed)))
        >>> server.subscription_changed(None, "notes://1", True)
        >>> stop()
        >>> server.subscription_changed(None, "notes://1", False)
        >>> heard
        [('notes://1', True)]
        """
        return self._add_to("_subscription_watchers", watcher)

    def on_stop(self, wait: Callable[[], None]) -> Callable[[], None]:
        """Call ``wait()`` at the end of :meth:`stop`, once the sessions are closed; returns the remover.

        For work a session's end starts on a thread of its own (a mount
        ending subscriptions in the mounted server): ``stop()`` returns with
        no such thread left running. ``wait`` should be bounded.

        >>> server, waited = MCPServer("demo"), []
        >>> remove = server.on_stop(lambda: waited.append(True))
        >>> server.stop(); remove(); server.stop()
        >>> waited
        [True]
        """
        return self._add_to("_stop_waiters", wait)

    def mark_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed.

        With a shared :attr:`backend`, the clients of every process serving
        this server are told; :class:`~mcp_sync.server.backend.BackendUnavailable`
        when the other processes cannot be reached (this one's clients are told first).
        """
        self._announce(Notice("resource_updated", uri))

    def deliver(self, notice: Notice) -> None:
        """Give this process's sessions a server-wide notification (the backend does, for other processes').

        >>> server = MCPServer("demo")
        >>> server.deliver(Notice("list_changed", "tools"))  # no session: nobody to tell
        """
        # Each session is told which notification this is: a stream the processes share has it once.
        if notice.kind == "log":
            detail, level, route = notice.detail or {}, cast(LoggingLevel, notice.subject), Route(once=notice.key)
            for session in self.sessions:
                session.log(level, detail.get("data"), detail.get("logger"), route=route)
            return
        if notice.kind == "task_status":
            from ..protocol.tasks import TaskStatusNotificationParams  # only a server that runs tasks sends these

            status = TaskStatusNotificationParams.model_validate(notice.detail or {})
            for session in self.sessions:
                session.task_changed(notice.subject, status, once=notice.key)
            return
        for session in self.sessions:
            if notice.kind == "resource_updated":
                session.resource_updated(notice.subject, once=notice.key)
            else:
                session.list_changed(notice.subject, once=notice.key)

    def on_notice(self, watcher: Callable[[Notice], None]) -> Callable[[], None]:
        """Call ``watcher(notice)`` for each change of what this server serves that it announces (resource
        updates, list changes, task statuses; not :meth:`log` messages); returns the unsubscriber.

        A server mounted in another (:meth:`mount`) is followed this way.

        >>> server = MCPServer("demo")
        >>> heard = []
        >>> stop = server.on_notice(heard.append)
        >>> server.mark_resource_updated("notes://1"), server.log("info", "not a change")
        (None, None)
        >>> stop()
        >>> heard
        [Notice(kind='resource_updated', subject='notes://1')]
        """
        return self._add_to("_watchers", watcher)

    def _add_to(self, attribute: str, item: Callable[..., None]) -> Callable[[], None]:
        """Add ``item`` to the tuple in ``attribute`` (read without the lock: replaced, never changed in place);
        returns the function that takes it out again."""
        with self._lock:
            setattr(self, attribute, (*getattr(self, attribute), item))

        def remove() -> None:
            with self._lock:
                setattr(self, attribute, tuple(other for other in getattr(self, attribute) if other is not item))

        return remove

    def _announce(self, notice: Notice) -> None:
        """Deliver ``notice`` here and to the watchers, then pass it on to the other processes (which deliver it)."""
        self.deliver(notice)
        if notice.kind != "log":  # a log message is no change of what is served: a mount does not follow it
            for watcher in self._watchers:
                watcher(notice)
        self.backend.publish(notice)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to every connected client whose level it reaches (``logging/setLevel``).

        With a shared :attr:`backend`, every process's clients are told, as
        for :meth:`mark_resource_updated` (which says what a backend down does).

        >>> MCPServer("demo").log("info", {"disk": "90% full"}, "monitor")  # no session: nobody to tell
        """
        check_log_level(level)
        self._announce(Notice("log", level, detail={"data": data, "logger": logger}))

    def info_wire(self) -> dict[str, Any]:
        """This server's name and version as sent in results (built again only when :attr:`info` changes)."""
        cached = self._info_wire
        if cached is None or cached[0] is not self.info:
            cached = (self.info, self.info.to_wire())
            self._info_wire = cached
        return dict(cached[1])

    def get_info(self) -> ServerStats:
        """Counts of what is registered, and whether the server runs.

        >>> MCPServer("demo").get_info().sessions
        0
        """
        from .stats import ServerStats  # (a module of its own: most programs never ask, and a dataclass costs)

        with self._lock:
            return ServerStats(
                name=self.info.name,
                version=self.info.version,
                **self.registry.counts(),
                sessions=len(self.sessions),
                running=self._running,
            )

    def _list_changed(self, kind: str) -> None:
        self._announce(Notice("list_changed", kind))

    def __repr__(self) -> str:
        return f"MCPServer({self.info.name!r}, {self.info.version!r})"
