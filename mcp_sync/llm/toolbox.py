"""The tools of one or many MCP servers, under names a model can use, and the calls the model asks for.

A model sees a tool as a name, a description and a JSON Schema; it answers
with the name and arguments of the calls it wants. :class:`Toolbox` is the
table between the two: it gives each tool a name every provider accepts
(see :func:`model_names`), knows which server and tool each name stands
for, and runs calls by those names. A failed call is a result the model can
read, never an exception that loses the other calls' results.

>>> from mcp_sync import MCPServer, connect
>>> server = MCPServer("maths")
>>> _ = server.register_tool("add", lambda args, ctx: str(args["a"] + args["b"]))
>>> with connect(server) as client:
...     toolbox = Toolbox(client)
...     [tool.name for tool in toolbox.tools()], toolbox.call("add", '{"a": 1, "b": 2}').text
(['add'], '3')
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.errors import MCPError
from ..protocol.types import CallToolResult, Tool
from ..runtime.dispatcher import USE_DEFAULT, Timeout
from . import anthropic_tools, gemini_tools, openai_tools
from .content import Asked, as_plain
from .schemas import SchemaConversionWarning, drop_absent_nulls

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from ..client.core import MCPClient
    from .langchain_tools import ResponseFormat

__all__ = ["NAME_LIMIT", "ModelTool", "ToolCall", "ToolFilter", "Toolbox", "model_names"]

NAME_LIMIT = 64
"""The longest name every provider takes for a function (OpenAI, Anthropic and Gemini: 64 characters)."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")

ToolFilter = Callable[[Tool, "str | None"], bool]
"""Decides whether a tool is given to the model: ``(tool, server name or None) -> keep it``."""


