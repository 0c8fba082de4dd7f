"""A scripted stdio server (no mcp_sync) that answers each tools, prompts or resources listing with an empty page
and a new cursor.

A client following ``nextCursor`` would list for ever: every cursor is new,
so refusing a repeated one does not stop it. Each listing asked for is
noted on stderr, with its cursor.
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
        sys.stderr.write(f"listed {params.get('cursor')}\n")
        sys.stderr.flush()
        result = {method.split("/")[0]: [], "nextCursor": f"page-{next(counter)}"}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
