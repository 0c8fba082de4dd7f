"""OAuth for MCP clients: sign in to protected servers from a script, a notebook or a web app.

>>> from mcp_sync.client.auth import OAuth, MemoryTokenStore
>>> auth = OAuth(token_store=MemoryTokenStore(), interaction=None)
>>> auth.client_name
'mcp-sync'

See :mod:`mcp_sync.client.auth.oauth` for the flow, :mod:`.interaction` for how
a person completes it and :mod:`.stores` for where tokens are kept.
:mod:`.grants` signs in without a person (client credentials, enterprise-managed
authorization, workload identity) and :mod:`.jose` makes the signed JWTs of
``private_key_jwt`` and DPoP (the ``jwt`` extra: ``pip install "mcp-sync-py[jwt]"``).
"""

from __future__ import annotations

from .grants import ClientCredentials, EnterpriseAuthorization, WorkloadIdentity
from .interaction import Interaction, LoopbackInteraction, PasteInteraction, default_interaction
from .jose import DPoP, SigningKey
from .models import ClientRegistration, Tokens
from .oauth import OAuth
from .stores import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = [
    "ClientCredentials",
    "ClientRegistration",
    "DPoP",
    "EnterpriseAuthorization",
    "FileTokenStore",
    "Interaction",
    "LoopbackInteraction",
    "MemoryTokenStore",
    "OAuth",
    "PasteInteraction",
    "SigningKey",
    "TokenStore",
    "Tokens",
    "WorkloadIdentity",
    "default_interaction",
]
