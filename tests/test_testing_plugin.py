"""The pytest plugin ``mcp_sync.testing``: a user's tests, run by pytest's own ``pytester`` against real servers.

Each test writes a user's test file into a temporary directory and runs pytest
on it (in this process, so coverage sees the plugin; or in a subprocess where
what is loaded at start-up is the point): an MCPServer in memory,
``examples/echo_server.py`` over stdio as a real subprocess, and HTTP on a
free port of 127.0.0.1, in both eras. After every run, no ``mcp-sync`` thread,
child process or listening port is left.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import children

import mcp_sync
from mcp_sync.testing import Connections

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = ROOT / "examples" / "echo_server.py"
PLUGIN = ("-p", "mcp_sync.testing")
ERAS = ("2025-11-25", "2026-07-28")

USER_SERVER = """
import sys
import pytest
from mcp_sync import MCPServer

server = MCPServer("calc", "1.0")

@server.tool
def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b

ECHO = [sys.executable, {echo!r}]
"""


@pytest.fixture(scope="module", autouse=True)
def modules_loaded_once() -> None:
    """Load, in this process, every module a connection of each kind loads, before the first run in process.

    ``pytester`` drops after each run the modules imported during it; ``mcp_sync`` keeps the names it resolved
    lazily (its ``MCPServer``), so a module imported again in a later run would hold a second ``MCPServer`` class.
    A user's run, in a process of its own, has no such second import.
    """
    server = mcp_sync.MCPServer("warm-up")
    connections = Connections()
    for client in (connections(server), connections.http(server), connections([sys.executable, str(ECHO_SERVER)])):
        client.list_tools()
    connections.close()


def user_tests(body: str) -> str:
    """A user's test module: the server above, then ``body``."""
    return textwrap.dedent(USER_SERVER).format(echo=str(ECHO_SERVER)) + textwrap.dedent(body)


def mcp_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("mcp-sync") and thread.is_alive()]


def assert_nothing_left(threads_before: set[threading.Thread], children_before: set[int]) -> None:
    """No ``mcp-sync`` thread and no child process started since, once the run has ended (threads get 2 s to end)."""
    deadline = time.monotonic() + 2.0
    while set(mcp_threads()) - threads_before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [thread.name for thread in set(mcp_threads()) - threads_before] == []
    assert children() - children_before == set()


def test_each_fixture_reaches_a_real_server_in_both_eras(pytester: pytest.Pytester) -> None:
    """In memory, over stdio (the echo example as a subprocess) and over HTTP, each era picked by protocol_version."""
    pytester.makepyfile(
        user_tests(
            """
            @pytest.fixture(params=["2025-11-25", "2026-07-28"])
            def version(request):
                return request.param

            def test_in_memory(mcp_connect, version):
                client = mcp_connect(server, protocol_version=version)
                assert client.tools.add(a=2, b=3).text == "5"
                assert client.protocol_version == version

            def test_stdio(mcp_connect, version):
                client = mcp_connect(ECHO, protocol_version=version)
                assert client.server_info.name == "echo-server"
                assert client.tools.echo(text="hi").text == "hi"
                assert client.protocol_version == version

            def test_http(mcp_http, version):
                client = mcp_http(server, protocol_version=version)
                assert client.tools.add(a=2, b=3).text == "5"
                assert client.protocol_version == version

            def test_served_app_and_a_url(mcp_serve_http, mcp_connect, version):
                running = mcp_serve_http(server, stateless=True)  # an option of the app
                assert running.app.stateless and running.url.startswith("http://127.0.0.1:")
                client = mcp_connect(running.url, protocol_version=version)
                assert client.tools.add(a=2, b=3).text == "5"
                assert client.protocol_version == version
            """
        )
    )
    threads, processes = set(mcp_threads()), children()
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(passed=8)
    assert_nothing_left(threads, processes)


def test_a_failing_test_still_closes_every_client_and_server(pytester: pytest.Pytester) -> None:
    """A user's assertion fails (or the test raises) with clients of every kind open: all closed, servers stopped."""
    pytester.makepyfile(
        user_tests(
            """
            from pathlib import Path

            def test_fails_with_all_open(mcp_connect, mcp_http, mcp_serve_http):
                clients = [mcp_connect(server), mcp_connect(ECHO), mcp_http(server)]
                running = mcp_serve_http(server)
                clients.append(mcp_connect(running.url))
                Path("urls.txt").write_text(running.url + "\\n" + clients[2].server_info.name)
                assert all(client.initialized for client in clients)
                assert clients[1].tools.echo(text="hi").text == "bye"

            def test_raises_with_a_stdio_server_open(mcp_connect):
                mcp_connect(ECHO).tools.echo(text="hi")
                raise RuntimeError("the user's code broke")
            """
        )
    )
    threads, processes = set(mcp_threads()), children()
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*AssertionError*", "*RuntimeError: the user's code broke*"])
    assert_nothing_left(threads, processes)
    url, name = (pytester.path / "urls.txt").read_text().splitlines()
    assert name == "calc"
    served = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/mcp", url)
    assert served is not None
    with pytest.raises(ConnectionRefusedError):  # the HTTP server's port is closed
        socket.create_connection(("127.0.0.1", int(served.group(1))), timeout=5).close()


DEFAULT_REVISION_TEST = """
def test_revision(mcp_connect, mcp_http):
    assert mcp_connect(server).protocol_version == {expected!r}
    assert mcp_http(server).protocol_version == {expected!r}
    assert mcp_connect(server, protocol_version="2024-11-05").protocol_version == "2024-11-05"
"""


