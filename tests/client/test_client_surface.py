"""The notebook-friendly client surface: the tools namespace, tool functions, progress, errors, structured content.

Every test talks to a real MCPServer over an in-memory connection, or, for
the event-loop test, over stdio too.
"""

from __future__ import annotations

import asyncio
import inspect
import pydoc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

import mcp_sync
from mcp_sync.client.core import MCPClient
from mcp_sync.client.tools import (
    ToolNamespace,
    python_name,
    tool_docstring,
    tool_function,
    tool_signature,
)
from mcp_sync.errors import MCP_CODES, MCPError, MCPProtocolError
from mcp_sync.protocol.schema import json_type_name, tool_summary
from mcp_sync.server.core import MCPServer
from mcp_sync.types import CallToolResult, ProgressNotificationParams, TextContent, Tool

ROOT = Path(__file__).parent.parent.parent
ECHO_SERVER = [sys.executable, str(ROOT / "examples" / "echo_server.py")]


def make_tool(properties: dict[str, Any] | None = None, required: list[str] | None = None, **schema: Any) -> Tool:
    input_schema: dict[str, Any] = {"type": "object", **schema}
    if properties is not None:
        input_schema["properties"] = properties
    if required is not None:
        input_schema["required"] = required
    return Tool(name="t", input_schema=input_schema)


class CatalogueServer(MCPServer):
    """A server that can hide its tools from tools/list (they still answer calls)."""

    listed = True

    def list_tools(self) -> list[Tool]:
        return super().list_tools() if self.listed else []


def build_server() -> CatalogueServer:
    server = CatalogueServer("surface", "1.0")
    server.register_tool(
        "add",
        lambda args, ctx: CallToolResult(
            content=[TextContent(text=str(args["a"] + args.get("b", 0)))],
            structured_content={"sum": args["a"] + args.get("b", 0)},
        ),
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {
                "a": {"type": "number", "description": "The first number."},
                "b": {"type": "number", "default": 0, "description": "The second\nnumber."},
            },
            "required": ["a"],
        },
        output_schema={"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
    )
    server.register_tool(
        "echo-args",
        lambda args, ctx: CallToolResult(
            content=[TextContent(text=repr(sorted(args.items())))], structured_content=args
        ),
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}, "note": {"type": "string"}, "first-name": {"type": "string"}},
        },
    )
    server.register_tool(
        "fail", lambda args, ctx: CallToolResult(content=[TextContent(text="it broke")], is_error=True)
    )
    server.register_tool("fail_quietly", lambda args, ctx: CallToolResult(content=[], is_error=True))
    server.register_tool(
        "wrong_shape",
        lambda args, ctx: CallToolResult(content=[], structured_content=args["value"]),
        input_schema={"type": "object", "properties": {"value": {}}},
        output_schema={
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            "required": ["items"],
        },
    )
    server.register_tool(
        "bad_schema",
        lambda args, ctx: CallToolResult(content=[], structured_content={}),
        output_schema={"type": "no-such-type"},
    )
    server.register_tool(
        "plain", lambda args, ctx: "just text", output_schema={"type": "object"}, description="Text only."
    )
    server.register_tool("unschemed", lambda args, ctx: "no schema either")

    def count(args: dict[str, Any], ctx: Any) -> str:
        for step in range(1, 4):
            ctx.progress(step, 3, f"step {step}")
        return "counted"

    server.register_tool("count", count)
    return server


@pytest.fixture
def server() -> Iterator[CatalogueServer]:
    srv = build_server()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: CatalogueServer) -> Iterator[MCPClient]:
    with mcp_sync.connect(server, timeout=10) as connected:
        yield connected


# ------------------------------------------------------------ the namespace


def test_tools_is_callable_and_a_mapping(client: MCPClient) -> None:
    namespace = client.tools
    assert isinstance(namespace, ToolNamespace)
    names = [tool.name for tool in namespace()]
    assert names[:3] == ["add", "echo-args", "fail"]
    assert list(namespace) == names and len(namespace) == len(names)
    assert "add" in namespace and "nope" not in namespace
    assert namespace["add"](a=1, b=2).text == "3"
    assert namespace.add(1).text == "1"
    assert namespace.get("nope") is None
    with pytest.raises(KeyError):
        namespace["nope"]
    with pytest.raises(AttributeError, match="no tool 'nope'"):
        namespace.nope  # noqa: B018
    assert namespace._ipython_key_completions_() == names
    assert repr(namespace).startswith("<tools: add, echo-args, fail")


