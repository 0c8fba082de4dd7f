"""The official Python SDK's OAuth client against a protected MCP server, with a test for a browser.

Run it with the peer virtualenv's python (``tests/peers.py``)::

    python sdk_oauth_client.py URL REDIRECT_URI [CLIENT_ID]

It connects to the Streamable HTTP endpoint ``URL`` with the SDK's
``OAuthClientProvider`` (``mcp.client.auth``) as the ``httpx2`` client's auth:
on the server's 401 the SDK discovers the protected resource metadata
(RFC 9728), then the authorization server's (RFC 8414), registers a client
(RFC 7591, a native public client redirecting to ``REDIRECT_URI``) and runs
the authorization code flow with PKCE. Then it calls ``whoami`` and
``admin_reset``. Given ``CLIENT_ID`` (a public client registered beforehand
for ``REDIRECT_URI``), the SDK starts with it in its storage and registers
none.

Where a person would use a browser, the script talks over its stdin and
stdout, one JSON object a line:

- it prints ``{"authorize": URL}`` when the SDK sends the person to the
  authorization URL, and reads back one line: the URL the authorization
  server redirected the browser to (``REDIRECT_URI?code=...&state=...&iss=...``,
  or ``?error=...``);
- at the end it prints ``{"report": {...}}``: what each step answered
  (``whoami``, ``admin_reset``: a result, or the exception that ended the
  call, by type and message), the client the SDK registered and the tokens
  it ended with.

Every step is bounded: the whole run by ``RUN_TIMEOUT``, each read of stdin
included.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

warnings.simplefilter("ignore")  # the SDK flags the handshake-era features as deprecated

RUN_TIMEOUT = 60.0


class MemoryStorage:
    """The SDK's ``TokenStorage``, in memory: what it registered and the tokens it holds."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def failure(exc: BaseException) -> dict[str, Any]:
    """An exception as the report shows it; a group's members (anyio's task groups raise groups) one by one."""
    members = getattr(exc, "exceptions", None)  # an ExceptionGroup (the backport's too, on Python 3.10)
    if isinstance(members, tuple):
        return {"type": type(exc).__name__, "members": [failure(member) for member in members]}
    return {"type": type(exc).__name__, "message": str(exc)}


async def main(url: str, redirect_uri: str, client_id: str | None = None) -> None:
    storage = MemoryStorage()
    if client_id is not None:
        storage.client_info = OAuthClientInformationFull(
            client_id=client_id,
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        )
    authorizations: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        authorizations.append(authorization_url)
        say({"authorize": authorization_url})

    async def callback_handler() -> AuthorizationCodeResult:
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        query = {name: values[0] for name, values in parse_qs(urlsplit(line.strip()).query).items()}
        if "code" not in query:
            raise OAuthFlowError(f"the authorization server refused: {query}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="official SDK test client",
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    report: dict[str, Any] = {}
    with anyio.fail_after(RUN_TIMEOUT):
        async with httpx2.AsyncClient(auth=provider, timeout=20.0) as http:
            try:
                async with (
                    streamable_http_client(url, http_client=http) as (read, write, *_),
                    ClientSession(read, write) as session,
                ):
                    report["initialize"] = dump(await session.initialize())
                    report["whoami"] = dump(await session.call_tool("whoami", {}))
                    report["authorizations_before_admin"] = len(authorizations)
                    report["scope_before_admin"] = storage.tokens.scope if storage.tokens else None
                    try:
                        report["admin_reset"] = dump(await session.call_tool("admin_reset", {}))
                    except Exception as exc:  # what the SDK does with the 403 is what the test looks at
                        report["admin_reset_error"] = failure(exc)
            except BaseException as exc:  # the transport's task group ends with the call's failure
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    raise
                report["session_error"] = failure(exc)
    report["authorizations"] = authorizations
    report["client"] = dump(storage.client_info) if storage.client_info else None
    report["tokens"] = dump(storage.tokens) if storage.tokens else None
    say({"report": report})


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
