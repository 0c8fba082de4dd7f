"""Tools, prompts and resources described by plain Python functions.

A :class:`FunctionSpec` reads a function's signature once: its parameters
become a pydantic model (whose JSON schema is the tool's ``inputSchema``
and which validates each call's arguments), a parameter annotated with
:class:`~mcp_sync.server.context.Context` receives the handler context, and the
return annotation gives the tool's ``outputSchema``. ``async def``
functions are run to completion on a private event loop.

>>> def add(a: int, b: int = 0) -> int:
...     '''Add two numbers.'''
...     return a + b
>>> spec = FunctionSpec(add)
>>> spec.arguments_model.model_json_schema()["required"]
['a']
>>> spec.call({"a": "2", "b": 3}, None)
5
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import json
import types
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin

import pydantic
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError, format_validation_error
from .context import Context

_T = TypeVar("_T")

# template_variables lives in uri_template now (one parser for every use); it stays importable from here,
# looked up when first asked for (see __getattr__ at the end), so that a server without templates never loads it.
__all__ = ["FunctionSpec", "run_coroutine", "template_variables"]

if TYPE_CHECKING:
    from ..protocol.types import PromptArgument
    from .uri_template import template_variables

_RESERVED = frozenset(dir(BaseModel))


def _is_context(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Context)


def _is_content(annotation: Any) -> bool:
    """Whether a return annotation is MCP content, passed through rather than structured."""
    origin = get_origin(annotation)
    if origin in (list, tuple, Union, types.UnionType):
        return any(_is_content(arg) for arg in get_args(annotation) if arg is not type(None) and arg is not ...)
    return isinstance(annotation, type) and issubclass(annotation, _content_types())


def _content_types() -> tuple[type, ...]:
    """The classes a tool's result passes through as they are (a result, content blocks).

    None of them exists before the module that declares them is loaded (the
    first time a program names one, see ``protocol.types.ON_DEMAND``), so
    until then no annotation can be one, and registering a tool does not
    load that module.
    """
    if not models.declared("CallToolResult"):
        return ()
    return (
        models.CallToolResult,
        models.TextContent,
        models.ImageContent,
        models.AudioContent,
        models.ResourceLink,
        models.EmbeddedResource,
    )


class FunctionSpec:
    """What a function's signature says about the tool, prompt or resource it implements.

    ``name`` and ``description`` default to the function's name and
    docstring. Arguments are validated by :meth:`bind` (``INVALID_PARAMS``
    naming the field on failure) and passed by keyword; ``*args`` and
    ``**kwargs`` are not supported.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        *,
        structured_output: bool | None = None,
    ) -> None:
        self.fn = fn
        self.structured_output = structured_output
        self.name = name or fn.__name__
        self.description = description if description is not None else inspect.getdoc(fn)
        self.is_async = inspect.iscoroutinefunction(fn)
        signature = inspect.signature(fn, eval_str=True)
        self.context_parameter: str | None = None
        fields: dict[str, Any] = {}
        self._field_names: dict[str, str] = {}
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"{self.name}: *args and **kwargs cannot describe MCP arguments")
            if _is_context(parameter.annotation):
                self.context_parameter = parameter.name
                continue
            annotation = Any if parameter.annotation is parameter.empty else parameter.annotation
            default = ... if parameter.default is parameter.empty else parameter.default
            field_name = f"{parameter.name}_" if parameter.name in _RESERVED else parameter.name
            self._field_names[field_name] = parameter.name
            fields[field_name] = (annotation, pydantic.Field(default, alias=parameter.name))
        self.arguments_model: type[BaseModel] = pydantic.create_model(
            f"{self.name}Arguments", __config__=pydantic.ConfigDict(validate_by_name=True), **fields
        )
        self.return_annotation: Any = signature.return_annotation

    # ---------------------------------------------------------------- inputs

    def bind(self, arguments: dict[str, Any]) -> BaseModel:
        """Validate ``arguments``; ``MCPError(INVALID_PARAMS)`` naming the failing field otherwise."""
        try:
            return self.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            raise MCPError(
                MCP_CODES.INVALID_PARAMS,
                f"Invalid arguments for {self.name}: {format_validation_error(exc)}",
                cause=exc,
                context={"name": self.name},
            ) from exc

    def prompt_arguments(self) -> list[PromptArgument]:
        """The parameters as prompt arguments (required when they have no default)."""
        from ..protocol.types import PromptArgument  # (loaded with a server's first prompt: see ON_DEMAND)

        arguments = []
        for field_name, field in self.arguments_model.model_fields.items():
            arguments.append(
                PromptArgument(
                    name=self._field_names[field_name],
                    description=field.description,
                    required=field.is_required() or None,
                )
            )
        return arguments

    # ----------------------------------------------------------------- calls

    def call(self, arguments: dict[str, Any] | BaseModel, ctx: Context | None) -> Any:
        """Call the function with validated ``arguments`` (and ``ctx`` if it wants one)."""
        bound = arguments if isinstance(arguments, BaseModel) else self.bind(arguments)
        # (_field_names holds the model's fields in order: reading model_fields costs a pydantic descriptor per call)
        kwargs = {parameter: getattr(bound, name) for name, parameter in self._field_names.items()}
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = ctx if ctx is not None else Context()
        if self.is_async:
            return run_coroutine(functools.partial(self.fn, **kwargs))
        return self.fn(**kwargs)

    # --------------------------------------------------------------- outputs

    @functools.cached_property
    def structured(self) -> bool:
        """Whether results carry structured content (by default: when the return is annotated)."""
        annotation = self.return_annotation
        annotated = annotation not in (inspect.Signature.empty, None, type(None), Any) and not _is_content(annotation)
        if self.structured_output is None:
            return annotated
        if self.structured_output and not annotated:
            raise TypeError(f"{self.name}: structured output needs a return annotation")
        return self.structured_output

    @functools.cached_property
    def _output_adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(self.return_annotation)

    @functools.cached_property
    def _wrapped(self) -> bool:
        """Whether the output is wrapped in ``{"result": ...}`` (its schema is not an object)."""
        return self._output_adapter.json_schema().get("type") != "object"

    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the structured output, or ``None`` when there is none."""
        if not self.structured:
            return None
        if not self._wrapped:
            schema: dict[str, Any] = self._output_adapter.json_schema()
            schema.setdefault("title", f"{self.name}DictOutput")  # a plain mapping has no name of its own
            return schema
        wrapper = pydantic.create_model(f"{self.name}Output", result=(self.return_annotation, ...))
        wrapped: dict[str, Any] = wrapper.model_json_schema()
        return wrapped

    def tool_result(self, value: Any) -> Any:
        """``value`` as a tool result: structured content plus its text rendering, when structured."""
        if not self.structured:
            return value
        adapter = self._output_adapter
        data = adapter.dump_python(adapter.validate_python(value), mode="json")
        structured = {"result": data} if self._wrapped else data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return models.CallToolResult(content=[models.TextContent(text=text)], structured_content=structured)


def run_coroutine(start: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run the coroutine ``start()`` makes to its end and return its result, from any thread.

    Where no event loop runs, it gets one with :func:`asyncio.run`. Where one
    does (a notebook cell, an async web handler calling the blocking API),
    ``asyncio.run`` would refuse and awaiting is not possible, so it runs on a
    private loop in a thread of its own while this one waits. The coroutine is
    made on the thread that runs it.

    >>> async def double(x: int) -> int:
    ...     return 2 * x
    >>> run_coroutine(lambda: double(21))
    42
    """
    # Imported here: only async handlers need it, and a module-level import
    # would make every server load asyncio (the pure core loads no I/O module).
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(start())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mcp-sync-coroutine") as private:
        return private.submit(lambda: asyncio.run(start())).result()


def __getattr__(name: str) -> Any:
    if name != "template_variables":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .uri_template import template_variables

    return template_variables