def test_attribute_names_and_completion(client: MCPClient) -> None:
    listing = dir(client.tools)
    assert {"add", "echo_args", "fail", "keys", "items"} <= set(listing)
    assert client.tools.echo_args.__name__ == "echo_args"
    assert client.tools.echo_args.tool.name == "echo-args"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        client.tools._private  # noqa: B018  (underscore names are never tools)


def test_a_tool_named_as_an_identifier_wins_over_an_alias(server: CatalogueServer) -> None:
    server.register_tool("echo_args", lambda args, ctx: "the real one")
    with mcp_sync.connect(server) as client:
        assert client.tools.echo_args().text == "the real one"
        assert client.tools["echo-args"](text="x").structured_content == {"text": "x"}


def test_not_connected() -> None:
    client = MCPClient()
    assert len(client.tools) == 0 and dir(client.tools)
    with pytest.raises(MCPError) as caught:
        client.tools()
    assert caught.value.code == MCP_CODES.NOT_INITIALIZED


def test_rich_reprs_of_the_namespace(client: MCPClient) -> None:
    from IPython.lib.pretty import pretty

    assert "add(a: number, b: number = 0)" in pretty(client.tools)
    html = client.tools._repr_html_()
    assert "<table" in html and "add(a: number, b: number = 0)" in html and "The first number." in html


# ------------------------------------------------------------ tool functions


def test_tool_function_signature_docstring_and_help(client: MCPClient) -> None:
    add = client.tools.add
    assert str(inspect.signature(add)) == "(a: float, b: float = 0) -> mcp_sync.protocol.types.CallToolResult"
    assert add.__doc__ is not None and add.__doc__.startswith("Add two numbers.\n\nArgs:\n")
    assert "    a (number): The first number.\n" in add.__doc__
    assert "    b (number, optional): The second\n        number. Default: 0.\n" in add.__doc__
    rendered = pydoc.render_doc(add, renderer=pydoc.plaintext)
    assert "add(a: float, b: float = 0) -> mcp_sync.protocol.types.CallToolResult" in rendered
    assert "The first number." in rendered


def test_tool_function_arguments(client: MCPClient) -> None:
    echo = client.tools["echo-args"]
    assert str(inspect.signature(echo)) == (
        "(text: str | None = None, note: str | None = None, **extra_arguments: Any)"
        " -> mcp_sync.protocol.types.CallToolResult"
    )
    # None leaves an optional argument out; names that are not identifiers go through **.
    assert echo("hi", None, **{"first-name": "Ada"}).structured_content == {"text": "hi", "first-name": "Ada"}
    with pytest.raises(TypeError, match=r"^echo-args\(\): too many positional arguments"):
        echo("a", "b", "c")
    with pytest.raises(TypeError, match=r"^add\(\): got an unexpected keyword argument 'c'"):
        client.tools.add(a=1, c=2)
    with pytest.raises(TypeError, match=r"^add\(\): missing a required argument: 'a'"):
        client.tools.add()
    # A value of None for an argument with a real default is sent as given.
    with pytest.raises(MCPError):
        client.tools.add(1, None)


def test_tool_function_raises_on_error_results(client: MCPClient) -> None:
    with pytest.raises(MCPError) as caught:
        client.tools.fail()
    assert caught.value.code == MCP_CODES.HANDLER_FAILED
    assert caught.value.message == "it broke"
    assert caught.value.context["result"]["isError"] is True


def test_tool_function_made_directly(client: MCPClient) -> None:
    tool = Tool(name="add", input_schema={"type": "object", "properties": {"a": {"type": "number"}}})
    add = tool_function(client, tool)
    assert add(a=4).text == "4"


def test_signatures_from_schemas() -> None:
    tool = make_tool(
        {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number", "default": 1.5},
            "flag": {"type": "boolean", "default": False},
            "tags": {"type": "array", "items": {"type": "string"}},
            "items": {"type": "array"},
            "anything": {"type": "array", "items": {}},
            "obj": {"type": "object"},
            "nothing": {"type": "null"},
            "either": {"type": ["string", "integer"]},
            "any_of": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "one_of": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "choice": {"enum": ["a", "b"]},
            "mixed_enum": {"enum": [[1], {"a": 1}], "type": "array"},
            "strange": {"type": "strange"},
            "loose_any_of": {"anyOf": [{"type": "string"}, {}]},
            "empty_any_of": {"anyOf": []},
            "not_a_schema": True,
            "untyped": {},
        },
        required=["s", "i", "tags"],
    )
    signature = tool_signature(tool)
    parameters = signature.parameters
    assert list(parameters)[:3] == ["s", "i", "tags"]
    assert all(p.default is inspect.Parameter.empty for p in list(parameters.values())[:3])
    annotations = {name: p.annotation for name, p in parameters.items()}
    assert annotations["s"] is str and annotations["i"] is int and annotations["tags"] == list[str]
    assert annotations["n"] is float and parameters["n"].default == 1.5
    assert annotations["flag"] is bool and parameters["flag"].default is False
    assert annotations["items"] == list | None and annotations["anything"] == list | None
    assert annotations["obj"] == dict | None
    assert annotations["nothing"] is None
    assert annotations["either"] == str | int | None
    assert annotations["any_of"] == str | None
    assert annotations["one_of"] == int | bool | None
    assert annotations["choice"] == Literal["a", "b"] | None
    assert annotations["mixed_enum"] == list | None
    for name in ("strange", "loose_any_of", "empty_any_of", "not_a_schema", "untyped"):
        assert annotations[name] is Any and parameters[name].default is None, name
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters.values())


