"""The MCP wire models, at their public path: all of :mod:`mcp_sync.protocol.types` and ``protocol.messages``.

>>> from mcp_sync.types import Tool
>>> Tool(name="echo", input_schema={"type": "object"}).name
'echo'
"""

from .protocol.messages import *  # noqa: F403  (the per-method envelopes, typed errors and message unions)
from .protocol.types import *  # noqa: F403  (the public mirror of the protocol layer's models)
