"""A stdio server of the Agent Skills in the directory given as its one argument (see tests/test_skills.py)."""

from __future__ import annotations

import sys

from mcp_sync import MCPServer

if __name__ == "__main__":
    server = MCPServer("skills-test-server")
    server.add_skills(sys.argv[1])
    server.serve_stdio()
