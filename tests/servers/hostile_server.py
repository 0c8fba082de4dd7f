"""The tasks test server, with the skills in the directory given as its argument (for test_hostile_tasks.py)."""

from __future__ import annotations

import sys
import threading

from tasks_server import build_server

if __name__ == "__main__":
    server = build_server(threading.Event())
    server.add_skills(sys.argv[1])
    server.serve_stdio()
