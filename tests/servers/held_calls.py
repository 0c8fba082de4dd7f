"""A server for many workers whose calls are held until the test lets them go: which worker to kill is known.

``hold(tag)`` says which process took it (pushing ``{"tag", "pid"}`` onto the
Redis list ``held``), then waits for the test to push anything onto
``release:<tag>`` (at most a minute), and answers ``"<tag> released"``. It
sends nothing before its answer, so its POST waits for its response's head
(JSON, or SSE once a ping interval passed) the whole time it is held. The
test learns where each call landed with ``BLPOP held``: no polling. Also
``pid``, and ``touch(uri)``, which marks ``uri`` updated for its subscribers.

Under gunicorn, with ``MCP_SYNC_REDIS_URL`` set (the backend and the
test's lists share that Redis)::

    gunicorn -k gthread --threads 8 -w 2 -b 127.0.0.1:8000 tests.servers.held_calls:application
"""

from __future__ import annotations

import json
import os

import redis

from mcp_sync import MCPServer, StreamableHTTPApp

HOLD_SECONDS = 60

server = MCPServer("held-calls", "1.0")
_redis = redis.Redis.from_url(os.environ["MCP_SYNC_REDIS_URL"], socket_timeout=HOLD_SECONDS + 5)


@server.tool(structured_output=False)
def hold(tag: str) -> str:
    """Say where this call runs, then wait until the test releases ``tag``."""
    _redis.rpush("held", json.dumps({"tag": tag, "pid": os.getpid()}))
    released = _redis.blpop([f"release:{tag}"], timeout=HOLD_SECONDS)
    return f"{tag} released" if released else f"{tag} never released"


@server.tool
def pid() -> int:
    """The process serving this call."""
    return os.getpid()


@server.tool(structured_output=False)
def touch(uri: str) -> str:
    """Mark ``uri`` updated: its subscribers hear of it, whichever worker holds their stream."""
    server.mark_resource_updated(uri)
    return f"{uri} touched"


@server.resource("notes://held", mime_type="text/plain")
def note() -> str:
    """A resource to subscribe to."""
    return "held"


application = StreamableHTTPApp(server)
