"""One ``echo`` call from a script using the official SDK's ``Client``, printing the result (the SDK's Python).

The SDK's side of the end-to-end row of ``cli_bench.py``: what a user
writes instead of ``mcp-sync call SERVER echo text=hello``. The server's
environment is this process's (the SDK passes only a few variables by
default, and the server must import the tree under test).

Usage: ``python sdk_cli_call.py SERVER_COMMAND...``
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters


async def main(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(params) as client:
        result = await client.call_tool("echo", {"text": "hello"})
        print(result.content[0].text, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
