"""OAuth for MCP clients: sign in to protected servers from a script, a notebook or a web app.

>>> from mcp_sync.client.auth import OAuth, MemoryTokenStore
>>> auth = OAuth(token_store=MemoryTokenStore(), interaction=None)
>>> auth.client_name
'mcp-sync'

See :mod:`mcp_sync.client.auth.oauth` for the flow, :mod:`.interaction` for how
a person completes it and :mod:`.stores` for where tokens are kept.
"""

from __future__ import annotations

from .interaction import Interaction, LoopbackInteraction, PasteInteraction, default_interaction
from .models import ClientRegistration, Tokens
from .oauth import OAuth
from .stores import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = [
    "ClientRegistration",
    "FileTokenStore",
    "Interaction",
    "LoopbackInteraction",
    "MemoryTokenStore",
    "OAuth",
    "PasteInteraction",
    "TokenStore",
    "Tokens",
    "default_interaction",
]
