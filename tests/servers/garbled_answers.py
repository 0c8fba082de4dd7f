"""A scripted stdio server (no mcp_sync) whose answers to ``tools/call`` cannot be read.

The call's ``how`` argument says what it writes instead of a readable answer,
under the call's own id: ``deep`` (nesting deeper than any parser goes),
``nan`` (a ``NaN``, which is not JSON) or ``long`` (a line of 10 kB, over a
client's small line limit). With ``request`` it writes an unreadable request
of its own that happens to carry the same id; when the client's error reply
to it comes, it answers the call with that reply's error code.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def write(line: bytes) -> None:
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


def answer(message_id: Any, result: dict[str, Any]) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode())


held: Any = None  # the id of the call waiting for the client's reply to the unreadable request
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    if "method" not in message:  # the client's reply to the unreadable request
        answer(held, {"content": [{"type": "text", "text": str(message["error"]["code"])}]})
        continue
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        info = {"name": "garbled-answers", "version": "1.0"}
        answer(message["id"], {"protocolVersion": params["protocolVersion"], "capabilities": {}, "serverInfo": info})
        continue
    if method != "tools/call":
        answer(message["id"], {})
        continue
    how = params["arguments"]["how"]
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(message["id"]).encode()
    if how == "deep":
        write(head + b',"result":{"content":' + b"[" * 1000 + b"]" * 1000 + b"}}")
    elif how == "nan":
        write(head + b',"result":{"content":[],"x":NaN}}')
    elif how == "long":
        write(head + b',"result":{"content":[{"type":"text","text":"' + b"a" * 10_000 + b'"}]}}')
    else:
        held = message["id"]
        write(head + b',"method":"roots/list","params":{"x":NaN}}')
