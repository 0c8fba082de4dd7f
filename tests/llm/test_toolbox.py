"""Toolbox: the names a model sees, the filters, the lists it follows, and the calls it runs (one and side by side)."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until

import mcp_sync
from mcp_sync import MCPServer, connect
from mcp_sync.llm import Toolbox
from mcp_sync.llm.toolbox import NAME_LIMIT, ToolCall, model_names
from mcp_sync.protocol.types import Tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROVIDER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")  # OpenAI, Anthropic and Gemini, all at once


def server_with(*names: str, title: str = "tools") -> MCPServer:
    server = MCPServer(title)
    for name in names:
        server.register_tool(name, lambda args, ctx, name=name: f"{name}:{args}")
    return server


# ----------------------------------------------------------------------- names


def test_names_are_sanitised_start_with_a_letter_or_underscore_and_fit_every_provider() -> None:
    names = model_names([("get.weather", None, ""), ("3d", None, ""), ("a b/c", None, ""), ("ok-name_1", None, "")])
    assert names == ["get_weather", "_3d", "a_b_c", "ok-name_1"]
    assert all(PROVIDER_NAME.match(name) for name in names)


def test_a_long_name_is_cut_to_64_with_a_hash_of_server_and_tool() -> None:
    long = "x" * 80
    [one] = model_names([(long, "server", "")])
    [again] = model_names([(long, "server", "")])
    [elsewhere] = model_names([(long, "other", "")])
    assert len(one) == NAME_LIMIT and one.startswith("x" * 55 + "_") and PROVIDER_NAME.match(one)
    assert one == again and one != elsewhere  # the hash is of (server, tool): stable, and tells servers apart


def test_two_servers_sharing_a_tool_name_get_the_same_names_whatever_their_order() -> None:
    with connect(server_with("search", title="web")) as web, connect(server_with("search", title="files")) as files:
        forward = {entry.server: entry.name for entry in Toolbox({"web": web, "files": files}, prefix=False).tools()}
        backward = {entry.server: entry.name for entry in Toolbox({"files": files, "web": web}, prefix=False).tools()}
        assert forward == backward
        assert forward["web"] != forward["files"] and all(name.startswith("search_") for name in forward.values())
        toolbox = Toolbox({"files": files, "web": web}, prefix=False)
        assert toolbox.call(forward["web"], {}).text == "search:{}"
        assert toolbox.find(forward["files"]).client is files  # type: ignore[union-attr]


def test_the_prefix_is_nothing_for_one_client_the_server_name_for_a_group_or_what_is_given() -> None:
    with connect(server_with("echo", title="demo")) as client:
        assert [tool.name for tool in Toolbox(client).tools()] == ["echo"]
        assert [tool.name for tool in Toolbox(client, prefix=True).tools()] == ["demo_echo"]
        assert [tool.name for tool in Toolbox(client, prefix="my.").tools()] == ["my_echo"]
        assert [tool.name for tool in Toolbox({"one": client}).tools()] == ["one_echo"]
        assert [tool.name for tool in Toolbox({"one": client}, prefix=False).tools()] == ["echo"]


# --------------------------------------------------------------------- filters


def test_include_and_exclude_by_own_name_model_name_or_a_callable() -> None:
    with connect(server_with("a.one", "b", "c", title="s")) as client:
        group = {"s": client}
        assert [t.name for t in Toolbox(group, include=["a.one", "s_b"]).tools()] == ["s_a_one", "s_b"]
        assert [t.name for t in Toolbox(group, exclude=["b", "s_c"]).tools()] == ["s_a_one"]
        seen: list[tuple[str, str | None]] = []

        def keep(tool: Tool, server: str | None) -> bool:
            seen.append((tool.name, server))
            return tool.name != "c"

        assert [t.name for t in Toolbox(group, include=keep).tools()] == ["s_a_one", "s_b"]
        assert seen == [("a.one", "s"), ("b", "s"), ("c", "s")]
        assert [t.name for t in Toolbox(group, exclude=lambda tool, server: tool.name == "b").tools()] == [
            "s_a_one",
            "s_c",
        ]
        left_out = Toolbox(group, exclude=["b"])
        assert left_out.call("s_b", {}).is_error  # a tool left out cannot be called either


# ------------------------------------------------------- real servers, and changes


def test_a_server_group_of_two_real_stdio_servers() -> None:
    config = {
        "mcpServers": {
            "echo": {"command": sys.executable, "args": [str(EXAMPLES / "echo_server.py")]},
            "library": {"command": sys.executable, "args": [str(EXAMPLES / "library_server.py")]},
        }
    }
    with mcp_sync.connect_all(config) as group:
        toolbox = Toolbox(group)
        names = [tool.name for tool in toolbox.tools()]
        assert {"echo_echo", "echo_add", "library_search", "library_borrow"} <= set(names)
        search = toolbox.find("library_search")
        assert search is not None and search.description.startswith("Search the catalogue: Find books")
        results = toolbox.call_all(
            [ToolCall("echo_add", '{"a": 2, "b": 3}', "1"), ToolCall("library_search", {"query": "zzzz-none"}, "2")]
        )
        assert [bool(result.is_error) for result in results] == [False, False]
        assert results[0].text == "5"


def test_the_list_follows_a_servers_list_changed_in_the_handshake_era() -> None:
    server = server_with("first")
    with connect(server, era="handshake") as client:
        toolbox = Toolbox(client)
        assert toolbox.find("later") is None
        server.register_tool("later", lambda args, ctx: "here")
        wait_until(lambda: toolbox.find("later") is not None)
        assert toolbox.call("later", {}).text == "here"
        server.unregister_tool("first")
        wait_until(lambda: toolbox.find("first") is None)
        assert [tool.name for tool in toolbox.tools()] == ["later"]


def test_the_list_follows_list_changed_in_2026_07_28_while_the_client_listens() -> None:
    """2026-07-28 sends list changes only on a ``subscriptions/listen`` stream, which the user holds open."""
    server = server_with("first")
    with connect(server, era="stateless") as client, client.listen(tools=True):
        toolbox = Toolbox(client)
        server.register_tool("later", lambda args, ctx: "here")
        wait_until(lambda: toolbox.find("later") is not None)
        assert toolbox.call("later", {}).text == "here"


# ----------------------------------------------------------------------- calls


@pytest.fixture
def maths() -> Iterator[tuple[MCPServer, Any]]:
    server = MCPServer("maths")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def broken(args: dict[str, Any], ctx: Any) -> str:
        raise RuntimeError("the disk is on fire")

    server.register_tool("broken", broken)
    with connect(server) as client:
        yield server, client


def test_call_reads_json_text_and_mappings(maths: tuple[MCPServer, Any]) -> None:
    toolbox = Toolbox(maths[1])
    assert toolbox.call("add", '{"a": 1, "b": 2}').text == "3"
    assert toolbox.call("add", {"a": 4, "b": 5}).text == "9"


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("add", '{"a": 1,', "are not valid JSON"),
        ("add", "[1, 2]", "must be a JSON object, not list"),
        ("add", 7, "must be a JSON object, not int"),
        ("subtract", "{}", "There is no tool named 'subtract'. The tools are: add, broken."),
        ("broken", "{}", "the disk is on fire"),
        ("add", '{"a": "one", "b": 2}', "could not run: Invalid arguments for tool add: a:"),
    ],
    ids=["bad-json", "not-an-object", "not-a-mapping", "unknown-name", "tool-raises", "server-refuses"],
)
def test_every_mistake_is_an_error_result_the_model_reads(
    maths: tuple[MCPServer, Any], name: str, arguments: Any, says: str
) -> None:
    result = Toolbox(maths[1]).call(name, arguments)
    assert result.is_error is True
    assert says in result.text


def test_a_call_past_the_timeout_is_an_error_result() -> None:
    server = MCPServer("slow")
    release = threading.Event()
    server.register_tool("wait", lambda args, ctx: "done" if release.wait(10) else "late")
    with connect(server) as client:
        try:
            result = Toolbox(client, timeout=0.2).call("wait", {})
        finally:
            release.set()
        assert result.is_error is True
        assert "could not run" in result.text


def test_call_all_runs_calls_side_by_side_keeps_their_order_and_each_failure_to_itself() -> None:
    server = MCPServer("together")
    barrier = threading.Barrier(3, timeout=10)

    def meet(args: dict[str, Any], ctx: Any) -> str:
        barrier.wait()  # only passes when all three calls are running at once
        if args["n"] == 1:
            raise RuntimeError("number one fails")
        return f"n={args['n']}"

    server.register_tool("meet", meet)
    with connect(server) as client:
        results = Toolbox(client).call_all([ToolCall("meet", {"n": n}, str(n)) for n in range(3)])
        assert [result.is_error for result in results] == [None, True, None]
        assert results[0].text == "n=0" and "number one fails" in results[1].text and results[2].text == "n=2"


def test_call_all_runs_no_more_than_max_concurrency_at_once() -> None:
    server = MCPServer("bounded")
    lock = threading.Lock()
    state = {"running": 0, "most": 0, "started": 0}
    turns = threading.Semaphore(0)

    def hold(args: dict[str, Any], ctx: Any) -> str:
        with lock:
            state["running"] += 1
            state["started"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            assert turns.acquire(timeout=10)
            return str(args["n"])
        finally:
            with lock:
                state["running"] -= 1

    server.register_tool("hold", hold)
    with connect(server) as client:
        toolbox = Toolbox(client, max_concurrency=2)
        done: list[Any] = []
        runner = threading.Thread(
            target=lambda: done.extend(toolbox.call_all([ToolCall("hold", {"n": n}) for n in range(4)]))
        )
        runner.start()
        try:
            for started in (2, 3, 4):
                wait_until(lambda started=started: state["started"] == started and state["running"] == 2)  # type: ignore[misc]
                turns.release()  # one call may finish, and only then does the next one start
            turns.release()
        finally:
            for _ in range(4):
                turns.release()
            runner.join(10)
        assert state["most"] == 2
        assert [result.text for result in done] == ["0", "1", "2", "3"]


def test_cancel_set_mid_batch_ends_the_running_calls_and_starts_no_more() -> None:
    server = MCPServer("cancellable")
    started: list[int] = []
    stopped: list[int] = []

    def wait(args: dict[str, Any], ctx: Any) -> str:
        started.append(args["n"])
        if ctx.cancelled.wait(30):  # ends only when the client withdraws the call
            stopped.append(args["n"])
        return "finished"

    server.register_tool("wait", wait)
    with connect(server) as client:
        toolbox = Toolbox(client, max_concurrency=2)
        cancel = threading.Event()
        done: list[Any] = []
        batch = [ToolCall("wait", {"n": n}) for n in range(4)]
        runner = threading.Thread(target=lambda: done.extend(toolbox.call_all(batch, cancel=cancel)))
        runner.start()
        wait_until(lambda: len(started) == 2)
        cancel.set()
        runner.join(10)
        assert not runner.is_alive()
        wait_until(lambda: sorted(stopped) == sorted(started))  # the server heard the cancellation of both
        assert len(started) == 2  # the two waiting for a free worker never reached the server
        assert len(done) == 4 and all(result.is_error for result in done)
        assert all("cancel" in (result.text or "").lower() for result in done)


def test_call_all_of_one_call_or_none(maths: tuple[MCPServer, Any]) -> None:
    toolbox = Toolbox(maths[1])
    assert toolbox.call_all([]) == []
    assert [result.text for result in toolbox.call_all([ToolCall("add", {"a": 1, "b": 1})])] == ["2"]
