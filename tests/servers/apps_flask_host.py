"""A Flask application that shows MCP Apps: ``AppHost`` mounted at ``/apps`` beside Flask's own routes.

The page origin is ``http://127.0.0.1:PORT`` and the sandbox origin
``http://localhost:PORT``: one server, two host names, as the README has a
web application do (``MOUNTED_PORT`` gives the port). ``/counter`` shows
``examples/apps_server.py``'s counter (in memory) and sends the browser to
the view's page.
"""

from __future__ import annotations

import os
import signal

from apps_server import server
from flask import Flask, redirect
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.wrappers import Response

from mcp_sync import connect
from mcp_sync.apps import AppHost
from mcp_sync.server.http.wsgi import WSGIServer

PORT = os.environ["MOUNTED_PORT"]
apps = AppHost(f"http://127.0.0.1:{PORT}", f"http://localhost:{PORT}", prefix="/apps")
client = connect(server, host_apps=True, timeout=30)

app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "<h1>Flask's own page</h1>"


@app.get("/counter")
def counter() -> Response:
    view = apps.show(client, "show_counter", {"from": "flask"})
    view.bridge.deliver_result(client.call_tool("show_counter", {"from": "flask"}))
    return redirect(view.url)


app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/apps": apps})  # type: ignore[method-assign]


if __name__ == "__main__":  # the embedded server, until SIGTERM (taken as Ctrl-C), which closes the views
    embedded = WSGIServer(app, "127.0.0.1", int(PORT))
    embedded.on_close(apps.close)
    embedded.on_close(client.close)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    embedded.serve_forever()
