"""An MCP server behind OAuth: tokens checked against an authorization server, one tool needing ``admin``.

Streamable HTTP at ``http://127.0.0.1:PORT/mcp``; every request needs a bearer
token issued for that URL (its ``aud``) by ``--issuer``. JWT access tokens
(RFC 9068) are checked against the issuer's keys at ``--jwks-url``; with
``--introspection-url``, ``--client-id`` and ``--client-secret`` the server
asks the authorization server about each token instead (RFC 7662), for
opaque tokens. The RFC 9728 metadata that names the issuer is served at
``/.well-known/oauth-protected-resource/mcp`` (and at the root well-known
URL)::

    python examples/protected_server.py --port 8000 --issuer https://as.example \\
        --jwks-url https://as.example/jwks --audience http://127.0.0.1:8000/mcp

Every request needs the scope ``mcp:read``. Tools: ``whoami`` answers with the caller's subject and scopes (from
``ctx.auth``, the token's verified facts); ``admin_reset`` needs the scope
``admin``: a token without it gets 403 ``insufficient_scope``, and clients
such as ``mcp_sync.client.auth.OAuth`` then sign in again asking for it.
It prints ``serving MCP on URL`` once it listens, and stops on SIGTERM or
Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Sequence
from typing import Any

from mcp_sync import Context, MCPServer, start_http
from mcp_sync.server.authorization.tokens import TokenVerifier
from mcp_sync.server.authorization.verifiers import IntrospectionVerifier, JWTVerifier

server = MCPServer("protected", "1.0")
resets = 0


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """Who the server thinks is calling: the token's subject, client and scopes."""
    auth = ctx.auth
    if auth is None:
        return {"subject": None, "client_id": None, "scopes": []}
    return {"subject": auth.subject, "client_id": auth.client_id, "scopes": sorted(auth.scopes)}


@server.tool(scopes=["admin"])
def admin_reset(ctx: Context) -> str:
    """Reset the server's state (needs the scope ``admin``)."""
    global resets
    resets += 1
    who = ctx.auth.subject if ctx.auth is not None else None
    return f"reset number {resets}, by {who}"


def verifier(options: argparse.Namespace) -> TokenVerifier:
    """Introspection when its endpoint and credentials are given, else JWT checked against the JWKS."""
    if options.introspection_url:
        if not (options.client_id and options.client_secret):
            raise SystemExit("--introspection-url needs --client-id and --client-secret")
        return IntrospectionVerifier(
            options.introspection_url,
            client_id=options.client_id,
            client_secret=options.client_secret,
            audience=options.audience,
        )
    return JWTVerifier(options.issuer, options.audience, jwks_url=options.jwks_url)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--issuer", required=True, help="the authorization server's issuer identifier")
    parser.add_argument("--jwks-url", help="where the issuer publishes its keys (else found by discovery)")
    parser.add_argument("--audience", required=True, help="this server's URL, as tokens name it in aud")
    parser.add_argument("--introspection-url")
    parser.add_argument("--client-id")
    parser.add_argument("--client-secret")
    options = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    running = start_http(
        server,
        port=options.port,
        token_verifier=verifier(options),
        required_scopes=["mcp:read"],
        resource_metadata={"authorization_servers": [options.issuer], "resource": options.audience},
    )
    with running:
        print(f"serving MCP on {running.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
