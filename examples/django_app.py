"""A single-file Django project with an MCP endpoint next to its views.

Django's settings are made in code and its URLconf is this module; the WSGI
callable ``application`` sends ``/mcp`` (and the 2024-11-05 HTTP+SSE paths
under it, ``/mcp/sse`` and ``/mcp/messages/``) to the MCP app and every
other path to Django. From the repository's root::

    python examples/django_app.py runserver 127.0.0.1:8000 --noreload
    gunicorn -k gthread --threads 8 -w 1 -b 127.0.0.1:8000 examples.django_app:application

The page at ``/`` lists the books on a shelf that an MCP tool adds to.

Why beside Django rather than inside a view: the MCP app is a WSGI
application that streams its answers (Server-Sent Events) and reads its own
request bodies, so it is mounted in front of Django, the way a WSGI server
mounts two applications. Each side keeps its own protections: Django's
``ALLOWED_HOSTS`` for its views (400 for another ``Host``), the MCP app's DNS
rebinding check for the endpoint (421).
"""

from __future__ import annotations

import html
import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from mcp_sync import Context, MCPServer, StreamableHTTPApp

MCP_MOUNT = "/mcp"

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "an-example-key-not-for-production"),
        ALLOWED_HOSTS=["localhost", "127.0.0.1", "[::1]"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[],
        MIDDLEWARE=["django.middleware.security.SecurityMiddleware", "django.middleware.common.CommonMiddleware"],
        DATABASES={},
        WSGI_APPLICATION=f"{__name__}.application",
        USE_TZ=True,
    )

# ------------------------------------------------------------------ the shelf

shelf: list[str] = []
shelf_lock = threading.Lock()

mcp_server = MCPServer("django-shelf", "1.0")


@mcp_server.tool(structured_output=False)
def add_book(title: str) -> str:
    """Put a book on the shelf; Django's page at / lists it."""
    with shelf_lock:
        shelf.append(title)
        return f"{len(shelf)} books"


@mcp_server.tool(structured_output=False)
def recommend(ctx: Context) -> str:
    """Look at each book (reporting progress), then ask the client's model which to read first."""
    with shelf_lock:
        books = list(shelf)
    for done, _ in enumerate(books, start=1):
        ctx.progress(done, len(books), f"looked at {done} of {len(books)}")
    answer = ctx.sample("Which should I read first: " + "; ".join(books) + "?", max_tokens=50)
    return getattr(answer.content, "text", "")


# ------------------------------------------------------------------ Django


def index(request: HttpRequest) -> HttpResponse:
    with shelf_lock:
        items = "".join(f"<li>{html.escape(title)}</li>" for title in shelf)
    return HttpResponse(f"<h1>Shelf</h1><ul>{items}</ul><p>MCP endpoint: {MCP_MOUNT}</p>")


def books(request: HttpRequest) -> JsonResponse:
    with shelf_lock:
        return JsonResponse({"books": list(shelf)})


urlpatterns = [path("", index), path("books/", books)]

django_application = get_wsgi_application()

# ------------------------------------------------------------------ the mount

mcp_app = StreamableHTTPApp(mcp_server, path="/")
"""The MCP app sees paths relative to its mount: ``/mcp`` arrives as ``/``."""

StartResponse = Callable[..., Any]


def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """``/mcp`` and below to the MCP app (the prefix moved to ``SCRIPT_NAME``), the rest to Django."""
    path_info: str = environ.get("PATH_INFO", "")
    if path_info == MCP_MOUNT or path_info.startswith(MCP_MOUNT + "/"):
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + MCP_MOUNT
        environ["PATH_INFO"] = path_info[len(MCP_MOUNT) :]
        return mcp_app(environ, start_response)
    response: Iterable[bytes] = django_application(environ, start_response)
    return response


if __name__ == "__main__":
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