@dataclass(frozen=True)
class ModelTool:
    """One tool as the model sees it: ``name`` is what the model calls it, ``tool`` the server's own listing.

    ``server`` is the server's name in a group (``None`` for a lone client);
    ``client`` is where the call goes.
    """

    name: str
    tool: Tool
    server: str | None
    client: MCPClient

    @property
    def description(self) -> str:
        """The description given to the model: the tool's description, its title, or a plain stand-in.

        A title that says more than the name goes first, so the model reads
        it as a heading: ``"Add numbers: Adds a and b."``.
        """
        title = self.tool.title or (self.tool.annotations.title if self.tool.annotations else None)
        description = (self.tool.description or "").strip()
        if title and title != self.tool.name and title not in description:
            return f"{title}: {description}" if description else title
        return description or f"Call the tool {self.tool.name!r}."


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for: ``name`` as the model gave it, ``arguments`` as a mapping or a JSON string.

    ``id`` is the provider's id for the call (echoed in the result message), if it has one.
    """

    name: str
    arguments: Mapping[str, Any] | str | None
    id: str | None = None


def model_names(entries: Sequence[tuple[str, str | None, str]]) -> list[str]:
    """A name for each ``(tool name, server, prefix)`` that OpenAI, Anthropic and Gemini all accept; no two equal.

    A name is the prefix and the tool's name, with every character but
    letters, digits, ``_`` and ``-`` made ``_``, an ``_`` in front when it
    does not start with a letter or ``_`` (Gemini's rule), and cut to
    :data:`NAME_LIMIT`. A name cut short, and every name two tools would
    share, ends instead with a hash of its server and tool: the same tools
    are always given the same names, whatever order they come in.

    >>> model_names([("get.weather", None, ""), ("3d", None, "")])
    ['get_weather', '_3d']
    >>> model_names([("search", "web", ""), ("search", "files", "")])
    ['search_802b0138', 'search_068d68d0']
    >>> model_names([("search", "web", "web_"), ("search", "files", "files_")])
    ['web_search', 'files_search']
    """
    wanted = []
    for name, _, prefix in entries:
        plain = _NOT_ALLOWED.sub("_", prefix + name)
        wanted.append(plain if plain[:1].isalpha() or plain.startswith("_") else "_" + plain)
    counts: dict[str, int] = {}
    for name in wanted:
        counts[name] = counts.get(name, 0) + 1
    names = []
    for plain, (name, server, _) in zip(wanted, entries, strict=True):
        if len(plain) <= NAME_LIMIT and counts[plain] == 1:
            names.append(plain)
            continue
        digest = hashlib.sha256(f"{server or ''}/{name}".encode()).hexdigest()[:8]
        names.append(f"{plain[: NAME_LIMIT - 9]}_{digest}")
    return names


class Toolbox:
    """The tools of a client, or of every client of a ``ServerGroup``, for a model to call.

    ``source`` is an :class:`~mcp_sync.MCPClient`, a ``ServerGroup`` (from
    :func:`mcp_sync.connect_all`) or a mapping of server names to clients.
    ``include`` and ``exclude`` are tool names (a tool's own name or the
    name given to the model) or a :data:`ToolFilter`. ``prefix`` goes in
    front of every name: ``True`` means the server's name and ``_`` (the
    default for several servers, as ``ServerGroup.tools()`` names them),
    ``False`` nothing (the default for one client), a string that string.

    The list is read from the clients each time it is asked for, so a
    server's ``list_changed`` shows in the next request to the model (under
    2026-07-28 a server tells of changes only while the client listens:
    hold ``client.listen(tools=True)`` open for that). Calls
    run with ``timeout`` (the client's own by default) and ``cancel``; at
    most ``max_concurrency`` of one batch at once.

    >>> from mcp_sync import MCPServer, connect
    >>> server = MCPServer("demo")
    >>> _ = server.register_tool("echo", lambda args, ctx: args["text"])
    >>> _ = server.register_tool("secret", lambda args, ctx: "x")
    >>> with connect(server) as client:
    ...     toolbox = Toolbox(client, exclude=["secret"], prefix="demo_")
    ...     [tool.name for tool in toolbox.tools()], toolbox.call("demo_echo", {"text": "hi"}).text
    (['demo_echo'], 'hi')
    """

    def __init__(
        self,
        source: MCPClient | Mapping[str, MCPClient] | Any,
        *,
        include: Iterable[str] | ToolFilter | None = None,
        exclude: Iterable[str] | ToolFilter | None = None,
        prefix: bool | str | None = None,
        timeout: Timeout = USE_DEFAULT,
        max_concurrency: int = 8,
    ) -> None:
        clients = getattr(source, "clients", source)  # a ServerGroup holds its clients by name
        self._clients: dict[str | None, MCPClient] = (
            {name: client for name, client in clients.items()} if isinstance(clients, Mapping) else {None: clients}
        )
        self._include = _as_filter(include, keep_when_empty=True)
        self._exclude = _as_filter(exclude, keep_when_empty=False)
        self._prefix = prefix if prefix is not None else len(self._clients) > 1 or None not in self._clients
        self.timeout = timeout
        self.max_concurrency = max(1, max_concurrency)
        self.problems: dict[str, str] = {}
        """The tools the last :meth:`openai`, :meth:`anthropic` or :meth:`gemini` left out or changed: name -> why."""

    def tools(self) -> list[ModelTool]:
        """The tools given to the model now, each under its model name (see :func:`model_names`)."""
        found = [(server, client, tool) for server, client in self._clients.items() for tool in client.tools()]
        names = model_names([(tool.name, server, self._prefix_for(server, client)) for server, client, tool in found])
        entries = [
            ModelTool(name, tool, server, client) for name, (server, client, tool) in zip(names, found, strict=True)
        ]
        return [
            entry
            for entry in entries
            if self._include(entry.tool, entry.server, entry.name)
            and not self._exclude(entry.tool, entry.server, entry.name)
        ]

    def _prefix_for(self, server: str | None, client: MCPClient) -> str:
        if isinstance(self._prefix, str):
            return self._prefix
        if not self._prefix:
            return ""
        return f"{server if server is not None else client.server_info.name}_"

    def find(self, name: str) -> ModelTool | None:
        """The tool the model calls ``name``, or ``None``."""
        return self._by_name().get(name)

    def _by_name(self) -> dict[str, ModelTool]:
        """The tools given to the model now, by model name: looked up once per call or batch of calls."""
        return {entry.name: entry for entry in self.tools()}

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> CallToolResult:
        """Run the tool the model calls ``name``; every failure is a result with ``is_error`` set, for the model.

        ``arguments`` is a mapping or the JSON text a model wrote. Arguments
        that are not a JSON object, an unknown name, a call the server
        refuses, a lost connection or the timeout each give a result whose
        text says what went wrong, so the model can try again.

        >>> from mcp_sync import MCPServer, connect
        >>> with connect(MCPServer("empty")) as client:
        ...     print(Toolbox(client).call("nothing", "{}").text)
        There is no tool named 'nothing'. The tools are: none.
        """
        return self._call(self._by_name(), name, arguments, cancel)

    def _call(
        self,
        tools: Mapping[str, ModelTool],
        name: str,
        arguments: Mapping[str, Any] | str | None,
        cancel: threading.Event | None,
    ) -> CallToolResult:
        entry = tools.get(name)
        if entry is None:
            known_names = ", ".join(tools) or "none"
            return error_result(f"There is no tool named {name!r}. The tools are: {known_names}.")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return error_result(f"The arguments for {name!r} are not valid JSON ({exc}); send a JSON object.")
        if arguments is not None and not isinstance(arguments, Mapping):
            return error_result(f"The arguments for {name!r} must be a JSON object, not {type(arguments).__name__}.")
        try:
            return entry.client.call_tool(entry.tool.name, arguments, timeout=self.timeout, cancel=cancel)
        except MCPError as exc:
            return error_result(f"The tool {name!r} could not run: {exc.message}")

    def call_all(self, calls: Sequence[ToolCall], *, cancel: threading.Event | None = None) -> list[CallToolResult]:
        """Run ``calls`` side by side (at most ``max_concurrency`` at once); their results, in the same order.

        ``cancel`` set while they run cancels those running and those not started: each gives an error result.
        """
        return self._call_all(self._by_name(), calls, cancel)

    def _call_all(
        self, tools: Mapping[str, ModelTool], calls: Sequence[ToolCall], cancel: threading.Event | None
    ) -> list[CallToolResult]:
        if len(calls) <= 1:
            return [self._call(tools, one.name, one.arguments, cancel) for one in calls]
        workers = min(self.max_concurrency, len(calls))
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="mcp-sync-toolbox") as pool:
            futures = [pool.submit(self._call, tools, one.name, one.arguments, cancel) for one in calls]
            return [future.result() for future in futures]

    def openai(self, api: openai_tools.Api = "chat", *, strict: bool = False) -> list[dict[str, Any]]:
        """The tools for ``client.chat.completions.create(tools=...)`` (``api="chat"``) or ``client.responses.create``.

        With ``strict=True`` each schema is rewritten to OpenAI's strict-mode
        rules (see :func:`~mcp_sync.llm.schemas.openai_strict`); a tool whose
        schema cannot follow them (a free-form object, a value of any type)
        is given with ``strict: false``, and named in :attr:`problems` and a
        :class:`~mcp_sync.llm.schemas.SchemaConversionWarning`. A tool whose
        schema is not an object at all is left out, and named the same way.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("maths")
        >>> _ = server.register_tool("add", lambda args, ctx: "3", description="Adds a and b.")
        >>> with connect(server) as client:
        ...     Toolbox(client).openai()[0]["function"]["name"], Toolbox(client).openai("responses")[0]["name"]
        ('add', 'add')
        """
        tools, problems = openai_tools.definitions(self.tools(), api, strict=strict)
        self._report("OpenAI", problems)
        return tools

    def anthropic(self) -> list[dict[str, Any]]:
        """The tools for Anthropic's ``client.messages.create(tools=...)``.

        A tool whose schema is not an object is left out, and named in
        :attr:`problems` and a :class:`~mcp_sync.llm.schemas.SchemaConversionWarning`.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("maths")
        >>> _ = server.register_tool("add", lambda args, ctx: "3", description="Adds a and b.")
        >>> with connect(server) as client:
        ...     Toolbox(client).anthropic()
        [{'name': 'add', 'description': 'Adds a and b.', 'input_schema': {'type': 'object', 'properties': {}}}]
        """
        tools, problems = anthropic_tools.definitions(self.tools())
        self._report("Anthropic", problems)
        return tools

    def gemini(self) -> list[dict[str, Any]]:
        """The tools for google-genai's ``types.GenerateContentConfig(tools=...)``: one ``Tool`` of declarations.

        Schemas are converted to Gemini's subset (see
        :func:`~mcp_sync.llm.schemas.gemini`); a tool whose schema is not an
        object is left out, and one whose recursive schema was cut short is
        kept; both are named in :attr:`problems` and a
        :class:`~mcp_sync.llm.schemas.SchemaConversionWarning`.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("maths")
        >>> schema = {"properties": {"a": {"type": "integer"}}}
        >>> _ = server.register_tool("add", lambda args, ctx: "3", input_schema=schema)
        >>> with connect(server) as client:
        ...     Toolbox(client).gemini()[0]["function_declarations"][0]["parameters"]
        {'type': 'OBJECT', 'properties': {'a': {'type': 'INTEGER'}}}
        """
        tools, problems = gemini_tools.definitions(self.tools())
        self._report("Gemini", problems)
        return tools

    def _report(self, provider: str, problems: dict[str, str]) -> None:
        self.problems = problems
        for name, why in problems.items():
            warnings.warn(f"{provider}: the tool {name!r} is {why}", SchemaConversionWarning, stacklevel=3)

    def run(self, response: Any, *, cancel: threading.Event | None = None) -> list[Any]:
        """Run the tool calls in a model's answer; the messages (or items) that give their results back.

        ``response`` is what the provider's SDK returned, or its dict form:

        - OpenAI Chat Completions: a ``ChatCompletion``, its ``message``, or
          its ``tool_calls`` -> one ``{"role": "tool", "tool_call_id", "content"}`` per call;
        - OpenAI Responses: a ``Response`` or its ``output`` items -> a
          ``function_call_output`` item per call;
        - Anthropic: a ``Message`` or its content blocks -> one user message
          of ``tool_result`` blocks;
        - Gemini: a ``GenerateContentResponse``, a ``Content`` or its parts
          -> one ``Content`` (role ``user``) of ``function_response`` parts.

        The calls run side by side through :meth:`call_all`; an unknown
        name, arguments that are not a JSON object and a tool's failure are
        results the model reads. A ``null`` the model gave an optional
        argument whose schema takes no null (strict mode asks for one) is
        left out. No calls: ``[]``. Anything else: ``TypeError``.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("maths")
        >>> _ = server.register_tool("add", lambda args, ctx: str(args["a"] + args["b"]))
        >>> call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
        >>> with connect(server) as client:
        ...     Toolbox(client).run({"role": "assistant", "content": None, "tool_calls": [call]})
        [{'role': 'tool', 'tool_call_id': 'call_1', 'content': '3'}]
        """
        plain = as_plain(response)
        if not isinstance(plain, (Mapping, list)):
            raise TypeError(
                f"Toolbox.run() takes a model's answer from an OpenAI, Anthropic or Gemini SDK, not {_kind(response)}"
            )
        if isinstance(plain, list) and not plain:
            return []
        tools = self._by_name()

        def run_all(asked: Sequence[Asked]) -> list[CallToolResult]:
            calls = [
                ToolCall(name, _without_nulls(tools[name].tool.input_schema if name in tools else None, arguments), id)
                for name, arguments, id in asked
            ]
            return self._call_all(tools, calls, cancel)

        found_openai = openai_tools.read_calls(plain)
        if found_openai is not None:
            api, asked = found_openai
            return openai_tools.answers(api, asked, run_all(asked))
        asked_anthropic = anthropic_tools.read_calls(plain)
        if asked_anthropic is not None:
            return anthropic_tools.answers(asked_anthropic, run_all(asked_anthropic))
        asked_gemini = gemini_tools.read_calls(plain)
        if asked_gemini is not None:
            return gemini_tools.answers(asked_gemini, run_all(asked_gemini))
        raise TypeError(
            "Toolbox.run() takes a model's answer from an OpenAI, Anthropic or Gemini SDK (or its dict form), "
            f"not {_kind(response)}"
        )

    def langchain(self, response_format: ResponseFormat = "content_and_artifact") -> list[StructuredTool]:
        """The tools as LangChain ``StructuredTool`` objects, with ``func`` and ``coroutine`` (needs ``[langchain]``).

        Each keeps its model name, description and input schema. Invoked
        with a model's tool call it gives a ``ToolMessage`` whose artifact is
        the ``CallToolResult``'s wire dict (``response_format="content"``:
        no artifact); invoked with plain arguments, the content. An error
        result raises ``ToolException``, given to the model as a
        ``ToolMessage`` with ``status="error"``. See :mod:`mcp_sync.llm.langchain_tools`.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.register_tool("echo", lambda args, ctx: args["text"], description="Say it back.")
        >>> with connect(server) as client:
        ...     [echo] = Toolbox(client).langchain()
        ...     echo.name, echo.description, echo.invoke({"text": "hi"})
        ('echo', 'Say it back.', 'hi')
        """
        from .langchain_tools import langchain_tools

        return langchain_tools(self, response_format)


def _kind(value: Any) -> str:
    """What ``value`` is, for an error message: its type, and its keys when it is a mapping."""
    if isinstance(value, Mapping):
        return f"a {type(value).__name__} with the keys {sorted(map(str, value))}"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _without_nulls(schema: Mapping[str, Any] | None, arguments: Any) -> Any:
    """The model's arguments without the nulls it gave optional ones (see :func:`drop_absent_nulls`).

    JSON text is read here to be cleaned; text that is not JSON is passed on as it is, for
    :meth:`Toolbox.call` to explain.
    """
    if schema is None:
        return arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return drop_absent_nulls(schema, arguments)


def error_result(message: str) -> CallToolResult:
    """A tool result that tells the model what went wrong."""
    return CallToolResult.failure(message)


def _as_filter(names: Iterable[str] | ToolFilter | None, *, keep_when_empty: bool) -> Callable[..., bool]:
    """One test for both spellings of a filter: names (own or model name) or a callable."""
    if names is None:
        return lambda tool, server, model_name: keep_when_empty
    if callable(names):
        test = names
        return lambda tool, server, model_name: bool(test(tool, server))
    wanted = set(names)
    return lambda tool, server, model_name: tool.name in wanted or model_name in wanted
