"""JSON-RPC batches, where MCP allows them: revision 2025-03-26 only.

A batch is a JSON array of messages. :func:`~mcp_sync.protocol.jsonrpc.decode_message`
always refuses one (``-32600``), keeping the array's elements in
:attr:`InvalidMessage.batch <mcp_sync.protocol.jsonrpc.InvalidMessage.batch>`;
a server whose connection is at a revision that :func:`accepts_batch` takes
them apart with :func:`batch_elements` and answers them as one array.

>>> accepts_batch("2025-03-26"), accepts_batch("2025-11-25")
(True, False)
>>> [type(m).__name__ for m in batch_elements([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, 7])]
['JSONRPCRequest', 'InvalidMessage']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import JsonRpcCode
from .jsonrpc import InvalidMessage, encode_message, parse_value
from .types import Error, JSONRPCMessage, JSONRPCRequest

__all__ = ["BATCH_REVISION", "accepts_batch", "batch_elements", "encode_batch"]

BATCH_REVISION = "2025-03-26"
"""The one revision of MCP with JSON-RPC batches."""


def accepts_batch(revision: str | None) -> bool:
    """Whether a connection at ``revision`` must accept a JSON-RPC batch.

    The era rule: 2025-03-26 added batches (implementations MUST support
    receiving them) and 2025-06-18 removed them again; 2024-11-05 never had
    them. At every other revision (and before any is negotiated) an array
    stays what it is today: one ``-32600`` error.
    """
    return revision == BATCH_REVISION


def batch_elements(values: Sequence[Any]) -> list[JSONRPCMessage | InvalidMessage]:
    """Each element of a batch as the message it is, or the :class:`InvalidMessage` that answers it.

    An ``initialize`` request is refused here with ``-32600`` (it MUST NOT be
    part of a batch). Without the batch's text, an integral float id comes
    back as the float's own text (see :func:`~mcp_sync.protocol.jsonrpc.parse_value`).
    """
    elements: list[JSONRPCMessage | InvalidMessage] = []
    for value in values:
        message = parse_value(value)
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            error = Error(code=JsonRpcCode.INVALID_REQUEST, message="Invalid request: initialize cannot be in a batch")
            message = InvalidMessage(error, message.id)
        elements.append(message)
    return elements


def encode_batch(messages: Sequence[JSONRPCMessage]) -> bytes:
    """The answer to a batch: its messages as one compact JSON array.

    >>> from mcp_sync.protocol.jsonrpc import error_response
    >>> encode_batch([error_response(1, -32601, "Method not found: x")])
    b'[{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: x"}}]'
    """
    return b"[" + b",".join(encode_message(message) for message in messages) + b"]"
