"""The tasks test server with the skills in the directory given as its argument (for test_hostile_tasks.py).

With ``--proxy`` after the directory, it is served through :func:`mcp_sync.proxy` (one upstream per session).
"""

from __future__ import annotations

import sys
import threading

from tasks_server import build_server

from mcp_sync import proxy

if __name__ == "__main__":
    server = build_server(threading.Event())
    server.add_skills(sys.argv[1])
    if sys.argv[2:] == ["--proxy"]:
        with proxy(server, name="hostile-proxy") as front:
            front.serve_stdio()
    else:
        server.serve_stdio()
