"""A single-file Django project that shows MCP Apps: ``AppHost`` mounted at ``/apps`` in front of Django.

As ``apps_flask_host``: the page origin ``http://127.0.0.1:PORT``, the sandbox
origin ``http://localhost:PORT``, ``/counter`` shows
``examples/apps_server.py``'s counter and redirects to the view's page; ``/``
is Django's own view. Served by gunicorn (``apps_django_host:application``).
"""

from __future__ import annotations

import os

from apps_server import server
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from mcp_sync import connect
from mcp_sync.apps import AppHost

PORT = os.environ["MOUNTED_PORT"]
settings.configure(
    DEBUG=False,
    SECRET_KEY="a-test-key",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[],
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    DATABASES={},
)

apps = AppHost(f"http://127.0.0.1:{PORT}", f"http://localhost:{PORT}", prefix="/apps")
client = connect(server, host_apps=True, timeout=30)


def index(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<h1>Django's own page</h1>")


def counter(request: HttpRequest) -> HttpResponse:
    view = apps.show(client, "show_counter", {"from": "django"})
    view.bridge.deliver_result(client.call_tool("show_counter", {"from": "django"}))
    return HttpResponseRedirect(view.url)


urlpatterns = [path("", index), path("counter", counter)]
application = DispatcherMiddleware(get_wsgi_application(), {"/apps": apps})
