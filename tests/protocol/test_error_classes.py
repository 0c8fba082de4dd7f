"""The exception class follows from the code: at construction, and at every raise site of the package."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path

import pytest

import mcp_sync
from mcp_sync.errors import MCP_CODES, MCPError, MCPProtocolError, MCPTransportError
from mcp_sync.protocol.errors import error_class_for

PACKAGE = Path(mcp_sync.__file__).parent
CLASSES = {"MCPError": MCPError, "MCPProtocolError": MCPProtocolError, "MCPTransportError": MCPTransportError}


def test_each_family_has_its_codes() -> None:
    protocol = {code for code in MCP_CODES if error_class_for(code) is MCPProtocolError}
    transport = {code for code in MCP_CODES if error_class_for(code) is MCPTransportError}
    assert protocol == {
        MCP_CODES.PROTOCOL_INVALID,
        MCP_CODES.PROTOCOL_VERSION_MISMATCH,
        MCP_CODES.PARSE_ERROR,
        MCP_CODES.HEADER_MISMATCH,
    }
    assert transport == {MCP_CODES.TRANSPORT_CLOSED, MCP_CODES.TRANSPORT_ERROR}


@pytest.mark.parametrize("code", list(MCP_CODES))
def test_the_code_decides_the_class(code: str) -> None:
    family = error_class_for(code)
    built = MCPError(code, "m")
    assert type(built) is family and built.code == code
    assert type(family(code, "m")) is family
    for other in (MCPProtocolError, MCPTransportError):
        if other is not family:
            with pytest.raises(TypeError, match=f"{code} is raised as {family.__name__}, not {other.__name__}"):
                other(code, "m")


def test_a_subclass_of_the_family_is_kept() -> None:
    class Gone(MCPTransportError):
        pass

    class Refused(MCPError):
        pass

    assert type(Gone(MCP_CODES.TRANSPORT_CLOSED, "gone")) is Gone
    assert type(Refused(MCP_CODES.NOT_FOUND, "no")) is Refused
    with pytest.raises(TypeError):
        Refused(MCP_CODES.TRANSPORT_CLOSED, "a subclass of MCPError cannot carry a transport code")


@pytest.mark.parametrize("clone", [copy.copy, lambda error: pickle.loads(pickle.dumps(error))])
def test_errors_copy_and_pickle_whole(clone: object) -> None:
    error = MCPError(MCP_CODES.HEADER_MISMATCH, "bad header", context={"h": "x"}, data={"d": 1}, jsonrpc_code=-32020)
    again = clone(error)  # type: ignore[operator]
    assert type(again) is MCPProtocolError
    assert (again.code, again.message, again.context, again.data, again.jsonrpc_code) == (
        error.code,
        error.message,
        error.context,
        error.data,
        error.jsonrpc_code,
    )


def raise_sites() -> list[tuple[str, int, str, str]]:
    """``(file, line, class named, code)`` for every ``SomeError(MCP_CODES.X, ...)`` in the package."""
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CLASSES):
                continue
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Attribute) and ast.unparse(first.value) == "MCP_CODES":
                code = getattr(MCP_CODES, first.attr)
                sites.append((str(path.relative_to(PACKAGE)), node.lineno, node.func.id, code))
    return sites


def test_every_raise_site_names_a_class_its_code_allows() -> None:
    sites = raise_sites()
    assert len(sites) > 50  # the scan sees the package's raise sites
    wrong = [
        f"{path}:{line}: {named}({code})"
        for path, line, named, code in sites
        if CLASSES[named] is not MCPError and CLASSES[named] is not error_class_for(code)
    ]
    assert wrong == []
