"""MCPServer: tools, resources and prompts served to MCP clients.

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

A server serves any number of connections at once: each transport given to
:meth:`MCPServer.start` becomes a :class:`~mcp_sync.server.session.ServerSession`
with its own negotiated revision, capabilities, subscriptions and log level.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, format_validation_error
from ..protocol.skills import EXTENSION as SKILLS_EXTENSION
from ..protocol.skills import GetSkillRequestParams, ListSkillsRequestParams, ReadDirectoryRequestParams, SkillEntry
from ..protocol.tasks import TaskStatusNotificationParams
from ..protocol.types import (
    Annotations,
    BlobResourceContents,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    ContentBlock,
    CreateMessageRequestParams,
    CreateMessageResult,
    GetPromptResult,
    Icon,
    Implementation,
    LoggingLevel,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    ReadResourceResult,
    RequestId,
    Resource,
    ResourceTemplate,
    Root,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    WireModel,
)
from ..protocol.versions import check_log_level
from ..runtime.dispatcher import DEFAULT_TIMEOUT, Clock
from ..runtime.events import EventBus
from ..runtime.telemetry import Telemetry
from .authorization import AuthInfo, Authorizer, ScopeRefused
from .backend import Backend, BackendUnavailable, InProcessBackend, Notice, delivering
from .context import NO_CLIENT, Context, ProgressReporter
from .functions import FunctionSpec
from .middleware import Middleware
from .session import ServerSession
from .skills import SkillCatalogue, add_skills
from .stateless import InputRequired, MissingClientCapability, RequestStateSealer
from .uri_template import UriTemplate

if TYPE_CHECKING:
    from pathlib import Path

    from ..protocol.tasks import TaskSupport
    from ..runtime.transport import Transport
    from .mount import Mount
    from .tasks import TaskRunner

__all__ = [
    "CompletionProvider",
    "MCPServer",
    "SamplingProvider",
    "ServerInfo",
    "ServerStats",
]

log = logging.getLogger("mcp_sync.server")

ToolHandler = Callable[[Any, Context], Any]
"""``(arguments, ctx) -> result``: a CallToolResult, content blocks, a string or ``None``."""
ResourceHandler = Callable[[str, Context], Any]
"""``(uri, ctx) -> contents``: a ReadResourceResult, contents, a string or bytes."""
TemplateHandler = Callable[[str, dict[str, str], Context], Any]
"""``(uri, params, ctx) -> contents``: like a resource handler, with the template's parameters."""
PromptHandler = Callable[[dict[str, str], Context], Any]
"""``(arguments, ctx) -> messages``: a GetPromptResult, PromptMessages or a string."""
SamplingProvider = Callable[[CreateMessageRequestParams, Context], CreateMessageResult]
Completer = Callable[[str, dict[str, str]], "Sequence[str]"]
"""``(value, other_arguments) -> suggestions`` for one argument of one prompt or template."""
F = TypeVar("F", bound=Callable[..., Any])
CompletionProvider = Callable[[CompleteRequestParams, Context], "CompleteResult | Sequence[str]"]


@functools.cache
def _content_adapter() -> TypeAdapter[ContentBlock]:
    """Built on first use: a server that never normalises content blocks does not pay for it at import."""
    return TypeAdapter(ContentBlock)


_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class ServerStats:
    """A summary of a server: how much it holds and whether it runs (from :meth:`MCPServer.get_info`).

    Not the server's identity sent to clients: that is :attr:`MCPServer.info`.

    >>> server = MCPServer("demo", "1.0")
    >>> stats = server.get_info()
    >>> (stats.name, stats.tools, stats.running)
    ('demo', 0, False)
    """

    name: str
    version: str
    tools: int
    resources: int
    resource_templates: int
    prompts: int
    roots: int
    sessions: int
    running: bool


ServerInfo = ServerStats
"""Deprecated name of :class:`ServerStats` (it was easy to mistake for the server's identity)."""


_FIRST_SWEEP = 64
"""How many sessions a server keeps before it first sweeps out the closed ones."""

_REQUEST_STATE_RENAMED = "MCPServer.request_state is deprecated; use MCPServer.request_state_sealer"


@dataclass
class _RegisteredTool:
    tool: Tool
    handler: ToolHandler
    input_model: type[BaseModel] | None
    scopes: frozenset[str] = frozenset()
    task: TaskSupport = "forbidden"
    before_task: ToolHandler | None = None


