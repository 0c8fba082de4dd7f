"""RFC 9728 metadata of an MCP app mounted under a path prefix of a real Django project.

A small Django project (settings in code, its own view and URLconf) is
written to ``tmp_path``; its WSGI callable sends ``/tools/mcp`` and below to a
``StreamableHTTPApp`` with a token verifier that refuses every token (the
prefix moved to ``SCRIPT_NAME``, as ``examples/django_app.py`` mounts it) and
the rest to Django. It runs under waitress in a subprocess on a port the OS
picks; the server is ready when it logs the URL it serves on.

An unauthenticated POST to the endpoint gets a 401 whose challenge names a
metadata URL that is reachable and whose document describes the endpoint's
full URL, exactly as the client reached it.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).parent.parent.parent
AS = "https://as.example"
MOUNT = "/tools/mcp"
START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0
TIMEOUT = 5.0

pytestmark = pytest.mark.timeout(30)

SITE = textwrap.dedent(
    f'''
    """A Django project with an MCP endpoint under {MOUNT}."""

    from django.conf import settings
    from django.core.wsgi import get_wsgi_application
    from django.http import HttpResponse
    from django.urls import path

    from mcp_sync import MCPServer
    from mcp_sync.server import StreamableHTTPApp

    MOUNT = {MOUNT!r}
    WELL_KNOWN = "/.well-known/oauth-protected-resource" + MOUNT

    settings.configure(
        DEBUG=False,
        SECRET_KEY="a-test-key",
        ALLOWED_HOSTS=["127.0.0.1"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[],
        MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
        DATABASES={{}},
    )


    def index(request):
        return HttpResponse("the django site")


    urlpatterns = [path("", index)]

    django_application = get_wsgi_application()

    server = MCPServer("django-metadata", "1.0")


    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        return text


    def refuse_every_token(token):
        return None


    mcp_app = StreamableHTTPApp(
        server,
        path="/",
        token_verifier=refuse_every_token,
        resource_metadata={{"authorization_servers": [{AS!r}]}},
    )


    def application(environ, start_response):
        path_info = environ.get("PATH_INFO", "")
        if path_info == MOUNT or path_info.startswith(MOUNT + "/"):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + MOUNT
            environ["PATH_INFO"] = path_info[len(MOUNT):]
            return mcp_app(environ, start_response)
        if path_info == WELL_KNOWN:  # RFC 9728's own URL for the resource, routed to the app unchanged
            return mcp_app(environ, start_response)
        return django_application(environ, start_response)
    '''
)


class Site:
    """The project under waitress, its output collected by a thread (the pipe never fills)."""

    def __init__(self, tmp: Path) -> None:
        (tmp / "django_site.py").write_text(SITE)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "waitress", "--listen=127.0.0.1:0", "--threads=4", "django_site:application"],
            cwd=tmp,
            env={**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._drain, daemon=True).start()
        self.base = self._wait_until_serving()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put("")  # end of output: the server exited

    def _wait_until_serving(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:
                break
            served = re.search(r"Serving on (http://127\.0\.0\.1:\d+)", line)
            if served:
                return served.group(1)
        self.close()
        pytest.fail("the Django site did not start:\n" + "".join(self.output))

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    pytest.importorskip("django")
    pytest.importorskip("waitress")
    hosted = Site(tmp_path)
    try:
        yield hosted
    finally:
        hosted.close()


def challenge_params(header: str) -> dict[str, str]:
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def test_metadata_of_an_app_under_a_django_prefix(site: Site) -> None:
    endpoint = site.base + MOUNT
    refused = requests.post(
        endpoint,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=TIMEOUT,
    )
    assert refused.status_code == 401, refused.text
    named = challenge_params(refused.headers["WWW-Authenticate"])["resource_metadata"]
    assert named == endpoint + "/.well-known/oauth-protected-resource"

    fetched = requests.get(named, timeout=TIMEOUT)
    assert fetched.status_code == 200, fetched.text
    assert fetched.headers["Content-Type"].startswith("application/json")
    document = fetched.json()
    assert document["resource"] == endpoint  # http://127.0.0.1:PORT/tools/mcp, as the client reached it
    assert document["authorization_servers"] == [AS]

    # A wrong token is refused alike, naming the same metadata URL.
    wrong = requests.post(endpoint, json={}, headers={"Authorization": "Bearer nope"}, timeout=TIMEOUT)
    assert wrong.status_code == 401
    assert challenge_params(wrong.headers["WWW-Authenticate"])["resource_metadata"] == named

    # RFC 9728's own well-known URL for the resource (routed to the app by the project) says the same.
    rfc = requests.get(site.base + "/.well-known/oauth-protected-resource" + MOUNT, timeout=TIMEOUT)
    assert rfc.status_code == 200, rfc.text
    assert rfc.json() == document

    # Django keeps the rest of the site.
    assert requests.get(site.base + "/", timeout=TIMEOUT).text == "the django site"
    assert requests.get(site.base + "/elsewhere", timeout=TIMEOUT).status_code == 404


@pytest.mark.parametrize(
    ("path", "mounted_at", "resource"),
    [
        ("/", "/.well-known/oauth-protected-resource/tools/mcp", "http://127.0.0.1:8000/tools/mcp"),
        ("/mcp", "/.well-known/oauth-protected-resource/api/mcp", "http://127.0.0.1:8000/api/mcp"),
    ],
)
def test_a_host_that_mounts_the_well_known_url_itself_gets_the_resource_without_a_slash(
    path: str, mounted_at: str, resource: str
) -> None:
    """The host strips the whole well-known path (``SCRIPT_NAME``), leaving ``PATH_INFO`` empty."""
    from mcp_sync import MCPServer
    from mcp_sync.server import StreamableHTTPApp

    app = StreamableHTTPApp(
        MCPServer("mounted"),
        path=path,
        token_verifier=lambda token: None,
        resource_metadata={"authorization_servers": ["https://as.example"]},
    )
    environ = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": mounted_at,
        "PATH_INFO": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
    }
    statuses: list[str] = []
    try:
        body = b"".join(app(environ, lambda status, headers, *rest: statuses.append(status)))  # type: ignore[arg-type]
    finally:
        app.close()
    assert statuses == ["200 OK"]
    assert json.loads(body)["resource"] == resource
