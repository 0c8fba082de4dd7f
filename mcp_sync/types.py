"""The MCP wire models, at their public path: everything of :mod:`mcp_sync.protocol.types`.

>>> from mcp_sync.types import Tool
>>> Tool(name="echo", input_schema={"type": "object"}).name
'echo'
"""

from .protocol.types import *  # noqa: F403  (the public mirror of the protocol layer's models)
