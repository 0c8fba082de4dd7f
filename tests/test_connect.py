"""``mcp_sync.connect`` with each kind of target: an MCPServer in memory, a command over stdio, a URL over HTTP."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import children

import mcp_sync
from mcp_sync.client.core import MCPClient
from mcp_sync.connect import connect
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.runtime.dispatcher import DEFAULT_TIMEOUT
from mcp_sync.server import start_http
from mcp_sync.server.core import MCPServer
from mcp_sync.types import LoggingMessageNotificationParams

ROOT = Path(__file__).parent.parent
ECHO_SERVER = [sys.executable, str(ROOT / "examples" / "echo_server.py")]

WHERE_SERVER = """
import os, sys
from mcp_sync import MCPServer

server = MCPServer("where", "1.0")
server.register_tool("where", lambda args, ctx: os.getcwd() + "|" + os.environ.get("GREETING", "-"))
print("where-server starting", file=sys.stderr, flush=True)
server.serve_stdio()
"""


def demo_server() -> MCPServer:
    server = MCPServer("demo", "1.0")
    server.register_tool("hello", lambda args, ctx: "hi " + args.get("name", "there"))

    def shout(args: dict[str, str], ctx: mcp_sync.Context) -> str:
        ctx.log("warning", {"shouted": args["text"]})
        return args["text"].upper()

    server.register_tool("shout", shout)
    server.register_tool("whoami", lambda args, ctx: ctx.client_info.name if ctx.client_info else "nobody")
    return server


def wait_for(condition: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ------------------------------------------------------------------ in memory


def test_an_mcpserver_in_memory_and_closing_ends_its_session() -> None:
    server = demo_server()
    try:
        with mcp_sync.connect(server) as client:
            assert client.initialized and client.server_info.name == "demo"
            assert client.tools.hello(name="Ada").text == "hi Ada"
            (session,) = server.sessions
            assert client.tools.whoami().text == "mcp-sync"
        assert session.closed and server.sessions == []
        assert not client.initialized
    finally:
        server.stop()


def test_the_server_stopping_closes_the_client() -> None:
    server = demo_server()
    client = mcp_sync.connect(server)
    try:
        server.stop()
        assert wait_for(lambda: not client.initialized)
        with pytest.raises(MCPError) as caught:
            client.call_tool("hello")
        assert caught.value.code in (MCP_CODES.TRANSPORT_CLOSED, MCP_CODES.NOT_INITIALIZED)
    finally:
        client.close()


def test_a_failed_handshake_leaves_no_session_behind() -> None:
    server = demo_server()
    try:
        with pytest.raises(MCPError) as caught:
            mcp_sync.connect(server, accepted_versions=("1999-01-01",))
        assert caught.value.code == MCP_CODES.PROTOCOL_VERSION_MISMATCH
        assert server.sessions == []
    finally:
        server.stop()


def test_client_options_are_passed_on() -> None:
    server = demo_server()
    logs: list[LoggingMessageNotificationParams] = []
    try:
        with mcp_sync.connect(server, name="notebook", timeout=7.5, log_handler=logs.append) as client:
            assert client.timeout == 7.5 and client.info.name == "notebook"
            assert client.tools.whoami().text == "notebook"
            client.set_log_level("info")
            assert client.tools.shout(text="quiet").text == "QUIET"
            assert wait_for(lambda: len(logs) == 1)
            assert logs[0].data == {"shouted": "quiet"}
        with mcp_sync.connect(server) as client:
            assert client.timeout == DEFAULT_TIMEOUT
    finally:
        server.stop()


# ---------------------------------------------------------------------- stdio


def test_a_command_line_string_with_env_cwd_and_stderr(tmp_path: Path) -> None:
    script = tmp_path / "where_server.py"
    script.write_text(WHERE_SERVER)
    workdir = tmp_path / "work"
    workdir.mkdir()
    lines: list[str] = []
    command = shlex.join([sys.executable, str(script)])
    env = {"GREETING": "hello", "PYTHONPATH": str(ROOT)}
    with mcp_sync.connect(command, env=env, cwd=workdir, stderr=lines.append, timeout=10) as client:
        assert client.call_tool("where").text == f"{workdir}|hello"
    assert "where-server starting\n" in lines


def test_a_command_as_a_list_and_inherited_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREETING", "inherited")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    script = tmp_path / "where_server.py"
    script.write_text(WHERE_SERVER)
    with mcp_sync.connect([sys.executable, str(script)], inherit_env=True, stderr=lambda line: None) as client:
        assert client.call_tool("where").text.endswith("|inherited")
    with mcp_sync.connect(ECHO_SERVER) as client:
        assert client.tools.echo(text="plain").text == "plain"


def test_mcpclient_stdio_still_works() -> None:
    with MCPClient.stdio(ECHO_SERVER[0], ECHO_SERVER[1:], timeout=10) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"


def test_a_command_that_fails_names_itself() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('no luck\\n'); sys.exit(3)"]
    with pytest.raises(MCPError) as caught:
        mcp_sync.connect(command, stderr=lambda line: None, connect_timeout=10)
    assert "could not connect to server" in caught.value.message and "no luck" in caught.value.message


STARTED_BEFORE_THE_CLIENT = """
import subprocess, sys
import mcp_sync

seen = []


