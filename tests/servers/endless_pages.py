"""A scripted stdio server (no mcp_sync) that answers each tools, prompts or resources listing with an empty page
and a new cursor.

A client following ``nextCursor`` would list for ever: every cursor is new,
so refusing a repeated one does not stop it.
"""

from __future__ import annotations

import itertools
import json
import sys

counter = itertools.count(1)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        info = {"name": "endless-pages", "version": "1.0"}
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {}, "serverInfo": info}
    elif method in ("tools/list", "prompts/list", "resources/list"):
        result = {method.split("/")[0]: [], "nextCursor": f"page-{next(counter)}"}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