def _validated(registered: _RegisteredTool, name: str, arguments: Mapping[str, Any] | None) -> Any:
    """The arguments as the tool's handler gets them: checked by its input model when it has one."""
    args: Any = dict(arguments or {})
    if registered.input_model is not None:
        try:
            args = registered.input_model.model_validate(args)
        except ValidationError as exc:
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Invalid arguments for tool {name}: {format_validation_error(exc)}",
                cause=exc,
                context={"tool": name},
            ) from exc
    return args


@dataclass(frozen=True)
class ExtensionMethod:
    """A request method beyond the core ones (see :meth:`MCPServer.register_method`)."""

    params: type[WireModel]
    handler: Callable[[Any, Context], WireModel]
    cacheable: bool = False


@dataclass
class _RegisteredResource:
    resource: Resource
    handler: ResourceHandler
    cache: dict[str, Any]
    scopes: frozenset[str] = frozenset()


@dataclass
class _RegisteredTemplate:
    template: ResourceTemplate
    handler: TemplateHandler
    parsed: UriTemplate
    cache: dict[str, Any]
    scopes: frozenset[str] = frozenset()


@dataclass
class _RegisteredPrompt:
    prompt: Prompt
    handler: PromptHandler
    scopes: frozenset[str] = frozenset()


def _to_call_tool_result(value: Any) -> CallToolResult:
    """Normalise what a tool handler returned into a CallToolResult."""
    if isinstance(value, CallToolResult):
        return value
    if value is None:
        return CallToolResult(content=[])
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(text=value)])
    if isinstance(value, (WireModel, Mapping)):
        value = [value]
    return CallToolResult(
        content=[_content_adapter().validate_python(v.to_wire() if isinstance(v, WireModel) else v) for v in value]
    )


def _to_contents(uri: str, mime_type: str | None, value: Any) -> ReadResourceResult:
    """Normalise what a resource handler returned into a ReadResourceResult."""
    if isinstance(value, ReadResourceResult):
        return value
    if isinstance(value, (str, bytes, Mapping, TextResourceContents, BlobResourceContents)):
        value = [value]
    contents: list[TextResourceContents | BlobResourceContents] = []
    for item in value:
        if isinstance(item, str):
            contents.append(TextResourceContents(uri=uri, mime_type=mime_type, text=item))
        elif isinstance(item, bytes):
            blob = base64.b64encode(item).decode("ascii")
            contents.append(BlobResourceContents(uri=uri, mime_type=mime_type, blob=blob))
        else:
            contents.append(item)
    return ReadResourceResult(contents=contents)


def _to_prompt_result(value: Any, description: str | None) -> GetPromptResult:
    if isinstance(value, GetPromptResult):
        return value
    if isinstance(value, str):
        value = PromptMessage(role="user", content=TextContent(text=value))
    if isinstance(value, PromptMessage):
        value = [value]
    messages = [
        PromptMessage(role="user", content=TextContent(text=item)) if isinstance(item, str) else item for item in value
    ]
    return GetPromptResult(description=description, messages=messages)


def _check_scopes(needed: frozenset[str], auth: AuthInfo | None, what: str) -> None:
    """Refuse a call whose auth lacks one of ``needed`` (without auth, nothing authenticates: no check)."""
    if needed and auth is not None and not auth.allows(needed):
        raise ScopeRefused(needed, what)


def _may_use(scopes: frozenset[str], auth: AuthInfo | None) -> bool:
    return auth is None or auth.allows(scopes)


def _cache_hints(ttl_ms: int | None, cache_scope: str | None) -> dict[str, Any]:
    """A registration's own caching hints, as fields of its read results."""
    hints: dict[str, Any] = {}
    if ttl_ms is not None:
        hints["ttl_ms"] = ttl_ms
    if cache_scope is not None:
        hints["cache_scope"] = cache_scope
    return hints


def _resource_value(value: Any) -> Any:
    """What a decorated resource function returned, as contents: JSON for plain data."""
    if isinstance(value, (str, bytes, ReadResourceResult, TextResourceContents, BlobResourceContents)):
        return value
    if isinstance(value, list) and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False)


def _page(items: Sequence[_M], cursor: str | None, size: int | None) -> tuple[list[_M], str | None]:
    """One page of ``items`` from ``cursor``, and the cursor of the next page."""
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii"))
        except (ValueError, UnicodeError):
            start = -1
        if start < 0:
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    if size is None:
        return list(items[start:]), None
    end = start + size
    next_cursor = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
    return list(items[start:end]), next_cursor