@pytest.mark.parametrize(
    ("ini", "arguments", "expected"),
    [
        (None, (), "2026-07-28"),
        ("2025-03-26", (), "2025-03-26"),
        (None, ("--mcp-protocol-version", "2025-06-18"), "2025-06-18"),
        ("2025-03-26", ("--mcp-protocol-version", "2025-06-18"), "2025-06-18"),
    ],
    ids=["the-client-default", "ini", "command-line", "command-line-over-ini"],
)
def test_a_suite_wide_default_revision_and_a_test_s_own(
    pytester: pytest.Pytester, ini: str | None, arguments: tuple[str, ...], expected: str
) -> None:
    """``--mcp-protocol-version`` or the ini's ``mcp_protocol_version`` sets the fixtures' default; a test's wins."""
    if ini is not None:
        pytester.makeini(f"[pytest]\nmcp_protocol_version = {ini}\n")
    pytester.makepyfile(user_tests(DEFAULT_REVISION_TEST.format(expected=expected)))
    threads, processes = set(mcp_threads()), children()
    pytester.runpytest_inprocess(*PLUGIN, *arguments).assert_outcomes(passed=1)
    assert_nothing_left(threads, processes)


def test_the_fixtures_never_wait_for_a_person_unless_the_test_gives_a_provider(pytester: pytest.Pytester) -> None:
    """A server's question gets no elicitation provider by default (nobody at a terminal to ask); one given is used."""
    pytester.makepyfile(
        user_tests(
            """
            from mcp_sync import Context
            from mcp_sync.types import ElicitResult

            @server.tool
            def ask(ctx: Context) -> str:
                '''Asks a question when the client can answer.'''
                if ctx.client_capabilities.elicitation is None:
                    return "nobody to ask"
                return ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}).data["name"]

            def test_nobody_is_asked(mcp_connect):
                assert mcp_connect(server).tools.ask().text == "nobody to ask"

            def test_a_provider_answers(mcp_connect):
                answer = lambda params: ElicitResult(action="accept", content={"name": "Ada"})
                assert mcp_connect(server, elicitation_provider=answer).tools.ask().text == "Ada"
            """
        )
    )
    pytester.runpytest_inprocess(*PLUGIN).assert_outcomes(passed=2)


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    """Beyond ``import pytest, mcp_sync``, loading the plugin adds only itself: no client, server or pydantic."""
    code = (
        "import sys, pytest, mcp_sync\n"
        "before = set(sys.modules)\n"
        "import mcp_sync.testing\n"
        "print(sorted(set(sys.modules) - before))\n"
        "heavy = ('pydantic', 'requests', 'mcp_sync.client', 'mcp_sync.server', 'mcp_sync.transports')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["['mcp_sync.testing']", "[]"]


def entry_points_of_setup_cfg() -> str:
    """The ``[options.entry_points]`` of setup.cfg, in the ``entry_points.txt`` form that installing writes."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    groups = config["options.entry_points"]
    return "".join(f"[{group}]\n{textwrap.dedent(groups[group]).strip()}\n\n" for group in groups)


def test_setup_cfg_s_entry_point_loads_the_plugin_once_however_it_is_asked_for(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed with setup.cfg's entry point, pytest finds the fixtures with no ``-p`` and no import; naming the
    plugin again (``-p mcp_sync.testing``, ``pytest_plugins``) is no double registration; ``-p no:`` turns it off.

    The distribution's metadata is written as installing writes it (its ``entry_points.txt`` from setup.cfg) into
    a directory on the ``PYTHONPATH`` of a fresh pytest, where :mod:`importlib.metadata` finds it.
    """
    assert "pytest11]\nmcp_sync.testing = mcp_sync.testing\n" in entry_points_of_setup_cfg()
    installed = tmp_path / "site"
    metadata = installed / "mcp_sync_plugin_probe-0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp-sync-plugin-probe\nVersion: 0\n")
    (metadata / "entry_points.txt").write_text(entry_points_of_setup_cfg())
    pytester.makepyfile(
        user_tests(
            """
            def test_fixtures_are_there(mcp_connect, request):
                assert mcp_connect(server).tools.add(a=1, b=2).text == "3"
                plugins = request.config.pluginmanager.list_name_plugin()
                assert [name for name, plugin in plugins if name.startswith("mcp_sync")] == ["mcp_sync.testing"]
            """
        )
    )
    path = os.pathsep.join([str(installed), str(ROOT), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    pytester.makeconftest('pytest_plugins = ["mcp_sync.testing"]\n')
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)
    (pytester.path / "conftest.py").unlink()
    off = pytester.runpytest_subprocess("-p", "no:mcp_sync.testing")
    off.assert_outcomes(errors=1)
    off.stdout.fnmatch_lines(["*fixture 'mcp_connect' not found*"])


def test_the_testing_guide_s_example_runs_as_shown(pytester: pytest.Pytester) -> None:
    """The testing guide's module (examples/test_calc_server.py), beside a copy of ``examples/echo_server.py``,
    passes as it is."""
    (pytester.path / "examples").mkdir()
    shutil.copy(ECHO_SERVER, pytester.path / "examples" / "echo_server.py")
    pytester.makepyfile(test_calc=(ROOT / "examples" / "test_calc_server.py").read_text(encoding="utf-8"))
    threads, processes = set(mcp_threads()), children()
    result = pytester.runpytest_inprocess(*PLUGIN, "-v")
    result.assert_outcomes(passed=5)
    assert_nothing_left(threads, processes)