def test_extra_arguments_parameter() -> None:
    def last(tool: Tool) -> inspect.Parameter:
        return list(tool_signature(tool).parameters.values())[-1]

    assert last(make_tool({"class": {}, "extra_arguments": {}})).name == "extra_arguments_"
    assert last(make_tool()).kind is inspect.Parameter.VAR_KEYWORD
    assert last(make_tool({"a": {}}, additionalProperties=True)).kind is inspect.Parameter.VAR_KEYWORD
    assert last(make_tool({"a": {}}, additionalProperties={"type": "string"})).kind is inspect.Parameter.VAR_KEYWORD
    assert last(make_tool({"a": {}}, additionalProperties=False)).name == "a"
    # A required name that has no property still becomes a parameter.
    assert str(tool_signature(make_tool({"a": {}}, required=["b", "a"]))) == (
        "(a: Any, b: Any) -> mcp_sync.protocol.types.CallToolResult"
    )
    # A schema whose properties or required list are malformed is read as having none.
    malformed = Tool(name="t", input_schema={"type": "object", "properties": [1]})
    assert list(tool_signature(malformed).parameters) == ["extra_arguments"]
    assert list(tool_signature(make_tool({"a": {}}, **{"required": "a"})).parameters) == ["a"]


def test_docstrings_and_summaries() -> None:
    described = Tool(name="t", title="The T", input_schema={"type": "object"})
    assert tool_docstring(described).startswith("The T\n\nReturns:")
    bare = Tool(name="t", input_schema={"type": "object", "properties": {"x": {"description": "  "}}})
    assert tool_docstring(bare).startswith("Call the MCP tool 't'.\n\nArgs:\n    x (any, optional):\n")
    summary = tool_summary(make_tool({"q": {"type": "string"}, "n": {"type": "integer", "default": 3}, "v": {}}, ["q"]))
    assert summary == "t(q: string, n: integer = 3, v?: any)"
    assert json_type_name({"anyOf": [{"type": "integer"}, {"type": "number"}]}) == "integer | number"
    assert json_type_name({"type": ["string", "null"]}) == "string | null"
    assert json_type_name({"enum": ["a", 1]}) == '"a" | 1'
    assert json_type_name({"type": "array", "items": {"type": "integer"}}) == "array[integer]"
    assert json_type_name({"type": "array"}) == "array"
    assert json_type_name({"oneOf": [{"type": "integer"}, {"type": "integer"}]}) == "integer"
    assert json_type_name({"anyOf": []}) == json_type_name({}) == json_type_name(None) == "any"
    assert python_name("get-current.time") == "get_current_time"
    assert python_name("2fa") == "_2fa" and python_name("class") == "_class" and python_name("ok") == "ok"


# --------------------------------------------------------------- call_tool


def test_progress_callback(client: MCPClient) -> None:
    seen: list[float] = []
    client.call_tool("count", progress=lambda p: seen.append(p.progress))
    assert seen == [1, 2, 3]
    assert client.call_tool("count", progress=False).text == "counted"
    with pytest.raises(TypeError):
        client.call_tool("count", on_progress=lambda p: None)  # type: ignore[call-arg]  # the old name is gone


