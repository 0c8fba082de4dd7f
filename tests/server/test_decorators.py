"""Decorators and the handler Context: plain typed functions as tools, resources, prompts and completions."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from helpers import connect_pair
from peers import peer_environment, peer_python
from pydantic import BaseModel, Field

from mcp_sync import MCP_CODES, MCPClient, MCPError, MCPServer
from mcp_sync.server.context import Context
from mcp_sync.server.elicited import Elicited
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    GetPromptResult,
    PromptMessage,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

SERVERS = Path(__file__).parent.parent / "servers"
sys.path.insert(0, str(SERVERS))

from schema_functions import FUNCTIONS, Address  # noqa: E402


@pytest.fixture
def server() -> Iterator[MCPServer]:
    server = MCPServer("decorated")
    yield server
    server.stop()


# ------------------------------------------------------------------- schemas


@pytest.mark.interop
def test_schemas_match_what_the_official_sdk_derives_for_the_same_functions() -> None:
    script = (
        "import asyncio, json, sys\n"
        f"sys.path.insert(0, {str(SERVERS)!r})\n"
        "from schema_functions import FUNCTIONS\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('compare')\n"
        "for fn in FUNCTIONS:\n"
        "    server.tool()(fn)\n"
        "tools = asyncio.run(server.list_tools())\n"
        "print(json.dumps({t.name: [t.description, t.input_schema, t.output_schema] for t in tools}))\n"
    )
    out = subprocess.run(
        [peer_python(), "-c", script], capture_output=True, text=True, timeout=120, check=True, env=peer_environment()
    )
    theirs = json.loads(out.stdout)
    ours = MCPServer("compare")
    for fn in FUNCTIONS:
        ours.tool(fn)
    typed = [t for t in ours.list_tools() if t.name != "untyped"]
    assert len(typed) == len(FUNCTIONS) - 1
    for tool in typed:
        assert [tool.description, tool.input_schema, tool.output_schema] == theirs[tool.name], tool.name


def test_unannotated_parameters_accept_anything(server: MCPServer) -> None:
    from schema_functions import untyped

    server.tool(untyped)
    tool = server.list_tools()[0]
    assert tool.input_schema["properties"]["x"] == {"title": "X"}
    assert tool.output_schema is None
    assert server.invoke_tool("untyped", {"x": [1], "y": None}).text == "[1]None"


def test_a_plain_function_becomes_a_tool_and_stays_callable(server: MCPServer) -> None:
    @server.tool(title="Adder", annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    assert add(1, 2) == 3
    tool = server.list_tools()[0]
    assert (tool.name, tool.title, tool.description) == ("add", "Adder", "Add two integers.")
    assert tool.annotations == ToolAnnotations(read_only_hint=True)
    result = server.invoke_tool("add", {"a": "2", "b": 3})
    assert result.structured_content == {"result": 5}
    assert result.text == "5"


def test_invalid_arguments_are_refused_with_the_field_path_over_the_wire(server: MCPServer) -> None:
    @server.tool
    def ship(address: Address, items: list[str]) -> str:
        """Ship."""
        return address.city

    with connect_pair(server) as client:
        with pytest.raises(MCPError) as err:
            client.call_tool("ship", {"address": {"street": "x"}, "items": ["a"]})
        assert err.value.code == MCP_CODES.INVALID_PARAMS and err.value.jsonrpc_code == -32602
        assert "address.city" in err.value.message
        assert client.call_tool("ship", {"address": {"street": "x", "city": "Oslo"}, "items": []}).text == "Oslo"


def test_structured_output_from_models_mappings_and_lists(server: MCPServer) -> None:
    from schema_functions import forecast, summarize, tags

    for fn in (forecast, summarize, tags):
        server.tool(fn)
    weather = server.invoke_tool("forecast", {"city": "Oslo"})
    assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "unit": "celsius"}
    assert json.loads(weather.text) == weather.structured_content
    assert server.invoke_tool("summarize", {"values": [1, 2, 3]}).structured_content == {"count": 3, "total": 6.0}
    labels = server.invoke_tool("tags", {"labels": ["a", "b", "c"], "limit": 2})
    assert labels.structured_content == {"result": ["a", "b"]}
    with pytest.raises(MCPError) as err:
        server.invoke_tool("tags", {"limit": 11})
    assert "limit" in err.value.message


def test_a_wrong_return_value_is_a_tool_error(server: MCPServer) -> None:
    @server.tool
    def broken() -> int:
        """Returns the wrong type."""
        return "not a number"  # type: ignore[return-value]

    result = server.invoke_tool("broken")
    assert result.is_error and "valid integer" in result.text


def test_structured_output_can_be_turned_off_and_needs_an_annotation(server: MCPServer) -> None:
    @server.tool(structured_output=False)
    def plain() -> str:
        """Plain."""
        return "just text"

    assert server.list_tools()[0].output_schema is None
    assert server.invoke_tool("plain").structured_content is None
    with pytest.raises(TypeError, match="needs a return annotation"):

        @server.tool(structured_output=True)
        def unannotated():  # type: ignore[no-untyped-def]
            return 1


def test_content_returns_pass_through(server: MCPServer) -> None:
    @server.tool
    def picture() -> list[TextContent]:
        """Content blocks."""
        return [TextContent(text="one"), TextContent(text="two")]

    assert server.list_tools()[0].output_schema is None
    assert server.invoke_tool("picture").text == "one\ntwo"


def test_variadic_parameters_are_refused(server: MCPServer) -> None:
    def loose(*args: int) -> int:
        return sum(args)

    with pytest.raises(TypeError, match=r"\*args"):
        server.tool(loose)


def test_a_parameter_named_like_a_model_attribute_still_works(server: MCPServer) -> None:
    @server.tool
    def dump(json: str, schema: int = 1) -> str:
        """Parameters that shadow pydantic's own names."""
        return f"{json}:{schema}"

    assert set(server.list_tools()[0].input_schema["properties"]) == {"json", "schema"}
    assert server.invoke_tool("dump", {"json": "x", "schema": 2}).text == "x:2"


