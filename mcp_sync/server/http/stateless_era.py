"""The 2026-07-28 request path of the HTTP app: which POSTs belong to that revision, and their header checks.

A POST belongs to the stateless revision when its ``MCP-Protocol-Version``
says so or, without the header, when its body does (:func:`is_stateless`).
Before it is served, every header that mirrors its body must agree with it
(:class:`HeaderChecks`), or the answer is 400 with a JSON-RPC error echoing
the request's id (:func:`stateless_error`): ``MCP-Protocol-Version`` against
``_meta`` (``-32020``; ``-32022`` for a revision not served, see
:func:`version_refused`), ``Mcp-Method`` and ``Mcp-Name`` (``-32020``),
``_meta`` itself (``-32602``), and the ``Mcp-Param-*`` headers of tool
arguments declared with ``x-mcp-header`` (``-32020``).
"""

from __future__ import annotations

from typing import Any

from ...protocol.errors import MCP_CODES, MCPError
from ...protocol.headers import (
    NAMED_BY,
    InvalidHeaderDeclaration,
    header_declarations,
    header_text,
    param_header_problem,
)
from ...protocol.stateless import PROTOCOL_VERSION, meta_revision
from ...protocol.tasks import NAMED_BY_TASK_ID
from ...protocol.types import Error, JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest, RequestId, Tool
from ...protocol.versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS
from ..core import MCPServer
from ..stateless import StatelessRequest
from .wire import Request, Response, json_response


def is_stateless(version: str | None, message: JSONRPCMessage) -> bool:
    """Whether a POST belongs to the stateless revision (or claims to: its checks then refuse it).

    So it does when its ``MCP-Protocol-Version`` is not a handshake revision,
    or when its body says so (a ``_meta`` protocol version, or
    ``server/discover``) without a header to tell otherwise; a handshake
    header with another ``_meta`` version is a mismatch, refused there.

    >>> from mcp_sync.protocol.types import JSONRPCRequest
    >>> is_stateless(None, JSONRPCRequest(id=1, method="server/discover"))
    True
    >>> is_stateless("2025-11-25", JSONRPCRequest(id=1, method="tools/list"))
    False
    """
    if version is not None and version not in HANDSHAKE_REVISIONS:
        return True
    if not isinstance(message, JSONRPCRequest):
        return False
    claimed = meta_revision(message.params)
    if version is None:
        return claimed is not None or message.method == "server/discover"
    return claimed is not None and claimed != version


class HeaderChecks:
    """The checks of a 2026-07-28 request's headers against its body, for the tools of ``server``.

    Each tool's ``x-mcp-header`` declarations are worked out once per tool object.
    """

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self._declarations: dict[str, tuple[Tool, dict[str, tuple[str, ...]]]] = {}

    def check(self, request: Request, message: JSONRPCRequest, version: str | None) -> StatelessRequest:
        """What the request's ``_meta`` says; raise the error refusing a request whose headers disagree with its
        body or whose ``_meta`` is malformed.

        In order: ``MCP-Protocol-Version`` against ``_meta`` (``HEADER_MISMATCH``),
        the revision (``PROTOCOL_VERSION_MISMATCH``), ``Mcp-Method`` and
        ``Mcp-Name`` (``HEADER_MISMATCH``), ``_meta`` itself (``INVALID_PARAMS``),
        the ``Mcp-Param-*`` headers of the tool called (``HEADER_MISMATCH``).
        The caller answers each with 400 and the error's JSON-RPC code.
        """
        params = message.params or {}
        meta = params.get("_meta")
        claimed = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
        mismatch: str | None = None
        if version is None:
            mismatch = "header MCP-Protocol-Version is missing"
        elif claimed is not None and claimed != version:
            mismatch = f"header MCP-Protocol-Version ({version}) does not match _meta ({claimed})"
        elif version not in STATELESS_REVISIONS:
            raise version_refused(version)
        else:
            mismatch = standard_header_problem(request, message.method, params)
        if mismatch is None:
            read = StatelessRequest.read(params)  # a malformed _meta, before the tool it names is looked at
            if message.method == "tools/call":
                mismatch = self.param_header_problem(request, params)
            if mismatch is None:
                return read
        raise MCPError(MCP_CODES.HEADER_MISMATCH, f"Header mismatch: {mismatch}")

    def param_header_problem(self, request: Request, params: dict[str, Any]) -> str | None:
        """Whether the ``Mcp-Param-*`` headers of a ``tools/call`` match the arguments its tool mirrors."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            return None  # the session answers for invalid params
        tool = self._server.get_tool(name)
        if tool is None:
            return None  # the session answers for an unknown tool
        cached = self._declarations.get(name)
        if cached is None or cached[0] is not tool:  # a tool registered again under the name is a new one
            try:
                cached = (tool, header_declarations(tool.input_schema))
            except InvalidHeaderDeclaration:
                cached = (tool, {})  # clients drop such a tool: there are no headers to hold it to
            self._declarations[name] = cached
        for header, path in cached[1].items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            problem = param_header_problem(header, request.header(f"Mcp-Param-{header}"), value)
            if problem is not None:
                return problem
        return None


def standard_header_problem(request: Request, method: str, params: dict[str, Any]) -> str | None:
    """What is wrong with ``Mcp-Method`` and ``Mcp-Name`` (values exact, surrounding whitespace aside), if anything."""
    sent = request.header("Mcp-Method")
    if sent is None:
        return "header Mcp-Method is missing"
    if sent.strip(" \t") != method:
        return f"header Mcp-Method ({sent.strip()!r}) does not match the method ({method!r})"
    field = NAMED_BY.get(method)
    named = request.header("Mcp-Name")
    if field is None and method in NAMED_BY_TASK_ID:
        field = "taskId"
        if named is None:
            return None  # checked when sent (SEP-2663 names it; older clients of the extension do not send it)
    if field is None:
        return None
    if named is None:
        return "header Mcp-Name is missing"
    text = header_text(named)
    if text is None:
        return "header Mcp-Name is not a valid value"
    value = params.get(field)
    if isinstance(value, str) and text != value:
        return f"header Mcp-Name ({text!r}) does not match params.{field} ({value!r})"
    return None


def stateless_error(status: int, request_id: RequestId | None, code: int, message: str, data: Any = None) -> Response:
    """A refusal of a 2026-07-28 request: the HTTP status, and a JSON-RPC error echoing its id."""
    return json_response(
        status, JSONRPCErrorResponse(id=request_id, error=Error(code=code, message=message, data=data))
    )


def version_refused(requested: str) -> MCPError:
    """The error for an ``MCP-Protocol-Version`` this app does not serve, listing those it does (newest first).

    It travels as 2026-07-28's ``UnsupportedProtocolVersionError`` (code
    ``-32022``): clients of any era can retry with a listed version.
    """
    supported = [*reversed(STATELESS_REVISIONS), *reversed(HANDSHAKE_REVISIONS)]
    return MCPError(
        MCP_CODES.PROTOCOL_VERSION_MISMATCH,
        f"Unsupported protocol version (MCP-Protocol-Version: {requested})",
        data={"requested": requested, "supported": supported},
    )


def unsupported_version(requested: str, request_id: RequestId | None) -> Response:
    """400 refusing an ``MCP-Protocol-Version`` this app does not serve (see :func:`version_refused`)."""
    error = version_refused(requested)
    return stateless_error(400, request_id, error.jsonrpc_code, error.message, error.data)
