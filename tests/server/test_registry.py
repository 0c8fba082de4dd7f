"""ServerRegistry alone: what is declared, with no server hosting it."""

from __future__ import annotations

import pytest

from mcp_sync import MCPError, MCPServer
from mcp_sync.protocol.types import CompleteRequestParams
from mcp_sync.server.context import Context
from mcp_sync.server.registry import ServerRegistry
from mcp_sync.server.results import paginate


def test_a_registry_tells_its_host_of_each_list_change_and_task_tool() -> None:
    changed: list[str] = []
    tasks_declared: list[bool] = []
    registry = ServerRegistry(changed=changed.append, declare_tasks=lambda: tasks_declared.append(True))
    registry.register_tool("plain", lambda arguments, ctx: "done")
    assert tasks_declared == []
    registry.register_tool("long", lambda arguments, ctx: "done", task="optional")
    assert tasks_declared == [True]
    registry.register_resource("notes://1", lambda uri, ctx: "one")
    registry.register_prompt("greet", lambda arguments, ctx: "hello")
    registry.unregister_tool("plain")
    assert changed == ["tools", "tools", "resources", "prompts", "tools"]
    assert registry.counts() == {"tools": 1, "resources": 1, "resource_templates": 0, "prompts": 1, "roots": 0}


def test_a_registry_without_a_host_runs_what_it_holds() -> None:
    registry = ServerRegistry()
    registry.register_tool("long", lambda arguments, ctx: "done", task="required")
    registry.register_resource_template("users://{id}", lambda uri, params, ctx: f"user {params['id']}")
    ctx = Context(server=MCPServer("host"))
    assert registry.call_tool("long", {}, ctx).content[0].text == "done"  # type: ignore[union-attr]
    assert registry.task_support("long")[0] == "required"
    assert registry.serves_resource("users://7") and not registry.serves_resource("notes://7")
    assert registry.read_resource("users://7", ctx).contents[0].text == "user 7"  # type: ignore[union-attr]


def test_completions_without_a_completer_are_the_hosts_to_give() -> None:
    registry = ServerRegistry()
    params = CompleteRequestParams.model_validate(
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "language", "value": "p"}}
    )
    assert registry.complete(params) is None
    registry.completion(prompt="review", argument="language")(lambda value, given: ["python", "perl", "rust"])
    result = registry.complete(params)
    assert result is not None and result.completion.values == ["python", "perl", "rust"]


def test_a_cursor_that_is_not_one_is_refused() -> None:
    with pytest.raises(MCPError, match="Invalid cursor"):
        paginate([1, 2, 3], "not a cursor!", 2)