class Recording(subprocess.Popen):
    def __init__(self, *args, **kwargs):
        seen.append("pydantic" in sys.modules)  # the first thing the client loads
        super().__init__(*args, **kwargs)


subprocess.Popen = Recording
with mcp_sync.connect(sys.argv[1:]) as client:
    print(client.tools.echo(text="early").text, seen)
"""


def test_connect_starts_the_server_before_it_loads_the_client() -> None:
    # The server's start-up and the client's import then take their time at once (a one-off call's most).
    done = subprocess.run(
        [sys.executable, "-c", STARTED_BEFORE_THE_CLIENT, *ECHO_SERVER],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["early", "[False]"]  # one process started, before pydantic and the client loaded


def test_mcpclient_stdio_starts_the_server_before_it_makes_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first client of a process builds its models: the server's start-up runs meanwhile.
    order = []

    class Recording(subprocess.Popen[bytes]):
        def __init__(self, *args: object, **kwargs: object) -> None:
            order.append("server")
            super().__init__(*args, **kwargs)  # type: ignore[call-overload]

    class Client(MCPClient):
        def __init__(self, **options: object) -> None:
            order.append("client")
            super().__init__(**options)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess, "Popen", Recording)
    with Client.stdio(ECHO_SERVER, timeout=10) as client:
        assert client.tools.echo(text="early").text == "early"
    assert order == ["server", "client"]


@pytest.mark.parametrize("open_client", [mcp_sync.connect, MCPClient.stdio], ids=["connect", "MCPClient.stdio"])
def test_bad_client_options_leave_no_server_process(open_client: object) -> None:
    before = children()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    with pytest.raises(TypeError, match="no_such_option"):
        open_client(sleeper, no_such_option=1)  # type: ignore[operator]
    assert children() <= before  # the server started for the client was ended and reaped


def test_a_command_that_cannot_start_names_itself() -> None:
    with pytest.raises(MCPError) as caught:
        mcp_sync.connect(["definitely-not-a-real-mcp-server", "--flag"])
    assert caught.value.code == MCP_CODES.TRANSPORT_ERROR
    assert "could not start server `definitely-not-a-real-mcp-server --flag`" in caught.value.message
    with pytest.raises(TypeError, match="no_such_option"):  # (nothing to end: nothing started)
        mcp_sync.connect(["definitely-not-a-real-mcp-server"], no_such_option=1)
    with pytest.raises(MCPError, match="could not start server `definitely-not-a-real-mcp-server`"):
        MCPClient.stdio("definitely-not-a-real-mcp-server")
    with pytest.raises(TypeError, match="no_such_option"):
        MCPClient.stdio("definitely-not-a-real-mcp-server", no_such_option=1)


# ----------------------------------------------------------------------- HTTP


def test_a_url_over_streamable_http_and_over_sse() -> None:
    server = demo_server()
    with start_http(server) as running:
        with mcp_sync.connect(running.url, headers={"X-Trace": "1"}, timeout=10) as client:
            assert client.tools.hello(name="web").text == "hi web"
        sse_url = running.url.removesuffix("/mcp") + "/sse"
        with mcp_sync.connect(sse_url, http_transport="sse") as client:
            assert client.tools.hello().text == "hi there"


def test_a_url_where_nothing_listens() -> None:
    with pytest.raises(MCPError) as caught:
        mcp_sync.connect("http://127.0.0.1:9/mcp", connect_timeout=5)
    assert "127.0.0.1:9" in caught.value.message


# --------------------------------------------------------------- bad requests


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        ("python server.py", {"headers": {"A": "1"}}, "headers cannot be used with a server started as a command"),
        (["python", "server.py"], {"auth": object(), "session": object()}, "auth, session cannot be used"),
        ("http://127.0.0.1:9/mcp", {"env": {"A": "1"}, "cwd": "/"}, "env, cwd cannot be used with an HTTP server"),
        ("HTTPS://example.invalid/mcp", {"inherit_env": True}, "inherit_env cannot be used with an HTTP server"),
        (None, {"stderr": print}, "stderr cannot be used with an MCPServer object"),
        (None, {"http_transport": "sse"}, "http_transport cannot be used with an MCPServer object"),
    ],
)
def test_options_that_do_not_fit_the_target(target: object, options: dict[str, object], message: str) -> None:
    server = demo_server()
    with pytest.raises(TypeError, match=message):
        mcp_sync.connect(target if target is not None else server, **options)  # type: ignore[arg-type]
    assert server.sessions == []


def test_a_target_of_another_kind() -> None:
    with pytest.raises(TypeError, match="takes a URL, a command line or an MCPServer, not int"):
        mcp_sync.connect(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the name


def test_mcp_sync_connect_is_the_function_whatever_was_imported_first() -> None:
    assert mcp_sync.connect is connect
    assert "connect" in mcp_sync.__all__ and "connect" in dir(mcp_sync)
    code = "import mcp_sync.connect, mcp_sync; from mcp_sync import connect; print(callable(mcp_sync.connect), connect)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, env=dict(os.environ)
    )
    assert done.stdout.startswith("True <function connect at ")


def test_the_example_client_script() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "client.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT.parent,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "connected to echo-server 1.0",
        "  echo(text: string)  Return the text unchanged.",
        "  add(a: integer | number, b: integer | number)  Add two numbers.",
        "echo -> hello",
        "add -> {'result': 5}",
    ]
