"""AppHost mounted in a Flask and in a Django application, served for real, beside the framework's own routes.

Each app (``tests/servers/apps_flask_host.py``, ``apps_django_host.py``) mounts the host at ``/apps`` with
Werkzeug's dispatcher, as the README shows, on one port reached by two host
names: ``127.0.0.1`` for the page, ``localhost`` for the sandbox. Flask runs
under our embedded server, Django under gunicorn, each in its own process
group. Over real HTTP: the framework's page and the view's page both answer,
the view's URLs carry the prefix, and the host's checks hold under it (the
token, each origin's own paths, the ``Host`` header, the POST's ``Origin``).
In headless Chromium, the Flask-hosted page shows the counter, whose +1
reaches the server.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import free_port

requests = pytest.importorskip("requests")
pytest.importorskip("flask")
pytest.importorskip("django")

ROOT = Path(__file__).resolve().parents[2]
MOUNTED = ROOT / "tests" / "servers"
WAIT = 30.0
HTTP_TIMEOUT = 10.0

pytestmark = pytest.mark.timeout(120)


def gunicorn(target: str) -> list[str]:
    major, minor = (int(part) for part in importlib.metadata.version("gunicorn").split(".")[:2])
    quiet = ["--no-control-socket"] if (major, minor) >= (25, 1) else []
    return [sys.executable, "-m", "gunicorn", *quiet, "-k", "gthread", "--threads", "8", "-w", "1", target]


OWN_PAGE = {"flask": "Flask's own page", "django": "Django's own page"}


def command(name: str, port: int) -> list[str]:
    """Flask under our embedded server (the module's main), Django under gunicorn."""
    if name == "flask":
        return [sys.executable, str(MOUNTED / "apps_flask_host.py")]
    return [*gunicorn("apps_django_host:application"), "-b", f"127.0.0.1:{port}"]


class Served:
    """A framework's app on a free port of 127.0.0.1, in its own process group (stopped by SIGTERM, then killed)."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.port = free_port()
        self.page = f"http://127.0.0.1:{self.port}"
        self.sandbox = f"http://localhost:{self.port}"
        self.log = tmp / f"{name}.log"
        path = os.pathsep.join([str(ROOT), str(ROOT / "examples"), str(MOUNTED)])
        with open(self.log, "wb") as sink:
            self.process = subprocess.Popen(
                command(name, self.port),
                cwd=MOUNTED,
                env={**os.environ, "PYTHONPATH": path, "MOUNTED_PORT": str(self.port)},
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + WAIT
        while self.process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
                return
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"{name} did not start listening:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(15)


@pytest.fixture(scope="module", params=sorted(OWN_PAGE))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Served]]:
    app = Served(request.param, tmp_path_factory.mktemp(request.param))
    try:
        yield request.param, app
    finally:
        app.stop()


def get(url: str, host: str | None = None) -> requests.Response:
    headers = {"Host": host} if host is not None else {}
    return requests.get(url, headers=headers, timeout=HTTP_TIMEOUT, allow_redirects=False)


def test_the_host_answers_under_its_prefix_beside_the_framework(served: tuple[str, Served]) -> None:
    name, app = served
    own = get(app.page + "/")
    assert own.status_code == 200 and OWN_PAGE[name] in own.text
    shown = get(app.page + "/counter")
    assert shown.status_code == 302, shown.text
    view_url = shown.headers["Location"]
    parts = urlsplit(view_url)
    assert f"{parts.scheme}://{parts.netloc}" == app.page and parts.path.startswith("/apps/view/")
    ident, token = parts.path.rsplit("/", 1)[1], parse_qs(parts.query)["token"][0]

    page = get(view_url)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert f"frame-src {app.sandbox};" in page.headers["Content-Security-Policy"]
    assert '<script src="/apps/host.js">' in page.text
    proxy_url = page.text.split('"proxy": "')[1].split('"')[0]
    assert proxy_url.startswith(f"{app.sandbox}/apps/sandbox/{ident}?token=")
    assert get(app.page + "/apps/host.js").status_code == 200
    proxy = get(proxy_url)
    assert proxy.status_code == 200 and f"frame-ancestors {app.page}" in proxy.headers["Content-Security-Policy"]
    sandbox_token = parse_qs(urlsplit(proxy_url).query)["token"][0]
    served_app = get(f"{app.sandbox}/apps/sandbox/{ident}/app?token={sandbox_token}")
    assert served_app.status_code == 200 and "connect-src 'none'" in served_app.headers["Content-Security-Policy"]
    assert "+1" in served_app.text

    # The checks, under the prefix: the token, each origin's own paths, the Host header, the POST's Origin.
    assert get(f"{app.page}/apps/view/{ident}?token=wrong").status_code == 404
    assert get(f"{app.page}/apps/view/{ident}").status_code == 404
    assert get(f"{app.sandbox}/apps/view/{ident}?token={token}").status_code == 404
    assert get(f"{app.page}/apps/sandbox/{ident}?token={sandbox_token}").status_code == 404
    assert get(view_url, host=f"rebound.example:{app.port}").status_code == 421  # the host's own refusal
    send = f"{app.page}/apps/view/{ident}/send?token={token}"
    ping = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    for origin in (None, app.sandbox, "http://evil.example"):
        headers = {"Origin": origin} if origin is not None else {}
        assert requests.post(send, json=ping, headers=headers, timeout=HTTP_TIMEOUT).status_code == 403
    assert requests.post(send, json=ping, headers={"Origin": app.page}, timeout=HTTP_TIMEOUT).status_code == 204
    # The framework still answers its own 404 beside the mount.
    assert get(app.page + "/nowhere").status_code == 404


@pytest.mark.parametrize("served", ["flask"], indirect=True)  # one is enough: the page is the host's
def test_the_flask_mounted_page_shows_the_counter_in_chromium(served: tuple[str, Served]) -> None:
    _, app = served
    from browsing import WAIT as BROWSER_WAIT
    from browsing import browser, until

    view_url = get(app.page + "/counter").headers["Location"]
    with browser() as chromium:
        page = chromium.new_page()
        page.goto(view_url, timeout=BROWSER_WAIT * 1000)

        def app_frame() -> object:
            return next((frame for frame in page.frames if "/app?token=" in frame.url), None)

        frame = until(app_frame, "the app's frame", page)
        until(lambda: frame.inner_text("#count") == "0", "the count delivered", page)
        assert '"from":"flask"' in frame.inner_text("#input").replace(" ", "")
        frame.click("#increment")
        until(lambda: frame.inner_text("#count") == "1", "the count after +1", page)
