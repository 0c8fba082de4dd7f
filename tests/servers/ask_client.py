"""Calls a tool of the asking server (in memory) in the era given, as a person at a terminal would.

Usage: ``python ask_client.py ERA TOOL``. Prints which provider the client
chose and the elicitation it declares, then the tool's text, then whether the
terminal's interrupt signal is on again (the prompts turn it off while
they read).
"""

from __future__ import annotations

import sys
import termios

from asking import server

import mcp_sync

era, tool = sys.argv[1:3]
with mcp_sync.connect(server, era=era) as client:
    provider = type(client.elicitation_provider).__name__
    print(provider, client.negotiated_era, client.capabilities().to_wire().get("elicitation"), flush=True)
    print(client.call_tool(tool).text, flush=True)
if sys.stdin.isatty():
    print("interrupt signal on:", bool(termios.tcgetattr(0)[3] & termios.ISIG), flush=True)