class MCPServer:
    """An MCP server: register tools, resources and prompts, then :meth:`start` transports.

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
        self._tools: dict[str, _RegisteredTool] = {}
        self._resources: dict[str, _RegisteredResource] = {}
        self._templates: dict[str, _RegisteredTemplate] = {}
        self._prompts: dict[str, _RegisteredPrompt] = {}
        self._roots: dict[str, Root] = {}
        self._completers: dict[tuple[str, str, str], Completer] = {}
        self._info_wire: tuple[Implementation, dict[str, Any]] | None = None
        self.extensions: dict[str, dict[str, Any]] = {}
        """The extensions declared under ``capabilities.extensions``: identifier -> settings."""
        self._methods: dict[str, ExtensionMethod] = {}
        self._skills: SkillCatalogue | None = None
        self._tasks: TaskRunner | None = None
        # By the id() of each session's transport (alive while its session is kept); closed
        # sessions are swept out as new ones start, once the table doubled since the last sweep.
        self._sessions: dict[int, ServerSession] = {}
        self._sweep_at = _FIRST_SWEEP
        self._running = False

    @property
    def request_state(self) -> RequestStateSealer:
        """Deprecated name of :attr:`request_state_sealer` (it holds the sealer, not a state)."""
        warnings.warn(_REQUEST_STATE_RENAMED, DeprecationWarning, stacklevel=2)
        return self.request_state_sealer

    @request_state.setter
    def request_state(self, sealer: RequestStateSealer) -> None:
        warnings.warn(_REQUEST_STATE_RENAMED, DeprecationWarning, stacklevel=2)
        self.request_state_sealer = sealer

    # ------------------------------------------------------------ registries

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
    ) -> Tool:
        """Register a tool; ``handler(arguments, ctx)`` runs on each call.

        ``scopes`` are the OAuth scopes a caller needs (see
        :meth:`scopes_for`): a request whose ``ctx.auth`` lacks one is
        refused, and listings leave the tool out for it.

        ``task`` (``"optional"`` or ``"required"``) lets the tool run as a
        task (see :mod:`mcp_sync.server.tasks`), and declares the tasks
        extension; ``before_task(arguments, ctx)`` then runs on the request
        before the task starts (it may ask the client in ``inputRequests``
        rounds; the task's handler finds those answers under the same keys).

        ``input_schema`` is a JSON schema, or a pydantic model whose schema is
        published and which validates the arguments before each call (invalid
        ones raise ``INVALID_PARAMS``, and the handler gets the model).
        """
        input_model: type[BaseModel] | None = None
        if isinstance(input_schema, type):
            input_model = input_schema
            schema: dict[str, Any] = input_schema.model_json_schema()
        else:
            schema = dict(input_schema or {"type": "object"})
        tool = Tool(
            name=name,
            title=title,
            description=description,
            input_schema=schema,
            output_schema=dict(output_schema) if output_schema is not None else None,
            annotations=annotations,
            icons=icons,
            meta=meta,
        )
        if task not in ("forbidden", "optional", "required"):
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"task must be forbidden, optional or required, not {task!r}")
        if task != "forbidden":
            tool.execution = {"taskSupport": task}  # type: ignore[attr-defined]  # an extra field (2025-11-25)
            _ = self.tasks  # declares the extension
        with self._lock:
            if name in self._tools:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"tool {name!r} is already registered")
            self._tools[name] = _RegisteredTool(tool, handler, input_model, frozenset(scopes), task, before_task)
        self._list_changed("tools")
        return tool

    def unregister_tool(self, name: str) -> None:
        """Remove a tool; ``NOT_FOUND`` if there is none by that name."""
        self._unregister(self._tools, name, "tool")
        self._list_changed("tools")

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
        annotations: Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> Resource:
        """Register a resource at a fixed ``uri``; ``handler(uri, ctx)`` returns its contents.

        ``ttl_ms`` and ``cache_scope`` are the caching hints of its reads for
        2026-07-28 clients (the server's defaults otherwise); ``scopes`` the
        OAuth scopes a reader needs (as for :meth:`register_tool`).
        """
        resource = Resource(
            uri=uri,
            name=name or uri,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=annotations,
            icons=icons,
            meta=meta,
        )
        with self._lock:
            if uri in self._resources:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"resource {uri!r} is already registered")
            self._resources[uri] = _RegisteredResource(
                resource, handler, _cache_hints(ttl_ms, cache_scope), frozenset(scopes)
            )
        self._list_changed("resources")
        return resource

    def register_resource_template(
        self,
        uri_template: str,
        handler: TemplateHandler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> ResourceTemplate:
        """Register a family of resources such as ``"users://{id}/profile"``.

        ``handler(uri, params, ctx)`` gets the parameters read from the URI:
        ``{name}`` stands for one path segment, ``{+name}`` for any text. A
        template :mod:`~mcp_sync.server.uri_template` cannot serve raises
        ``ValueError`` here.

        >>> server = MCPServer("demo")
        >>> _ = server.register_resource_template("users://{id}/profile", lambda uri, p, ctx: f"user {p['id']}")
        >>> server.read_resource("users://7/profile").text
        'user 7'
        """
        parsed = UriTemplate.parse(uri_template)
        template = ResourceTemplate(
            uri_template=uri_template,
            name=name or uri_template,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            icons=icons,
            meta=meta,
        )
        with self._lock:
            if uri_template in self._templates:
                raise MCPError(
                    MCP_CODES.DUPLICATE_REGISTRATION, f"resource template {uri_template!r} is already registered"
                )
            self._templates[uri_template] = _RegisteredTemplate(
                template, handler, parsed, _cache_hints(ttl_ms, cache_scope), frozenset(scopes)
            )
        self._list_changed("resources")
        return template

    def unregister_resource(self, uri: str) -> None:
        """Remove a resource or resource template; ``NOT_FOUND`` if there is none."""
        with self._lock:
            if uri in self._templates:
                del self._templates[uri]
            else:
                self._unregister(self._resources, uri, "resource")
        self._list_changed("resources")

    def register_prompt(
        self,
        name: str,
        handler: PromptHandler,
        *,
        title: str | None = None,
        description: str | None = None,
        arguments: Iterable[PromptArgument] | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> Prompt:
        """Register a prompt; ``handler(arguments, ctx)`` returns its messages.

        ``scopes``: the OAuth scopes a caller needs (see :meth:`register_tool`).
        """
        prompt = Prompt(
            name=name,
            title=title,
            description=description,
            arguments=list(arguments) if arguments is not None else None,
            icons=icons,
            meta=meta,
        )
        with self._lock:
            if name in self._prompts:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"prompt {name!r} is already registered")
            self._prompts[name] = _RegisteredPrompt(prompt, handler, frozenset(scopes))
        self._list_changed("prompts")
        return prompt

    def unregister_prompt(self, name: str) -> None:
        """Remove a prompt; ``NOT_FOUND`` if there is none by that name."""
        self._unregister(self._prompts, name, "prompt")
        self._list_changed("prompts")

    def register_root(self, uri: str, name: str | None = None) -> Root:
        """Record a root (a directory or location) that this server works within."""
        root = Root(uri=uri, name=name)
        with self._lock:
            if uri in self._roots:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"root {uri!r} is already registered")
            self._roots[uri] = root
        return root

    def unregister_root(self, uri: str) -> None:
        """Forget a root; ``NOT_FOUND`` if there is none."""
        self._unregister(self._roots, uri, "root")

    def _unregister(self, registry: dict[str, Any], key: str, kind: str) -> None:
        with self._lock:
            if registry.pop(key, None) is None:
                raise MCPError(MCP_CODES.NOT_FOUND, f"no {kind} {key!r}", context={kind: key})

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

    # ------------------------------------------------------------ decorators

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
    ) -> F | Callable[[F], F]:
        """Register a plain function as a tool (``@server.tool`` or ``@server.tool(...)``).

        The name and description come from the function and its docstring;
        the input schema from its type hints (defaults, ``Annotated`` and
        ``Field`` descriptions, pydantic models, enums, lists, optionals),
        and arguments are validated before each call (``-32602`` naming the
        field). A return annotation gives an ``outputSchema``, and results
        carry ``structuredContent`` plus a text rendering for older clients
        (``structured_output=False`` turns that off). A parameter annotated
        with :class:`Context` receives the handler context. The function is
        returned unchanged. ``task="optional"`` or ``"required"`` lets it run
        as a task (see :meth:`register_tool`).

        >>> server = MCPServer("demo")
        >>> @server.tool
        ... def add(a: int, b: int = 0) -> int:
        ...     "Add two numbers."
        ...     return a + b
        >>> server.invoke_tool("add", {"a": 2, "b": 3}).structured_content
        {'result': 5}
        """

        def register(function: F) -> F:
            spec = FunctionSpec(function, name, description, structured_output=structured_output)
            self.register_tool(
                spec.name,
                lambda arguments, ctx: spec.tool_result(spec.call(arguments, ctx)),
                description=spec.description,
                input_schema=spec.arguments_model,
                output_schema=spec.output_schema(),
                title=title,
                annotations=annotations,
                icons=icons,
                meta=meta,
                scopes=scopes,
                task=task,
            )
            return function

        return register if fn is None else register(fn)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]:
        """Register a function as a resource, or as a template when ``uri`` has ``{parameters}``.

        A template's parameters are passed to the function's parameters of
        the same names (converted by their type hints). The function returns
        text, bytes, resource contents, or anything JSON-serialisable (sent
        as ``application/json``).

        >>> server = MCPServer("demo")
        >>> @server.resource("users://{user_id}/name")
        ... def user_name(user_id: int) -> str:
        ...     return f"user number {user_id}"
        >>> server.read_resource("users://7/name").text
        'user number 7'
        """

        def register(function: F) -> F:
            spec = FunctionSpec(function, name, description)
            variables = UriTemplate.parse(uri).variables
            parameters = set(spec.arguments_model.model_fields)
            if set(variables) != parameters:
                raise TypeError(
                    f"{spec.name}: the parameters {sorted(parameters)} must be the URI's parameters {sorted(variables)}"
                )
            options: dict[str, Any] = {
                "name": name or spec.name,
                "title": title,
                "description": spec.description,
                "mime_type": mime_type,
                "annotations": annotations,
                "icons": icons,
                "meta": meta,
                "ttl_ms": ttl_ms,
                "cache_scope": cache_scope,
                "scopes": scopes,
            }
            if variables:
                self.register_resource_template(
                    uri, lambda _uri, params, ctx: _resource_value(spec.call(params, ctx)), **options
                )
            else:
                self.register_resource(uri, lambda _uri, ctx: _resource_value(spec.call({}, ctx)), **options)
            return function

        return register

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
        """Register a function as a prompt; its parameters are the prompt's arguments.

        It returns a string (one user message), a list of strings and
        :class:`~mcp_sync.types.PromptMessage`, or a ``GetPromptResult``.

        >>> server = MCPServer("demo")
        >>> @server.prompt
        ... def review(code: str, language: str = "python") -> str:
        ...     "Ask for a code review."
        ...     return f"Review this {language}: {code}"
        >>> [a.name for a in server.list_prompts()[0].arguments]
        ['code', 'language']
        """

        def register(function: F) -> F:
            spec = FunctionSpec(function, name, description)
            self.register_prompt(
                spec.name,
                lambda arguments, ctx: spec.call(arguments, ctx),
                title=title,
                description=spec.description,
                arguments=spec.prompt_arguments(),
                icons=icons,
                meta=meta,
                scopes=scopes,
            )
            return function

        return register if fn is None else register(fn)

    def completion(
        self, *, prompt: str | None = None, template: str | None = None, argument: str
    ) -> Callable[[Completer], Completer]:
        """Register suggestions for one argument of a prompt or a resource template.

        The function gets the text typed so far and the other arguments
        already given, and returns suggestions.

        >>> server = MCPServer("demo")
        >>> @server.completion(prompt="review", argument="language")
        ... def languages(value, arguments):
        ...     return [name for name in ("python", "perl", "rust") if name.startswith(value)]
        """
        if (prompt is None) == (template is None):
            raise TypeError("completion() needs exactly one of prompt= or template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(template))

        def register(function: Completer) -> Completer:
            self._completers[(*key, argument)] = function
            return function

        return register

    # -------------------------------------------------------------- listings

    def list_tools(self, auth: AuthInfo | None = None) -> list[Tool]:
        """The registered tools, in registration order (with ``auth``: only those it has the scopes of)."""
        return [t.tool for t in self._tools.values() if _may_use(t.scopes, auth)]

    def get_tool(self, name: str) -> Tool | None:
        """The registered tool called ``name``, or ``None``.

        >>> server = MCPServer("demo")
        >>> server.get_tool("missing") is None
        True
        """
        registered = self._tools.get(name)
        return None if registered is None else registered.tool

    def list_resources(self, auth: AuthInfo | None = None) -> list[Resource]:
        """The registered fixed resources (with ``auth``: only those it has the scopes of)."""
        return [r.resource for r in self._resources.values() if _may_use(r.scopes, auth)]

    def list_resource_templates(self, auth: AuthInfo | None = None) -> list[ResourceTemplate]:
        """The registered resource templates (with ``auth``: only those it has the scopes of)."""
        return [t.template for t in self._templates.values() if _may_use(t.scopes, auth)]

    def list_prompts(self, auth: AuthInfo | None = None) -> list[Prompt]:
        """The registered prompts (with ``auth``: only those it has the scopes of)."""
        return [p.prompt for p in self._prompts.values() if _may_use(p.scopes, auth)]

    def scopes_for(self, method: str, params: Mapping[str, Any]) -> frozenset[str]:
        """The scopes a request needs for the item it names: the tool of a ``tools/call``, the
        resource (or template) of a ``resources/read``, the prompt of a ``prompts/get``; none otherwise.

        The HTTP app asks before passing a request on (to answer 403 in time);
        the calls themselves check the same registrations against ``ctx.auth``.

        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("reset", lambda args, ctx: "done", scopes=["admin"])
        >>> sorted(server.scopes_for("tools/call", {"name": "reset"})), server.scopes_for("ping", {})
        (['admin'], frozenset())
        """
        if method == "tools/call":
            tool = self._tools.get(str(params.get("name")))
            return tool.scopes if tool is not None else frozenset()
        if method == "prompts/get":
            prompt = self._prompts.get(str(params.get("name")))
            return prompt.scopes if prompt is not None else frozenset()
        if method == "resources/read":
            uri = str(params.get("uri"))
            resource = self._resources.get(uri)
            if resource is not None:
                return resource.scopes
            template = next((t for t in list(self._templates.values()) if t.parsed.match(uri) is not None), None)
            return template.scopes if template is not None else frozenset()
        return frozenset()

    def all_scopes(self) -> frozenset[str]:
        """Every scope some tool, resource, template or prompt needs (for ``scopes_supported``)."""
        with self._lock:
            registered: list[Any] = [
                *self._tools.values(),
                *self._resources.values(),
                *self._templates.values(),
                *self._prompts.values(),
            ]
        return frozenset().union(*(r.scopes for r in registered))

    def list_roots(self) -> list[Root]:
        """The registered roots."""
        return list(self._roots.values())

    def page(self, items: Sequence[_M], cursor: str | None) -> tuple[list[_M], str | None]:
        """One page of a listing, at this server's ``page_size``."""
        return _page(items, cursor, self.page_size)

    # ------------------------------------------------------------ local calls

    def invoke_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressReporter | None = None,
        context: Context | None = None,
    ) -> CallToolResult:
        """Run a tool here, without a client.

        Invalid arguments raise ``INVALID_PARAMS``; an unknown tool raises
        ``NOT_FOUND``; an exception in the handler becomes a result with
        ``is_error=True``; a call whose ``cancel`` event was set raises
        ``REQUEST_CANCELLED``.
        """
        # A local call has no client: its context gets the channel that says so.
        ctx = context or Context(cancelled=cancel, progress=progress, server=self, channel=NO_CLIENT)
        result = self._run_registered(name, arguments, ctx, keep_text=False)
        assert not isinstance(result, str)  # (keep_text=False: always a model)
        return result

    def _tool_result_wire(self, name: str, arguments: Mapping[str, Any] | None, context: Context) -> dict[str, Any]:
        """``invoke_tool(name, arguments, context=context).to_wire()``, made without a model for a plain string.

        What a session sends for ``tools/call``: a tool returning text (the
        common case) has its wire form built at once, with no
        :class:`CallToolResult` made and dumped again.

        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("hi", lambda arguments, ctx: "hello")
        >>> server._tool_result_wire("hi", {}, Context(server=server))
        {'content': [{'type': 'text', 'text': 'hello'}]}
        """
        result = self._run_registered(name, arguments, context, keep_text=True)
        if isinstance(result, str):
            return {"content": [{"type": "text", "text": result}]}
        return result.to_wire()

    def _run_registered(
        self, name: str, arguments: Mapping[str, Any] | None, ctx: Context, *, keep_text: bool
    ) -> CallToolResult | str:
        """Run tool ``name``; with ``keep_text``, a plain string it returns is returned as it is."""
        registered = self._tools.get(name)
        if registered is None:
            raise MCPError(
                MCP_CODES.NOT_FOUND,
                f"Unknown tool: {name}",
                context={"tool": name},
                jsonrpc_code=JsonRpcCode.INVALID_PARAMS,
            )
        _check_scopes(registered.scopes, ctx.auth, f"tool {name}")
        args = _validated(registered, name, arguments)
        result: CallToolResult | str
        try:
            value = registered.handler(args, ctx)
            result = value if keep_text and type(value) is str else _to_call_tool_result(value)
        except (InputRequired, MissingClientCapability):
            raise  # the protocol answers these (2026-07-28), not the tool
        except BackendUnavailable:
            raise  # the server's infrastructure failed, not the tool: the request fails
        except Exception as exc:
            if ctx.task_id is not None and isinstance(exc, MCPError):
                raise  # in a task a protocol error fails the task (SEP-2663); a tool error completes it
            log.info("tool %s failed: %s", name, exc, exc_info=True)
            result = CallToolResult(content=[TextContent(text=f"Error: {exc}")], is_error=True)
        if ctx.cancelled.is_set():
            raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"tool {name} was cancelled", context={"tool": name})
        return result

    def read_resource(self, uri: str, *, context: Context | None = None) -> ReadResourceResult:
        """Read a resource here, without a client; ``NOT_FOUND`` for an unknown URI."""
        ctx = context or Context(server=self, channel=NO_CLIENT)
        registered = self._resources.get(uri)
        if registered is not None:
            _check_scopes(registered.scopes, ctx.auth, f"resource {uri}")
            result = _to_contents(uri, registered.resource.mime_type, registered.handler(uri, ctx))
            return result.model_copy(update=registered.cache) if registered.cache else result
        for template in list(self._templates.values()):
            values = template.parsed.match(uri)
            if values is not None:
                _check_scopes(template.scopes, ctx.auth, f"resource {uri}")
                result = _to_contents(uri, template.template.mime_type, template.handler(uri, values, ctx))
                return result.model_copy(update=template.cache) if template.cache else result
        raise MCPError(MCP_CODES.NOT_FOUND, f"Resource not found: {uri}", context={"uri": uri})

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, context: Context | None = None
    ) -> GetPromptResult:
        """Render a prompt here, without a client.

        An unknown prompt raises ``NOT_FOUND``; a missing required argument
        raises ``INVALID_PARAMS``.
        """
        registered = self._prompts.get(name)
        if registered is None:
            raise MCPError(
                MCP_CODES.NOT_FOUND,
                f"Unknown prompt: {name}",
                context={"prompt": name},
                jsonrpc_code=JsonRpcCode.INVALID_PARAMS,
            )
        ctx = context or Context(server=self, channel=NO_CLIENT)
        _check_scopes(registered.scopes, ctx.auth, f"prompt {name}")
        args = dict(arguments or {})
        missing = [a.name for a in registered.prompt.arguments or () if a.required and a.name not in args]
        if missing:
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Missing required arguments for prompt {name}: {', '.join(missing)}",
                context={"prompt": name, "missing": missing},
            )
        value = registered.handler(args, ctx)
        return _to_prompt_result(value, registered.prompt.description)

    def get_prompt_messages(self, name: str, arguments: Mapping[str, str] | None = None) -> list[PromptMessage]:
        """Just the messages of :meth:`get_prompt`."""
        return self.get_prompt(name, arguments).messages

    def complete(self, params: CompleteRequestParams, context: Context | None = None) -> CompleteResult:
        """Argument completions: from a completer registered for that argument, else the
        completion provider, else none."""
        ref = params.ref
        key = (ref.type, ref.name if isinstance(ref, PromptReference) else ref.uri, params.argument.name)
        completer = self._completers.get(key)
        if completer is not None:
            given = params.context.arguments if params.context is not None else None
            value: Any = completer(params.argument.value, dict(given or {}))
        elif self.completion_provider is not None:
            value = self.completion_provider(params, context or Context(server=self, channel=NO_CLIENT))
        else:
            value = []
        if isinstance(value, CompleteResult):
            return value
        values = list(value)
        return CompleteResult(completion=Completion(values=values[:100], total=len(values), has_more=len(values) > 100))

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
        """Answer requests ``method`` (an extension's) with ``handler(params, ctx)``.

        The params are validated as ``params`` (``-32602`` otherwise);
        ``cacheable`` results carry the server's caching hints for 2026-07-28
        clients. A core method, or one registered already, raises
        ``DUPLICATE_REGISTRATION``.

        >>> from mcp_sync.protocol.types import EmptyResult, PaginatedRequestParams
        >>> server = MCPServer("demo")
        >>> server.register_method("example/noop", PaginatedRequestParams, lambda params, ctx: EmptyResult())
        >>> server.extension_method("example/noop").cacheable
        False
        """
        from .session import core_methods

        with self._lock:
            if method in self._methods or method in core_methods():
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"method {method!r} is already answered")
            self._methods[method] = ExtensionMethod(params, handler, cacheable)

    def extension_method(self, method: str) -> ExtensionMethod | None:
        """The extension method registered as ``method``, if any."""
        return self._methods.get(method)

    def skill_catalogue(self) -> SkillCatalogue:
        """The skills this server serves; the first call declares the skills extension and its methods."""
        with self._lock:
            if self._skills is None:
                self._skills = catalogue = SkillCatalogue(self)
                self.extensions[SKILLS_EXTENSION] = {"directoryRead": True}
                self.register_method("skills/list", ListSkillsRequestParams, catalogue.list, cacheable=True)
                self.register_method("skills/get", GetSkillRequestParams, catalogue.get, cacheable=True)
                self.register_method("resources/directory/read", ReadDirectoryRequestParams, catalogue.read_directory)
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
    def _runs_own_tools(self) -> bool:
        """Whether :meth:`invoke_tool` is this class's own (a session may then take its fast path for tools).

        >>> MCPServer("demo")._runs_own_tools
        True
        """
        return type(self).invoke_tool is MCPServer.invoke_tool

    @property
    def task_runner(self) -> TaskRunner | None:
        """:attr:`tasks` once a tool may run as a task (or it was used), else ``None``."""
        return self._tasks

    def check_tool_arguments(self, name: str, arguments: Mapping[str, Any] | None) -> None:
        """Raise ``INVALID_PARAMS`` when ``arguments`` do not fit tool ``name`` (before it runs as a task).

        >>> server = MCPServer("demo")
        >>> @server.tool
        ... def double(n: int) -> int:
        ...     return 2 * n
        >>> server.check_tool_arguments("double", {"n": "two"})
        Traceback (most recent call last):
        ...
        mcp_sync.protocol.errors.MCPError: [MCP.INVALID_PARAMS] Invalid arguments for tool double: ...
        """
        registered = self._tools.get(name)
        if registered is None:
            raise MCPError(MCP_CODES.NOT_FOUND, f"Unknown tool: {name}", jsonrpc_code=JsonRpcCode.INVALID_PARAMS)
        _validated(registered, name, arguments)

    def task_support(self, name: str) -> tuple[TaskSupport, ToolHandler | None]:
        """Whether tool ``name`` runs as a task, and what runs before its task starts."""
        registered = self._tools.get(name)
        return ("forbidden", None) if registered is None else (registered.task, registered.before_task)

    def extension_methods(self) -> list[str]:
        """The names of the extension methods this server answers."""
        return list(self._methods)

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

    def start(self, transport: Transport) -> ServerSession:
        """Serve MCP on ``transport``; returns the new connection's session.

        The same transport twice raises ``ALREADY_CONNECTED``; different
        transports each get their own session.
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
            session = ServerSession(self, transport)
            self._sessions[id(transport)] = session
            self._running = True
        for old in ended:
            old.close()  # joins the handler threads of connections that ended
        session.start()
        return session

    def _forget(self, session: ServerSession) -> None:
        """A session closed: let go of it now (those that end otherwise are swept as sessions start)."""
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
        token = delivering.set(notice)
        try:
            if notice.kind == "task_status":
                status = TaskStatusNotificationParams.model_validate(notice.detail or {})
                for session in self.sessions:
                    session.task_changed(notice.subject, status)
                return
            for session in self.sessions:
                if notice.kind == "resource_updated":
                    session.resource_updated(notice.subject)
                else:
                    session.list_changed(notice.subject)
        finally:
            delivering.reset(token)

    def on_notice(self, watcher: Callable[[Notice], None]) -> Callable[[], None]:
        """Call ``watcher(notice)`` for each server-wide notification this server raises; returns the unsubscriber.

        A server mounted in another (:meth:`mount`) is followed this way.

        >>> server = MCPServer("demo")
        >>> heard = []
        >>> stop = server.on_notice(heard.append)
        >>> server.mark_resource_updated("notes://1")
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
        for watcher in self._watchers:
            watcher(notice)
        self.backend.publish(notice)

    def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to every connected client (each filters by its level)."""
        check_log_level(level)
        for session in self.sessions:
            session.log(level, data, logger)

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
        with self._lock:
            return ServerStats(
                name=self.info.name,
                version=self.info.version,
                tools=len(self._tools),
                resources=len(self._resources),
                resource_templates=len(self._templates),
                prompts=len(self._prompts),
                roots=len(self._roots),
                sessions=len(self.sessions),
                running=self._running,
            )

    def _list_changed(self, kind: str) -> None:
        self._announce(Notice("list_changed", kind))

    def __repr__(self) -> str:
        return f"MCPServer({self.info.name!r}, {self.info.version!r})"
