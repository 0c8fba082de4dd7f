"""A scripted stdio server (no mcp_sync) that floods the client with the same notification.

Its ``tools/call`` sends ``notifications/tools/list_changed`` as many times as
the ``times`` argument says, then ``notifications/resources/updated`` for
``flood://count``, then its answer. Reading ``flood://count`` tells how many
``tools/list`` requests it has had so far.
"""

from __future__ import annotations

import json
import sys
from typing import Any

COUNT = "flood://count"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")


listings = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    method, params = message["method"], message.get("params") or {}
    result: dict[str, Any] = {}
    if method == "initialize":
        capabilities = {"tools": {"listChanged": True}, "resources": {"subscribe": True}}
        info = {"name": "notice-flood", "version": "1.0"}
        result = {"protocolVersion": params["protocolVersion"], "capabilities": capabilities, "serverInfo": info}
    elif method == "tools/list":
        listings += 1
        result = {"tools": [{"name": "flood", "inputSchema": {"type": "object"}}]}
    elif method == "resources/list":
        result = {"resources": []}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": []}
    elif method == "resources/read":
        result = {"contents": [{"uri": COUNT, "text": str(listings)}]}
    elif method == "tools/call":
        for _ in range(params["arguments"]["times"]):
            send({"method": "notifications/tools/list_changed"})
        send({"method": "notifications/resources/updated", "params": {"uri": COUNT}})
        result = {"content": [{"type": "text", "text": "flooded"}]}
    send({"id": message["id"], "result": result})
    sys.stdout.flush()