def test_progress_bar_with_tqdm(client: MCPClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert client.call_tool("count", progress=True).text == "counted"
    err = capsys.readouterr().err
    assert "count: 100%" in err and "3/3" in err and "step 3" in err


def test_raise_on_error(client: MCPClient) -> None:
    assert client.call_tool("fail").is_error
    with pytest.raises(MCPError) as caught:
        client.call_tool("fail", raise_on_error=True)
    assert (caught.value.code, caught.value.message, caught.value.context["tool"]) == (
        MCP_CODES.HANDLER_FAILED,
        "it broke",
        "fail",
    )
    with pytest.raises(MCPError, match="tool 'fail_quietly' failed"):
        client.call_tool("fail_quietly", raise_on_error=True)
    assert client.call_tool("add", {"a": 1}, raise_on_error=True).text == "1"


def test_call_tool_structured(client: MCPClient, server: CatalogueServer) -> None:
    assert client.call_tool_structured("add", {"a": 2, "b": 3}) == {"sum": 5}
    assert client.call_tool_structured("wrong_shape", {"value": {"items": [1, 2]}}) == {"items": [1, 2]}
    with pytest.raises(MCPProtocolError, match=r"at items/1: 'x' is not of type 'integer'") as caught:
        client.call_tool_structured("wrong_shape", {"value": {"items": [1, "x"]}})
    assert caught.value.code == MCP_CODES.PROTOCOL_INVALID
    with pytest.raises(MCPProtocolError, match="at the top level: 'items' is a required property"):
        client.call_tool_structured("wrong_shape", {"value": {}})
    with pytest.raises(MCPProtocolError, match="declares an invalid output schema"):
        client.call_tool_structured("bad_schema")
    with pytest.raises(MCPProtocolError, match="'plain' returned no structured content although it declares"):
        client.call_tool_structured("plain")
    with pytest.raises(MCPProtocolError, match=r"'unschemed' returned no structured content$"):
        client.call_tool_structured("unschemed")
    with pytest.raises(MCPError) as failed:
        client.call_tool_structured("fail")
    assert failed.value.code == MCP_CODES.HANDLER_FAILED


def test_checking_structured_content_needs_jsonschema(client: MCPClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"needs the jsonschema package \(pip install jsonschema\)"):
        client.call_tool_structured("add", {"a": 2, "b": 3})


def test_structured_content_of_tools_the_list_does_not_show(server: CatalogueServer) -> None:
    server.listed = False
    with mcp_sync.connect(server) as client:
        assert client.tools() == []
        # Not listed at all: nothing to check against.
        assert client.call_tool_structured("wrong_shape", {"value": [1]}) == [1]
        # Listed by now, though the cache does not know it yet: fetched again, then checked.
        server.listed = True
        with pytest.raises(MCPProtocolError, match="does not match its output schema"):
            client.call_tool_structured("wrong_shape", {"value": [1]})
        assert "wrong_shape" in client.tools


# ------------------------------------------------------- inside an event loop


def test_blocking_calls_work_inside_a_running_event_loop(server: CatalogueServer) -> None:
    async def cell() -> tuple[str, str, str]:
        asyncio.get_running_loop()  # as in a notebook cell: a loop is running
        with mcp_sync.connect(server) as in_memory, mcp_sync.connect(ECHO_SERVER) as over_stdio:
            ticker = asyncio.sleep(0)  # the loop itself is blocked while the calls run, and that is fine
            await ticker
            return (
                in_memory.tools.add(a=1, b=2).text,
                over_stdio.tools.echo(text="from a loop").text,
                over_stdio.call_tool("add", {"a": 2, "b": 2}, progress=True).text,
            )

    assert asyncio.run(cell()) == ("3", "from a loop", "4")


def test_an_async_tool_runs_from_a_thread_whose_loop_is_running() -> None:
    server = mcp_sync.MCPServer("async-tools")
    loops: list[asyncio.AbstractEventLoop] = []

    @server.tool
    async def slow_double(x: int) -> int:
        """Doubles, after yielding to its loop once."""
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return 2 * x

    async def cell() -> tuple[Any, Any, asyncio.AbstractEventLoop]:
        direct = server.invoke_tool("slow_double", {"x": 21}).structured_content
        with mcp_sync.connect(server) as client:
            served = client.tools.slow_double(x=4).structured_content
        return direct, served, asyncio.get_running_loop()

    direct, served, outer = asyncio.run(cell())
    assert (direct, served) == ({"result": 42}, {"result": 8})
    assert len(loops) == 2 and outer not in loops  # each ran on a private loop, not the caller's
    assert server.invoke_tool("slow_double", {"x": 1}).structured_content == {"result": 2}  # and with no loop running


def test_calls_from_threads_while_a_loop_runs(server: CatalogueServer) -> None:
    results: list[str] = []

    async def cell() -> None:
        with mcp_sync.connect(server) as client:
            workers = [
                threading.Thread(target=lambda i=i: results.append(client.tools.add(a=i).text)) for i in range(4)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(10)

    asyncio.run(cell())
    assert sorted(results) == ["0", "1", "2", "3"]


def test_progress_callbacks_see_params(client: MCPClient) -> None:
    seen: list[ProgressNotificationParams] = []
    client.call_tool("count", progress=seen.append)
    assert [(p.progress, p.total, p.message) for p in seen] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
