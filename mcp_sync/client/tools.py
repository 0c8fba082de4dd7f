"""Tools as Python functions: signatures, docstrings and the ``client.tools`` namespace, from input schemas."""

from __future__ import annotations

import importlib
import inspect
import json
import keyword
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPProtocolError
from ..protocol.schema import arguments_of, json_type_name, properties_of, python_annotation

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult, Tool
    from .core import MCPClient


def _is_parameter_name(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def tool_signature(tool: Tool) -> inspect.Signature:
    """A Python signature for calling ``tool`` with keyword (or positional) arguments.

    Required properties come first, without a default; optional ones have
    the schema's ``default`` or ``None``; annotations follow the JSON types.
    A final ``**extra_arguments`` takes properties whose names are not Python
    identifiers, and any others when the schema declares no properties or
    allows additional ones.

    >>> from mcp_sync.types import Tool
    >>> tool = Tool(name="add", input_schema={"type": "object", "required": ["a"],
    ...     "properties": {"a": {"type": "number"}, "b": {"type": "integer", "default": 0}}})
    >>> print(tool_signature(tool))
    (a: float, b: int = 0) -> mcp_sync.protocol.types.CallToolResult
    """
    parameters: list[inspect.Parameter] = []
    schema = tool.input_schema
    extra = schema.get("additionalProperties")
    unnamed = not properties_of(schema) or (extra is not None and extra is not False)
    for argument in arguments_of(tool):
        if not _is_parameter_name(argument.name):
            unnamed = True
            continue
        annotation = python_annotation(argument.schema)
        if argument.required:
            default: Any = inspect.Parameter.empty
        elif argument.has_default:
            default = argument.schema["default"]
        else:
            default = None
            annotation = annotation if annotation in (Any, None) else annotation | None
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        parameters.append(inspect.Parameter(argument.name, kind, default=default, annotation=annotation))
    if unnamed:
        parameters.append(inspect.Parameter(_extra_name(tool), inspect.Parameter.VAR_KEYWORD, annotation=Any))
    return inspect.Signature(parameters, return_annotation=models.CallToolResult)


def _extra_name(tool: Tool) -> str:
    """The name of the ``**`` parameter: one that no property of the tool has."""
    name = "extra_arguments"
    taken = {argument.name for argument in arguments_of(tool)}
    while name in taken:
        name += "_"
    return name


def tool_docstring(tool: Tool) -> str:
    """A docstring for ``tool``'s Python function: its description, then one line per argument."""
    lines = [tool.description or tool.title or f"Call the MCP tool {tool.name!r}."]
    arguments = arguments_of(tool)
    if arguments:
        lines += ["", "Args:"]
    for argument in arguments:
        qualifier = "" if argument.required else ", optional"
        line = f"    {argument.name} ({json_type_name(argument.schema)}{qualifier}):"
        description = argument.schema.get("description")
        if isinstance(description, str) and description.strip():
            line += " " + description.strip().replace("\n", "\n        ")
        if argument.has_default:
            line += f" Default: {json.dumps(argument.schema['default'])}."
        lines.append(line)
    lines += [
        "",
        "Returns:",
        "    CallToolResult: what the tool returned. A result flagged as an error raises",
        "    MCPError (HANDLER_FAILED) with the result's text.",
    ]
    return "\n".join(lines)


def python_name(name: str) -> str:
    """``name`` made into a Python identifier: other characters become ``_``.

    >>> python_name("get-current.time"), python_name("2fa"), python_name("class")
    ('get_current_time', '_2fa', '_class')
    """
    alias = re.sub(r"\W", "_", name)
    if not _is_parameter_name(alias):
        alias = "_" + alias
    return alias


def tool_function(client: MCPClient, tool: Tool) -> Callable[..., CallToolResult]:
    """A Python function that calls ``tool`` through ``client``.

    It has a real signature (:func:`tool_signature`) and docstring
    (:func:`tool_docstring`), so ``help()`` and tab completion show the
    arguments. It returns the :class:`~mcp_sync.protocol.types.CallToolResult`, and
    raises ``MCPError(HANDLER_FAILED)`` when the tool reports an error. An
    optional argument left at ``None`` is not sent. The tool's model is its
    ``tool`` attribute.
    """
    signature = tool_signature(tool)
    extra = next(
        (p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD),
        None,
    )

    def call(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{tool.name}(): {exc}") from None
        arguments: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if name == extra:
                arguments.update(value)
            elif value is not None or signature.parameters[name].default is not None:
                arguments[name] = value
        return client.call_tool(tool.name, arguments, raise_on_error=True)

    call.__name__ = call.__qualname__ = python_name(tool.name)
    call.__doc__ = tool_docstring(tool)
    call.__dict__.update(__signature__=signature, tool=tool)
    return call


# The result type is a string: the subscript keeps it as written, and the content models wait for their first use.
class ToolNamespace(Mapping[str, Callable[..., "CallToolResult"]]):
    """The server's tools: call it for the list, or use it as a mapping of functions.

    ``client.tools()`` is the list of :class:`~mcp_sync.types.Tool` models as
    last fetched; ``client.tools["add"]`` and ``client.tools.add`` are
    Python functions that call the tool (see :func:`tool_function`). A tool
    whose name is not a Python identifier is an attribute under the
    name :func:`python_name` gives it, unless another tool has that name.
    Names of the mapping's own methods (``get``, ``keys``, ``items``,
    ``values``) and names starting with ``_`` are reached with ``[...]`` only.

    >>> from mcp_sync import InMemoryTransport, MCPClient, MCPServer
    >>> server = MCPServer("demo")
    >>> _ = server.register_tool("add", lambda args, ctx: str(args["a"] + args["b"]), description="Add.",
    ...     input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    ...                   "required": ["a", "b"]})
    >>> client_end, server_end = InMemoryTransport.pair()
    >>> _ = server.start(server_end)
    >>> with MCPClient() as client:
    ...     _ = client.connect(client_end)
    ...     print(list(client.tools), client.tools.add(a=2, b=3).text, inspect.signature(client.tools.add))
    ['add'] 5 (a: float, b: float) -> mcp_sync.protocol.types.CallToolResult
    >>> server.stop()
    """

    def __init__(self, client: MCPClient) -> None:
        self._client = client
        self.known: list[Tool] = []
        """The tools as last fetched (set by :meth:`MCPClient.refresh_tools`), kept across connections."""

    def __call__(self) -> list[Tool]:
        self._client.server_capabilities  # noqa: B018  # raises NOT_INITIALIZED when not connected
        return list(self.known)

    def find(self, name: str) -> Tool | None:
        """The tool ``name`` as last fetched, or, if it is not there, from the list fetched again.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("hello", lambda args, ctx: "hi")
        >>> with connect(server) as client:
        ...     client.tools.find("hello").name, client.tools.find("missing")
        ('hello', None)
        """
        tool = {tool.name: tool for tool in self.known}.get(name)
        if tool is None:
            tool = {tool.name: tool for tool in self._client.refresh_tools()}.get(name)
        return tool

    def __getitem__(self, name: str) -> Callable[..., models.CallToolResult]:
        tool = {tool.name: tool for tool in self.known}.get(name)
        if tool is None:
            raise KeyError(name)
        return tool_function(self._client, tool)

    def __iter__(self) -> Iterator[str]:
        return iter([tool.name for tool in self.known])

    def __len__(self) -> int:
        return len(self.known)

    def _attributes(self) -> dict[str, str]:
        """Attribute name -> tool name: tools named as identifiers first, then the others' aliases."""
        names = list(self)
        attributes = {name: name for name in names if _is_parameter_name(name)}
        for name in names:
            attributes.setdefault(python_name(name), name)
        return attributes

    def __getattr__(self, attribute: str) -> Callable[..., models.CallToolResult]:
        name = None if attribute.startswith("_") else self._attributes().get(attribute)
        if name is None:
            raise AttributeError(f"the server has no tool {attribute!r}")
        return self[name]

    def __dir__(self) -> list[str]:
        public = [name for name in self._attributes() if not name.startswith("_")]
        return sorted({*super().__dir__(), *public})

    def _ipython_key_completions_(self) -> list[str]:
        return list(self)

    def __repr__(self) -> str:
        return f"<tools: {', '.join(self) or 'none'}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from ..display.render import tools_text

        printer.text(tools_text(list(self.known)))

    def _repr_html_(self) -> str:
        from ..display.render import tools_html

        return tools_html(list(self.known))


def check_structured(name: str, schema: dict[str, Any], value: Any) -> None:
    """Raise ``PROTOCOL_INVALID`` unless ``value`` matches the output ``schema`` of tool ``name``.

    >>> check_structured("add", {"type": "object", "required": ["result"]}, {"result": 3})
    >>> check_structured("add", {"type": "object", "required": ["result"]}, {})
    Traceback (most recent call last):
    ...
    mcp_sync.protocol.errors.MCPProtocolError: ... does not match its output schema at the top level: ...
    """
    try:
        jsonschema = importlib.import_module("jsonschema")
    except ImportError as exc:
        raise ImportError(
            "checking structured content against a tool's output schema needs the jsonschema package "
            "(pip install jsonschema)"
        ) from exc
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise MCPProtocolError(
            MCP_CODES.PROTOCOL_INVALID,
            f"tool {name!r} declares an invalid output schema: {exc.message}",
            cause=exc,
            context={"tool": name},
        ) from exc
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the top level"
        raise MCPProtocolError(
            MCP_CODES.PROTOCOL_INVALID,
            f"the structured content of tool {name!r} does not match its output schema at {where}: {error.message}",
            context={"tool": name, "structured_content": value},
        )
