"""ServerRegistry: what a server declares (tools, resources, templates, prompts, completions, extension methods).

A registry holds each registration with its handler, lists them, and runs
them for a caller that brings a :class:`~mcp_sync.server.context.Context`;
it knows nothing of connections. :class:`~mcp_sync.server.core.MCPServer`
has one (:attr:`MCPServer.registry <mcp_sync.server.core.MCPServer.registry>`)
and hosts it: its ``register_*`` methods and decorators are this registry's,
and it tells connected clients when a list changes.

>>> from mcp_sync import MCPServer
>>> registry = ServerRegistry()
>>> @registry.tool
... def add(a: int, b: int) -> int:
...     return a + b
>>> from mcp_sync import MCPServer
>>> server = MCPServer("demo")
>>> registry.call_tool("add", {"a": 1, "b": 2}, Context(server=server)).structured_content
{'result': 3}
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import BaseModel, ValidationError

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, JsonRpcCode, MCPError, format_validation_error
from ..protocol.types import Icon, Tool, ToolAnnotations, WireModel
from .authorization import AuthInfo, ScopeRefused
from .backend import BackendUnavailable
from .context import Context
from .functions import FunctionSpec
from .results import decorated_resource_value, prompt_result, resource_result, to_complete_result, tool_result
from .stateless import InputRequired, MissingClientCapability

if TYPE_CHECKING:
    from ..protocol.tasks import TaskSupport
    from ..protocol.types import (
        Annotations,
        CallToolResult,
        CompleteRequestParams,
        CompleteResult,
        GetPromptResult,
        Prompt,
        PromptArgument,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Root,
    )
    from .uri_template import UriTemplate

__all__ = [
    "Completer",
    "ExtensionMethod",
    "PromptHandler",
    "ResourceHandler",
    "ServerRegistry",
    "TemplateHandler",
    "ToolHandler",
]

log = logging.getLogger(__name__)

ToolHandler = Callable[[Any, Context], Any]
"""``(arguments, ctx) -> result``: a CallToolResult, content blocks, a string or ``None``."""
ResourceHandler = Callable[[str, Context], Any]
"""``(uri, ctx) -> contents``: a ReadResourceResult, contents, a string or bytes."""
TemplateHandler = Callable[[str, dict[str, str], Context], Any]
"""``(uri, params, ctx) -> contents``: like a resource handler, with the template's parameters."""
PromptHandler = Callable[[dict[str, str], Context], Any]
"""``(arguments, ctx) -> messages``: a GetPromptResult, PromptMessages or a string."""
Completer = Callable[[str, dict[str, str]], "Sequence[str]"]
"""``(value, other_arguments) -> suggestions`` for one argument of one prompt or template."""
F = TypeVar("F", bound=Callable[..., Any])


# The records of what is registered are plain classes, not dataclasses: a
# dataclass compiles its methods when its module is imported, and every
# server's start would pay for four classes it has no use for as values.


class _RegisteredTool:
    __slots__ = ("before_task", "handler", "input_model", "scopes", "task", "tool")

    def __init__(
        self,
        tool: Tool,
        handler: ToolHandler,
        input_model: type[BaseModel] | None,
        scopes: frozenset[str],
        task: TaskSupport,
        before_task: ToolHandler | None,
    ) -> None:
        self.tool = tool
        self.handler = handler
        self.input_model = input_model
        self.scopes = scopes
        self.task = task
        self.before_task = before_task


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


class ExtensionMethod:
    """A request method beyond the core ones (see :meth:`MCPServer.register_method`): its params' model, its
    handler, and whether its result may be cached (2026-07-28).

    A plain class with slots, not a dataclass: a server with tasks or skills makes a few, and a frozen dataclass
    costs a process's start about a fifth of a millisecond.

    >>> ExtensionMethod(WireModel, lambda params, ctx: WireModel())
    ExtensionMethod(params=WireModel, cacheable=False)
    """

    __slots__ = ("__weakref__", "cacheable", "handler", "params")

    def __init__(
        self, params: type[WireModel], handler: Callable[[Any, Context], WireModel], cacheable: bool = False
    ) -> None:
        self.params = params
        self.handler = handler
        self.cacheable = cacheable

    def __repr__(self) -> str:
        return f"ExtensionMethod(params={self.params.__name__}, cacheable={self.cacheable})"


class _RegisteredResource:
    __slots__ = ("cache", "handler", "resource", "scopes")

    def __init__(
        self, resource: Resource, handler: ResourceHandler, cache: dict[str, Any], scopes: frozenset[str]
    ) -> None:
        self.resource = resource
        self.handler = handler
        self.cache = cache
        self.scopes = scopes


class _RegisteredTemplate:
    __slots__ = ("cache", "handler", "parsed", "scopes", "template")

    def __init__(
        self,
        template: ResourceTemplate,
        handler: TemplateHandler,
        parsed: UriTemplate,
        cache: dict[str, Any],
        scopes: frozenset[str],
    ) -> None:
        self.template = template
        self.handler = handler
        self.parsed = parsed
        self.cache = cache
        self.scopes = scopes


