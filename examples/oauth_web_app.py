"""A Flask app that signs in to a protected MCP server with OAuth, then calls a tool there.

``/`` calls the tool with the tokens kept in the store; when there are none
yet (or they can no longer be refreshed), it sends the browser to ``/login``,
which redirects to the authorization server (:meth:`OAuth.begin`). The
authorization server sends the browser back to ``/callback``, where
:meth:`OAuth.complete` exchanges the code for tokens, and then on to ``/``.

Everything the sign-in needs between those requests (the client registration,
the pending sign-in under its ``state``, the tokens) is in a
:class:`FileTokenStore`, so ``/login`` and ``/callback`` may be served by
different worker processes. Configure it with environment variables:

- ``MCP_SERVER_URL``: the MCP endpoint, e.g. ``https://mcp.example.com/mcp``;
- ``OAUTH_REDIRECT_URI``: this app's ``/callback`` as the browser reaches it,
  e.g. ``http://127.0.0.1:5000/callback``;
- ``OAUTH_STORE_DIR``: the store's directory, shared by the workers
  (default: ``~/.local/state/mcp-sync/oauth``);
- ``MCP_TOOL``: the tool to call, without arguments (default: ``motd``).

Run it from the repository's root::

    export MCP_SERVER_URL=https://mcp.example.com/mcp
    export OAUTH_REDIRECT_URI=http://127.0.0.1:5000/callback OAUTH_STORE_DIR=/tmp/oauth-app
    flask --app examples/oauth_web_app.py run --port 5000
    gunicorn -w 2 -b 127.0.0.1:5000 examples.oauth_web_app:app        # or
    waitress-serve --listen=127.0.0.1:5000 examples.oauth_web_app:app

The app signs in *one* account, whoever visits: the store is keyed by the
MCP server's URL. A site with many users gives each user a store of their own
(a directory per user, or a :class:`~mcp_sync.client.auth.TokenStore` over
the site's database) and an :class:`OAuth` built with it.
"""

from __future__ import annotations

import html
import os

from flask import Flask, redirect, request, url_for
from werkzeug.wrappers import Response

import mcp_sync
from mcp_sync.client.auth import FileTokenStore, OAuth
from mcp_sync.errors import MCPError

SERVER_URL = os.environ["MCP_SERVER_URL"]
TOOL = os.environ.get("MCP_TOOL", "motd")

auth = OAuth(
    redirect_uri=os.environ["OAUTH_REDIRECT_URI"],
    token_store=FileTokenStore(os.environ.get("OAUTH_STORE_DIR")),
    interaction=None,  # nobody at this process's terminal: sign-ins go through /login and /callback
)

app = Flask(__name__)


@app.get("/")
def index() -> Response | str:
    try:
        with mcp_sync.connect(SERVER_URL, auth=auth, timeout=30) as client:
            result = client.call_tool(TOOL)
    except MCPError as error:
        if isinstance(error.data, dict) and error.data.get("reason") == "authorization_required":
            return redirect(url_for("login"))
        raise
    return f"<h1>{html.escape(TOOL)}</h1><p>{html.escape(result.text)}</p>"


@app.get("/login")
def login() -> Response:
    return redirect(auth.begin(SERVER_URL))


@app.get("/callback")
def callback() -> Response | tuple[str, int]:
    try:
        auth.complete(request.url)  # the code exchanged for tokens, which the store keeps
    except MCPError as error:  # the person said no, or the link was stale or already used
        return f"<p>Sign-in failed: {html.escape(error.message)}</p><p><a href='/login'>Try again</a></p>", 400
    return redirect(url_for("index"))