def test_async_tools_run_to_completion(server: MCPServer) -> None:
    @server.tool
    async def later(x: int) -> int:
        """An async tool."""
        import asyncio

        await asyncio.sleep(0)
        return x * 2

    with connect_pair(server) as client:
        assert client.call_tool("later", {"x": 21}).structured_content == {"result": 42}


# ------------------------------------------------------------------ context


def test_context_progress_and_log_reach_the_client(server: MCPServer) -> None:
    @server.tool
    def work(steps: int, ctx: Context) -> str:
        """Reports progress and logs."""
        for step in range(1, steps + 1):
            ctx.progress(step, steps, f"step {step}")
        ctx.log("warning", {"steps": steps})
        assert ctx.client_info is not None
        return f"{ctx.client_info.name} {ctx.request_id is not None}"

    logged = threading.Event()
    logs: list[Any] = []
    client = MCPClient(
        "watcher", era="handshake", log_handler=lambda message: (logs.append(message.data), logged.set())
    )
    with connect_pair(server, client):
        progress: list[tuple[float, str | None]] = []
        result = client.call_tool("work", {"steps": 2}, progress=lambda p: progress.append((p.progress, p.message)))
        assert result.text == "watcher True"
        assert progress == [(1, "step 1"), (2, "step 2")]
        assert logged.wait(5) and logs == [{"steps": 2}]


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)


def test_context_sample_elicit_roots_and_read_resource(server: MCPServer) -> None:
    @server.resource("memo://today")
    def memo() -> str:
        return "buy milk"

    @server.tool
    def everything(ctx: Context) -> dict[str, Any]:
        """Uses every client feature."""
        answer = ctx.sample("What is 2+2?", max_tokens=5, system_prompt="Be brief.")
        person = ctx.elicit("Who are you?", Person)
        raw = ctx.elicit("Anything?", {"type": "object", "properties": {"x": {"type": "string"}}})
        roots = ctx.list_roots()
        return {
            "answer": answer.content.text if isinstance(answer.content, TextContent) else None,
            "person": person.data.model_dump() if person.accepted and person.data else None,
            "raw": raw.data,
            "roots": [root.uri for root in roots],
            "memo": ctx.read_resource("memo://today").text,
        }

    asked: list[ElicitRequestFormParams] = []

    def elicitation(params: ElicitRequestFormParams) -> ElicitResult:
        asked.append(params)
        if params.message == "Who are you?":
            return ElicitResult(action="accept", content={"name": "Ada", "age": 36})
        return ElicitResult(action="accept", content={"x": "y"})

    def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        assert params.system_prompt == "Be brief."
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    client = MCPClient(
        sampling_provider=sampling,
        elicitation_provider=elicitation,
        roots_provider=lambda: [Root(uri="file:///home")],
    )
    with connect_pair(server, client):
        result = client.call_tool("everything")
    assert result.structured_content == {
        "answer": "4",
        "person": {"name": "Ada", "age": 36},
        "raw": {"x": "y"},
        "roots": ["file:///home"],
        "memo": "buy milk",
    }
    requested = asked[0].to_wire()["requestedSchema"]
    assert "title" not in requested and requested["required"] == ["name", "age"]