class _RegisteredPrompt:
    __slots__ = ("handler", "prompt", "scopes")

    def __init__(self, prompt: Prompt, handler: PromptHandler, scopes: frozenset[str]) -> None:
        self.prompt = prompt
        self.handler = handler
        self.scopes = scopes


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


class ServerRegistry:
    """The tools, resources, templates, prompts, roots, completers and extension methods a server declares.

    ``changed(kind)`` is called after the ``"tools"``, ``"resources"`` or
    ``"prompts"`` list changed, and ``declare_tasks()`` when a tool that may
    run as a task is registered: the hosting :class:`~mcp_sync.server.core.MCPServer`
    tells its clients, and declares its tasks extension. Everything here is
    safe to call from any thread.

    >>> registry = ServerRegistry()
    >>> _ = registry.register_tool("hi", lambda arguments, ctx: "hello")
    >>> [tool.name for tool in registry.list_tools()]
    ['hi']
    """

    def __init__(
        self,
        *,
        changed: Callable[[str], None] | None = None,
        declare_tasks: Callable[[], object] | None = None,
    ) -> None:
        self._changed = changed or (lambda kind: None)
        self._declare_tasks = declare_tasks or (lambda: None)
        self._lock = threading.RLock()
        self._tools: dict[str, _RegisteredTool] = {}
        self._resources: dict[str, _RegisteredResource] = {}
        self._templates: dict[str, _RegisteredTemplate] = {}
        self._prompts: dict[str, _RegisteredPrompt] = {}
        self._roots: dict[str, Root] = {}
        self._completers: dict[tuple[str, str, str], Completer] = {}
        self._methods: dict[str, ExtensionMethod] = {}
        self.extensions: dict[str, dict[str, Any]] = {}
        """The extensions declared under ``capabilities.extensions``: identifier -> settings."""

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
            self._declare_tasks()
        with self._lock:
            if name in self._tools:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"tool {name!r} is already registered")
            self._tools[name] = _RegisteredTool(tool, handler, input_model, frozenset(scopes), task, before_task)
        self._changed("tools")
        return tool

    def unregister_tool(self, name: str) -> None:
        """Remove a tool; ``NOT_FOUND`` if there is none by that name."""
        self._unregister(self._tools, name, "tool")
        self._changed("tools")

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
        from ..protocol.types import Resource  # (its module loads with a server's first resource: see ON_DEMAND)

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
        self._changed("resources")
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

        >>> from mcp_sync import MCPServer
        >>> server = MCPServer("demo")
        >>> _ = server.register_resource_template("users://{id}/profile", lambda uri, p, ctx: f"user {p['id']}")
        >>> server.read_resource("users://7/profile").text
        'user 7'
        """
        from ..protocol.types import ResourceTemplate  # (see register_resource)
        from .uri_template import UriTemplate  # loaded by the first template: a server without any never needs it

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
        self._changed("resources")
        return template

    def unregister_resource(self, uri: str) -> None:
        """Remove a resource or resource template; ``NOT_FOUND`` if there is none."""
        with self._lock:
            if uri in self._templates:
                del self._templates[uri]
            else:
                self._unregister(self._resources, uri, "resource")
        self._changed("resources")

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
        from ..protocol.types import Prompt  # (see register_resource)

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
        self._changed("prompts")
        return prompt

    def unregister_prompt(self, name: str) -> None:
        """Remove a prompt; ``NOT_FOUND`` if there is none by that name."""
        self._unregister(self._prompts, name, "prompt")
        self._changed("prompts")

    def register_root(self, uri: str, name: str | None = None) -> Root:
        """Record a root (a directory or location) that this server works within."""
        from ..protocol.types import Root  # loaded when first asked (see protocol.types.CLIENT_FEATURES)

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

        >>> from mcp_sync import MCPServer
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

        >>> from mcp_sync import MCPServer
        >>> server = MCPServer("demo")
        >>> @server.resource("users://{user_id}/name")
        ... def user_name(user_id: int) -> str:
        ...     return f"user number {user_id}"
        >>> server.read_resource("users://7/name").text
        'user number 7'
        """

        def register(function: F) -> F:
            from .uri_template import UriTemplate

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
                    uri, lambda _uri, params, ctx: decorated_resource_value(spec.call(params, ctx)), **options
                )
            else:
                self.register_resource(uri, lambda _uri, ctx: decorated_resource_value(spec.call({}, ctx)), **options)
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

        >>> from mcp_sync import MCPServer
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

        >>> from mcp_sync import MCPServer
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

        >>> from mcp_sync import MCPServer
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

        >>> from mcp_sync import MCPServer
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

    def serves_resource(self, uri: str) -> bool:
        """Whether ``uri`` is a registered resource or matches a registered template.

        >>> registry = ServerRegistry()
        >>> _ = registry.register_resource_template("users://{id}", lambda uri, params, ctx: "someone")
        >>> registry.serves_resource("users://7"), registry.serves_resource("notes://1")
        (True, False)
        """
        return uri in self._resources or any(t.parsed.match(uri) is not None for t in list(self._templates.values()))

    def counts(self) -> dict[str, int]:
        """How many of each kind are registered (for ``MCPServer.get_info()``).

        >>> ServerRegistry().counts()["tools"]
        0
        """
        with self._lock:
            return {
                "tools": len(self._tools),
                "resources": len(self._resources),
                "resource_templates": len(self._templates),
                "prompts": len(self._prompts),
                "roots": len(self._roots),
            }

    # ------------------------------------------------------------------ calls

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None, ctx: Context) -> CallToolResult:
        """Run tool ``name`` with ``arguments`` for the caller of ``ctx``.

        Invalid arguments raise ``INVALID_PARAMS``; an unknown tool raises
        ``NOT_FOUND``; an exception in the handler becomes a result with
        ``is_error=True``; a call whose ``ctx.cancelled`` was set raises
        ``REQUEST_CANCELLED``.
        """
        result = self._run_registered(name, arguments, ctx, keep_text=False)
        assert not isinstance(result, str)  # (keep_text=False: always a model)
        return result

    def tool_result_wire(self, name: str, arguments: Mapping[str, Any] | None, ctx: Context) -> dict[str, Any]:
        """``call_tool(name, arguments, ctx).to_wire()``, made without a model for a plain string.

        What a session sends for ``tools/call``: a tool returning text (the
        common case) has its wire form built at once, with no
        :class:`CallToolResult` made and dumped again.

        >>> from mcp_sync import MCPServer
        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("hi", lambda arguments, ctx: "hello")
        >>> server.registry.tool_result_wire("hi", {}, Context(server=server))
        {'content': [{'type': 'text', 'text': 'hello'}]}
        """
        result = self._run_registered(name, arguments, ctx, keep_text=True)
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
            result = value if keep_text and type(value) is str else tool_result(value)
        except (InputRequired, MissingClientCapability):
            raise  # the protocol answers these (2026-07-28), not the tool
        except BackendUnavailable:
            raise  # the server's infrastructure failed, not the tool: the request fails
        except Exception as exc:
            if ctx.task_id is not None and isinstance(exc, MCPError):
                raise  # in a task a protocol error fails the task (SEP-2663); a tool error completes it
            log.info("tool %s failed: %s", name, exc, exc_info=True)
            result = models.CallToolResult.failure(f"Error: {exc}")
        if ctx.cancelled.is_set():
            raise MCPError(MCP_CODES.REQUEST_CANCELLED, f"tool {name} was cancelled", context={"tool": name})
        return result

    def read_resource(self, uri: str, ctx: Context) -> ReadResourceResult:
        """Read resource ``uri`` (fixed, or matching a template) for the caller of ``ctx``; ``NOT_FOUND`` if none."""
        registered = self._resources.get(uri)
        if registered is not None:
            _check_scopes(registered.scopes, ctx.auth, f"resource {uri}")
            result = resource_result(uri, registered.resource.mime_type, registered.handler(uri, ctx))
            return result.model_copy(update=registered.cache) if registered.cache else result
        for template in list(self._templates.values()):
            values = template.parsed.match(uri)
            if values is not None:
                _check_scopes(template.scopes, ctx.auth, f"resource {uri}")
                result = resource_result(uri, template.template.mime_type, template.handler(uri, values, ctx))
                return result.model_copy(update=template.cache) if template.cache else result
        raise MCPError(MCP_CODES.NOT_FOUND, f"Resource not found: {uri}", context={"uri": uri})

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None, ctx: Context) -> GetPromptResult:
        """Render prompt ``name`` with ``arguments`` for the caller of ``ctx``.

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
        return prompt_result(value, registered.prompt.description)

    def complete(self, params: CompleteRequestParams) -> CompleteResult | None:
        """The suggestions of the completer registered for the argument ``params`` names; ``None`` if none is."""
        ref = params.ref
        key = (ref.type, ref.name if ref.type == "ref/prompt" else ref.uri, params.argument.name)
        completer = self._completers.get(key)
        if completer is None:
            return None
        given = params.context.arguments if params.context is not None else None
        return to_complete_result(completer(params.argument.value, dict(given or {})))

    # ------------------------------------------------------ extension methods

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
        >>> registry = ServerRegistry()
        >>> registry.register_method("example/noop", PaginatedRequestParams, lambda params, ctx: EmptyResult())
        >>> registry.extension_method("example/noop").cacheable
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

    def extension_methods(self) -> list[str]:
        """The names of the extension methods registered."""
        return list(self._methods)

    # ------------------------------------------------------------------ tasks

    def check_tool_arguments(self, name: str, arguments: Mapping[str, Any] | None) -> None:
        """Raise ``INVALID_PARAMS`` when ``arguments`` do not fit tool ``name`` (before it runs as a task).

        >>> registry = ServerRegistry()
        >>> @registry.tool
        ... def double(n: int) -> int:
        ...     return 2 * n
        >>> registry.check_tool_arguments("double", {"n": "two"})
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
