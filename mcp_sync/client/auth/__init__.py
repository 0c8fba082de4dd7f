"""OAuth for MCP clients: sign in to protected servers from a script, a notebook or a web app.

>>> from mcp_sync.client.auth import OAuth, MemoryTokenStore
>>> auth = OAuth(token_store=MemoryTokenStore(), interaction=None)
>>> auth.client_name
'mcp-sync'

- ``oauth``: ``OAuth``, the ``requests`` auth that signs in when a server asks and keeps the tokens fresh;
- ``discovery``: finding who authorizes a server (the challenge, resource and authorization-server metadata);
- ``interaction``: how a person completes a sign-in (a loopback redirect, or a pasted URL);
- ``stores``: where tokens, registrations and pending sign-ins are kept (memory, files, your own);
- ``models``: the metadata, registrations, tokens and pending sign-ins the flow reads and keeps;
- ``grants``: sign-ins without a person (client credentials, enterprise-managed authorization, workload identity);
- ``jose``: the signed JWTs of ``private_key_jwt`` and DPoP (the ``jwt`` extra: ``pip install "mcp-sync-py[jwt]"``).

The OAuth rules the server shares (well-known URLs, challenges, bearer
credentials, scopes) are :mod:`mcp_sync.protocol.oauth`'s; outbound HTTP is
:mod:`mcp_sync.runtime.http`'s.

Part of the client layer, under its rule:

May import: ``client``, ``transports``, ``runtime``, ``protocol``, ``display``.
Must not import: ``server``, ``llm``, ``apps``, nor the composition level.
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