TRIP_FORM = {
    "type": "object",
    "properties": {
        "destination": {"type": "string"},
        "nights": {"type": "integer", "default": 2},
        "window": {"type": "boolean", "default": True},
        "note": {"type": "string"},
    },
    "required": ["destination"],
}


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_an_accepted_form_gets_the_schema_defaults_for_what_the_provider_left_out(server: MCPServer, era: str) -> None:
    @server.tool
    def book(ctx: Context) -> list[Any]:
        """Asks twice."""
        return [ctx.elicit("Where to?", TRIP_FORM).data, ctx.elicit("Where else?", TRIP_FORM).action]

    answers = iter(
        [
            ElicitResult(action="accept", content={"destination": "Kyoto", "window": False}),
            ElicitResult(action="decline"),
        ]
    )
    with connect_pair(server, MCPClient(era=era, elicitation_provider=lambda params: next(answers))) as client:
        result = client.call_tool("book")
    # The provider's own answers win; a default fills each field it left out; a field without one stays out.
    assert result.structured_content == {"result": [{"destination": "Kyoto", "window": False, "nights": 2}, "decline"]}


def test_schema_defaults_can_be_switched_off(server: MCPServer) -> None:
    @server.tool
    def book(ctx: Context) -> list[Any]:
        """Asks once."""
        return [ctx.elicit("Where to?", TRIP_FORM).data]

    def provider(params: ElicitRequestFormParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"destination": "Kyoto"})

    client = MCPClient(elicitation_provider=provider, elicitation_defaults=False)
    with connect_pair(server, client):
        assert client.call_tool("book").structured_content == {"result": [{"destination": "Kyoto"}]}


def test_elicit_decline_and_an_answer_that_does_not_fit(server: MCPServer) -> None:
    outcomes: list[Any] = []

    @server.tool
    def ask(ctx: Context) -> str:
        """Asks twice."""
        declined = ctx.elicit("Who?", Person)
        outcomes.append((declined.action, declined.accepted, declined.data))
        ctx.elicit("Who?", Person)
        return "unreachable"

    answers = iter([ElicitResult(action="decline"), ElicitResult(action="accept", content={"name": "x", "age": -1})])
    # the handshake era: each elicit is one request to the client (no rounds replaying the handler)
    client = MCPClient(era="handshake", elicitation_provider=lambda params: next(answers))
    with connect_pair(server, client) as client:
        result = client.call_tool("ask")
    assert outcomes == [("decline", False, None)]
    assert result.is_error and "does not fit" in result.text


def test_context_without_a_client_says_what_is_missing(server: MCPServer) -> None:
    ctx = Context()
    for call in (lambda: ctx.sample("hi"), lambda: ctx.elicit("x", Person), lambda: ctx.list_roots()):
        with pytest.raises(MCPError) as err:
            call()
        assert err.value.code == MCP_CODES.MISSING_CAPABILITY
    with pytest.raises(MCPError) as err:
        ctx.read_resource("memo://x")
    assert err.value.code == MCP_CODES.NOT_FOUND
    assert ctx.client_capabilities.sampling is None and ctx.client_info is None
    assert Elicited("cancel").accepted is False


def test_a_client_without_the_capability_gets_a_tool_error(server: MCPServer) -> None:
    @server.tool
    def needs_sampling(ctx: Context) -> str:
        """Needs sampling."""
        return str(ctx.sample("hi").content)

    with connect_pair(server, MCPClient(era="handshake")) as client:
        result = client.call_tool("needs_sampling")
    assert result.is_error and "does not support sampling" in result.text
    # at 2026-07-28 the request itself is refused, naming the capability it lacks
    with connect_pair(server, MCPClient(era="stateless")) as client, pytest.raises(MCPError) as err:
        client.call_tool("needs_sampling")
    assert err.value.jsonrpc_code == -32021 and err.value.data == {"requiredCapabilities": {"sampling": {}}}


# ---------------------------------------------------------------- resources


def test_resources_and_templates_from_functions(server: MCPServer) -> None:
    @server.resource("config://app", mime_type="application/json", description="App settings.")
    def config() -> dict[str, Any]:
        return {"debug": True}

    @server.resource("users://{user_id}/profile")
    def profile(user_id: int, ctx: Context) -> Address:
        """A user's address."""
        assert ctx.server is server
        return Address(street=f"{user_id} Main St", city="Oslo")

    @server.resource("files://{+path}")
    def file(path: str) -> bytes:
        return path.encode()

    @server.resource("many://items")
    def many() -> list[TextResourceContents]:
        return [TextResourceContents(uri="many://items", text="a"), TextResourceContents(uri="many://items", text="b")]

    assert [r.name for r in server.list_resources()] == ["config", "many"]
    assert server.list_resources()[0].description == "App settings."
    templates = server.list_resource_templates()
    assert [t.uri_template for t in templates] == ["users://{user_id}/profile", "files://{+path}"]
    assert templates[0].description == "A user's address."
    with connect_pair(server) as client:
        assert json.loads(client.read_resource("config://app").text) == {"debug": True}
        assert json.loads(client.read_resource("users://7/profile").text)["street"] == "7 Main St"
        assert client.read_resource("files://a/b.txt").contents[0].blob == "YS9iLnR4dA=="  # type: ignore[union-attr]
        assert client.read_resource("many://items").text == "a\nb"
        with pytest.raises(MCPError) as err:
            client.read_resource("users://seven/profile")
        assert err.value.code == MCP_CODES.INVALID_PARAMS


