"""The MCP wire models, at their public path: all of :mod:`mcp_sync.protocol.types` and ``protocol.messages``.

The per-method envelopes, typed errors and message unions of
:mod:`mcp_sync.protocol.messages`, and the models of what a server asks of
its client (sampling, roots, elicitation) and of the requests and
utilities a program may never use (see
:data:`mcp_sync.protocol.types.ON_DEMAND`), are looked up the first time
one is asked for, so that importing this module builds only the models a
connection uses.

>>> from mcp_sync.types import Tool, PingRequest
>>> Tool(name="echo", input_schema={"type": "object"}).name
'echo'
>>> PingRequest(id=1).method
'ping'
"""

from typing import TYPE_CHECKING, Any

from .protocol.types import *  # noqa: F403  (the public mirror of the protocol layer's models)

if TYPE_CHECKING:  # type checkers see every name; at run time the envelopes come from __getattr__
    from .protocol.messages import *  # noqa: F403


def __getattr__(name: str) -> Any:
    from .protocol import messages, types

    if any(name in names for names in types.ON_DEMAND.values()):  # models loaded when first used
        value = getattr(types, name)
        globals()[name] = value
        return value
    try:
        value = getattr(messages, name)
    except AttributeError:
        raise AttributeError(f"module 'mcp_sync.types' has no attribute {name!r}") from None
    globals()[name] = value
    return value
