"""The ``Mcp-*`` header mapping of 2026-07-28, once for both roles: what a client sends, a server accepts."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sync.protocol.headers import (
    header_declarations,
    mirrored_argument,
    named_param,
    param_headers_problem,
    request_headers,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "target": {"type": "object", "properties": {"replicas": {"type": "integer", "x-mcp-header": "Replicas"}}},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
    },
}
DECLARED = header_declarations(SCHEMA)


@pytest.mark.parametrize(
    ("method", "param"),
    [
        ("tools/call", "name"),
        ("prompts/get", "name"),
        ("resources/read", "uri"),
        ("tasks/get", "taskId"),
        ("tasks/update", "taskId"),
        ("tasks/cancel", "taskId"),
        ("tools/list", None),
        ("server/discover", None),
    ],
)
def test_each_method_names_its_parameter(method: str, param: str | None) -> None:
    assert named_param(method) == param


def test_a_tool_call_mirrors_its_name_and_each_declared_argument() -> None:
    arguments = {"region": " eu ", "target": {"replicas": 3}, "dry": False}
    headers = request_headers("tools/call", {"name": "deploy", "arguments": arguments}, DECLARED)
    assert headers == {
        "Mcp-Method": "tools/call",
        "Mcp-Name": "deploy",
        "Mcp-Param-Region": "=?base64?IGV1IA==?=",  # surrounding spaces would be stripped: encoded
        "Mcp-Param-Replicas": "3",
        "Mcp-Param-Dry": "false",
    }
    # The server's side of the same rule accepts exactly what the client's side sent.
    assert param_headers_problem(DECLARED, arguments, headers.get) is None


def test_an_argument_left_out_sends_no_header_and_the_server_wants_none() -> None:
    arguments: dict[str, Any] = {"region": "eu", "target": "not an object"}
    headers = request_headers("tools/call", {"name": "deploy", "arguments": arguments}, DECLARED)
    assert set(headers) == {"Mcp-Method", "Mcp-Name", "Mcp-Param-Region"}
    assert param_headers_problem(DECLARED, arguments, headers.get) is None
    assert mirrored_argument(arguments, ("target", "replicas")) is None


def test_the_server_finds_a_header_that_does_not_match_or_is_missing() -> None:
    arguments = {"region": "eu", "target": {"replicas": 3}}
    sent = request_headers("tools/call", {"name": "deploy", "arguments": arguments}, DECLARED)
    tampered = {**sent, "Mcp-Param-Replicas": "4"}
    assert param_headers_problem(DECLARED, arguments, tampered.get) == (
        "header Mcp-Param-Replicas ('4') does not match the argument (3)"
    )
    del tampered["Mcp-Param-Region"]
    assert param_headers_problem(DECLARED, arguments, tampered.get) == (
        "header Mcp-Param-Region is missing, but the argument has a value"
    )


def test_declarations_count_for_tool_calls_only_and_a_name_only_when_it_is_there() -> None:
    params = {"name": "greet", "arguments": {"region": "eu"}}
    assert request_headers("prompts/get", params, DECLARED) == {"Mcp-Method": "prompts/get", "Mcp-Name": "greet"}
    assert request_headers("tools/call", {}, DECLARED) == {"Mcp-Method": "tools/call"}
    assert request_headers("tasks/get", {"taskId": "t-1"}) == {"Mcp-Method": "tasks/get", "Mcp-Name": "t-1"}
    assert request_headers("tools/list", None) == {"Mcp-Method": "tools/list"}