def test_resource_parameters_must_match_the_uri(server: MCPServer) -> None:
    with pytest.raises(TypeError, match="must be the URI's parameters"):

        @server.resource("users://{user_id}")
        def wrong(name: str) -> str:
            return name


def test_the_decorator_reads_the_template_with_the_same_parser_as_the_matcher(server: MCPServer) -> None:
    # The decorator once took "{++path}" as a variable 'path' (and "{a,b}" as one named 'a,b') while the
    # matcher could not compile either; both now come from one parser, which refuses them up front.
    for template in ("files://{++path}", "pair://{a,b}"):
        with pytest.raises(ValueError, match="unsupported expression"):

            @server.resource(template)
            def anything(path: str) -> str:
                return path

    assert server.list_resource_templates() == []


def test_template_variables_is_still_importable_from_functions() -> None:
    from mcp_sync.server import functions, uri_template

    assert functions.template_variables is uri_template.template_variables
    assert functions.template_variables("weather://{city}/{+rest}") == ["city", "rest"]


# ------------------------------------------------------------------ prompts


def test_prompts_from_functions(server: MCPServer) -> None:
    @server.prompt(title="Review")
    def review(code: Annotated[str, Field(description="The code")], language: str = "python") -> str:
        """Ask for a code review."""
        return f"Review this {language}: {code}"

    @server.prompt
    def chat(topic: str) -> list[Any]:
        """A short conversation."""
        return [
            f"Tell me about {topic}.",
            PromptMessage(role="assistant", content=TextContent(text="Gladly.")),
            {"role": "user", "content": {"type": "text", "text": "Go on."}},
        ]

    @server.prompt
    def fixed() -> GetPromptResult:
        """Already a result."""
        return GetPromptResult(messages=[PromptMessage(role="user", content=TextContent(text="hi"))])

    prompt = server.list_prompts()[0]
    assert (prompt.name, prompt.title, prompt.description) == ("review", "Review", "Ask for a code review.")
    assert [(a.name, a.description, a.required) for a in prompt.arguments or []] == [
        ("code", "The code", True),
        ("language", None, None),
    ]
    with connect_pair(server) as client:
        rendered = client.get_prompt("review", {"code": "x = 1"})
        assert rendered.messages[0].content == TextContent(text="Review this python: x = 1")
        assert [m.role for m in client.get_prompt("chat", {"topic": "owls"}).messages] == ["user", "assistant", "user"]
        assert client.get_prompt("fixed").messages[0].content == TextContent(text="hi")
        with pytest.raises(MCPError) as err:
            client.get_prompt("review", {})
        assert err.value.code == MCP_CODES.INVALID_PARAMS


def test_prompt_arguments_are_converted_by_type(server: MCPServer) -> None:
    @server.prompt
    def repeat(word: str, times: int) -> str:
        """Repeat a word."""
        return " ".join([word] * times)

    assert server.get_prompt("repeat", {"word": "ho", "times": "3"}).messages[0].content == TextContent(text="ho ho ho")
    with pytest.raises(MCPError) as err:
        server.get_prompt("repeat", {"word": "ho", "times": "many"})
    assert err.value.code == MCP_CODES.INVALID_PARAMS and "times" in err.value.message


# --------------------------------------------------------------- completion


def test_completions_per_argument(server: MCPServer) -> None:
    @server.completion(prompt="review", argument="language")
    def languages(value: str, arguments: dict[str, str]) -> list[str]:
        return [name for name in ("python", "perl", "rust") if name.startswith(value)]

    @server.completion(template="users://{user_id}/profile", argument="user_id")
    def user_ids(value: str, arguments: dict[str, str]) -> list[str]:
        return [f"{value}{arguments.get('suffix', '')}"]

    with connect_pair(server) as client:
        assert client.complete(PromptReference(name="review"), "language", "p").completion.values == ["python", "perl"]
        template = ResourceTemplateReference(uri="users://{user_id}/profile")
        assert client.complete(template, "user_id", "4", context={"suffix": "2"}).completion.values == ["42"]
        assert client.complete(PromptReference(name="other"), "x", "y").completion.values == []


def test_completion_needs_exactly_one_target(server: MCPServer) -> None:
    with pytest.raises(TypeError):
        server.completion(argument="x")
    with pytest.raises(TypeError):
        server.completion(prompt="a", template="b", argument="x")
