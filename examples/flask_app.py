"""A Flask application with an MCP endpoint mounted beside its own pages.

The page at ``/`` lists notes; MCP clients reach ``/mcp`` (Streamable HTTP)
or ``/mcp/sse`` (the 2024-11-05 HTTP+SSE transport) and add notes with a
tool, so both sides share one process's memory. Run it, from the
repository's root, with the embedded server, werkzeug's development server or
gunicorn::

    python examples/flask_app.py --port 8000
    flask --app examples.flask_app run --port 8000
    gunicorn -k gthread --threads 8 -w 1 -b 127.0.0.1:8000 examples.flask_app:app

How the mount works: :class:`~werkzeug.middleware.dispatcher.DispatcherMiddleware`
moves the mount prefix from ``PATH_INFO`` to ``SCRIPT_NAME``, so a request
for ``/mcp`` reaches the MCP app with an empty ``PATH_INFO``, which it reads
as ``/``: the app is built with ``path="/"``, and its legacy paths (``/sse``,
``/messages/``) become ``/mcp/sse`` and ``/mcp/messages/``; the endpoint it
announces to legacy clients includes ``SCRIPT_NAME``. Flask's own request
handling (and its middleware) never sees the MCP requests, so nothing there
buffers their SSE streams.
"""

from __future__ import annotations

import argparse
import html
import signal
import threading

from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from mcp_sync import Context, MCPServer, StreamableHTTPApp
from mcp_sync.server.http.wsgi import WSGIServer

MCP_MOUNT = "/mcp"

notes: list[str] = []
notes_lock = threading.Lock()

mcp_server = MCPServer("flask-notes", "1.0")


@mcp_server.tool(structured_output=False)
def add_note(text: str) -> str:
    """Add a note; the Flask page at / shows it."""
    with notes_lock:
        notes.append(text)
        return f"{len(notes)} notes"


@mcp_server.tool(structured_output=False)
def summarize_notes(ctx: Context) -> str:
    """Read every note (reporting progress), then ask the client's model for a summary."""
    with notes_lock:
        current = list(notes)
    for done, _ in enumerate(current, start=1):
        ctx.progress(done, len(current), f"read {done} of {len(current)}")
    answer = ctx.sample("Summarize these notes: " + "; ".join(current), max_tokens=100)
    return getattr(answer.content, "text", "")


app = Flask(__name__)


@app.get("/")
def index() -> str:
    with notes_lock:
        items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    return f"<h1>Notes</h1><ul>{items}</ul><p>MCP endpoint: {MCP_MOUNT}</p>"


mcp_app = StreamableHTTPApp(mcp_server, path="/")
app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {MCP_MOUNT: mcp_app})  # type: ignore[method-assign]


def main() -> None:
    """Serve with mcp_sync's embedded WSGI server until Ctrl-C or SIGTERM; either closes the MCP app."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    embedded = WSGIServer(app, options.host, options.port)
    embedded.on_close(mcp_app.close)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as on Ctrl-C
    print(f"serving on {embedded.url}/ (MCP at {embedded.url}{MCP_MOUNT})", flush=True)
    embedded.serve_forever()


if __name__ == "__main__":
    main()
