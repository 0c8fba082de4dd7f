"""The ``mcp-sync`` command, run as ``python -m mcp_sync`` against real servers, and in process for its error paths.

Servers: ``examples/echo_server.py``, a server script written by the tests
(tools, resources, a template, a prompt), the reference time server
(``mcp-server-time``, see ``tests/peers.py``), and servers served by
``mcp-sync run`` that our client and the official SDK's client talk to.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peers
import pytest
import requests

import mcp_sync
from mcp_sync.cli import CommandError, load_server, main, parse_arguments, parse_value
from mcp_sync.client import MCPClient
from mcp_sync.errors import MCPError
from mcp_sync.server import start_http
from mcp_sync.server.core import MCPServer
from mcp_sync.transports.http.streamable import StreamableHTTPClientTransport

ROOT = Path(__file__).parent.parent
ECHO_SERVER = str(ROOT / "examples" / "echo_server.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
TIMEOUT = 60.0

TARGET = '''
"""A server for the command's tests."""
import json
import sys
import time
from pathlib import Path

from mcp_sync import MCPServer
from mcp_sync.types import CallToolResult, ImageContent, PromptArgument, TextContent

server = MCPServer("cli-target", "2.0")
print("imported with print() going to stderr")
server.register_tool(
    "greet",
    lambda args, ctx: f"hello {args['name']} x{args.get('times', 1)}",
    description="Say hello.\\nA second line.",
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "times": {"type": "integer", "default": 1}},
        "required": ["name"],
    },
)
server.register_tool(
    "types",
    lambda args, ctx: json.dumps(args, sort_keys=True),
    input_schema={
        "type": "object",
        "properties": {
            "n": {"type": "number"}, "flag": {"type": "boolean"}, "tags": {"type": "array"},
            "opts": {"type": "object"}, "text": {"type": "string"}, "free": {},
        },
    },
)
server.register_tool(
    "a_tool_with_a_rather_long_name_for_the_table",
    lambda args, ctx: "long",
    description="Its description goes on the next line.",
    input_schema={"type": "object", "properties": {"first_argument": {"type": "string"}}},
)
server.register_tool(
    "stats",
    lambda args, ctx: CallToolResult(content=[TextContent(text="{}")], structured_content={"count": 3}),
)
server.register_tool(
    "picture",
    lambda args, ctx: CallToolResult(
        content=[TextContent(text="a picture:"), ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]
    ),
)
server.register_tool(
    "fail", lambda args, ctx: CallToolResult(content=[TextContent(text="it broke\\nbadly")], is_error=True)
)
server.register_tool("fail_silently", lambda args, ctx: CallToolResult(content=[], is_error=True))


def count(args, ctx):
    for step in (1, 2, 3):
        ctx.progress(step, 3, f"step {step}")
    return "counted"


def slow(args, ctx):
    Path(args["marker"]).write_text("started")
    ctx.cancelled.wait(30)
    return "late"


server.register_tool("count", count)
server.register_tool("slow", slow)
server.register_resource("notes://readme", lambda uri, ctx: "Read me first.", name="readme", mime_type="text/plain")
server.register_resource("notes://logo", lambda uri, ctx: b"\\x89PNG", name="logo")
server.register_resource_template("notes://{name}/text", lambda uri, params, ctx: f"note {params['name']}", name="note")
server.register_prompt(
    "welcome",
    lambda args, ctx: f"Welcome, {args['name']}{args.get('punctuation', '.')}",
    description="A welcome message.",
    arguments=[PromptArgument(name="name", required=True), PromptArgument(name="punctuation")],
)

if __name__ == "__main__":
    server.serve_stdio()
'''


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "cli_target.py"
    path.write_text(TARGET)
    return str(path)


@pytest.fixture(scope="module")
def target_server(target: str) -> Iterator[MCPServer]:
    """The target server, loaded (once) in this process."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "path", list(sys.path))
        yield load_server(target)


@pytest.fixture
def web(target_server: MCPServer) -> Iterator[str]:
    """The target server served over HTTP in this process: in-process tests start no process.

    Served anew for each test: closing the app ends the threads it keeps for
    2026-07-28 requests, which would otherwise wait for more past the test.
    """
    with start_http(target_server) as running:
        yield running.url


def cli_process(*args: str) -> subprocess.Popen[str]:
    """``python -m mcp_sync ARGS``, started: its output and errors in pipes, read as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_sync", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS``, to completion."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_sync", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env or ENV,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``main(ARGS)`` in this process: its exit code, stdout and stderr."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------- as a subprocess: echo server


def test_list_the_echo_server() -> None:
    done = cli("list", ECHO_SERVER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:5] == [
        "echo-server 1.0 (protocol 2026-07-28)",
        "",
        "Tools (2)",
        "  echo(text: string)                             Return the text unchanged.",
        "  add(a: integer | number, b: integer | number)  Add two numbers.",
    ]


def test_call_the_echo_server() -> None:
    added = cli("call", ECHO_SERVER, "add", "a=2", "b=3.5")
    assert (added.returncode, json.loads(added.stdout)) == (0, {"result": 5.5})
    missing = cli("call", ECHO_SERVER, "add", "a=1")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("mcp-sync: error: ") and len(missing.stderr.splitlines()) == 1
    assert "Traceback" not in missing.stderr


def test_call_the_echo_server_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    command = shlex.join([sys.executable, ECHO_SERVER])
    assert run_main(capsys, "call", command, "echo", "text=hi there") == (0, "hi there\n", "")


def test_list_as_json(capsys: pytest.CaptureFixture[str], web: str) -> None:
    code, out, _ = run_main(capsys, "list", web, "--json")
    listed = json.loads(out)
    assert code == 0 and listed["server"] == {"name": "cli-target", "version": "2.0", "protocolVersion": "2026-07-28"}
    assert [tool["name"] for tool in listed["tools"]][:2] == ["greet", "types"]
    assert [resource["uri"] for resource in listed["resources"]] == ["notes://readme", "notes://logo"]
    assert listed["resourceTemplates"][0]["uriTemplate"] == "notes://{name}/text"
    assert listed["prompts"][0]["name"] == "welcome"


def test_a_reader_that_goes_away_ends_the_command_quietly(web: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_sync", "list", web, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command prints anything
    assert process.wait(TIMEOUT) == 1
    assert process.stderr.read() == ""
    process.stderr.close()


def test_progress_goes_to_stderr(web: str) -> None:
    done = cli("call", web, "count")
    assert (done.returncode, done.stdout) == (0, "counted\n")
    assert "count: 100%" in done.stderr and "3/3" in done.stderr and "step 3" in done.stderr


def test_debug_shows_the_traceback_and_the_server_stderr(target: str) -> None:
    done = cli("call", target, "nope", "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "imported with print() going to stderr" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("mcp-sync: error: ")


def test_interrupting_a_call(target: str, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    process = cli_process("call", target, "slow", f"marker={marker}")
    try:
        deadline = time.monotonic() + TIMEOUT
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert (process.returncode, out, err) == (130, "", "mcp-sync: interrupted\n")


LINGERING = """
import os, sys, time
from pathlib import Path
from mcp_sync import MCPServer
server = MCPServer("lingering")
server.register_tool("echo", lambda args, ctx: args["text"])
server.register_resource("notes://readme", lambda uri, ctx: "Read me first.", name="readme", mime_type="text/plain")
server.register_prompt("hello", lambda args, ctx: "Hello")
Path(sys.argv[1]).write_text(str(os.getpid()))
server.serve_stdio()
time.sleep(60)  # past its input's end it lingers, until the client's SIGTERM
"""


@pytest.mark.parametrize("command", [["call", "echo", "text=hi"], ["read", "notes://readme"], ["prompt", "hello"]])
def test_the_answer_is_shown_before_the_server_is_ended(command: list[str], tmp_path: Path) -> None:
    """Ending a server takes a while (this one stays until it is sent SIGTERM, two seconds after its input ends):
    the answer is printed first, while the server still runs, and then the command waits for it to end."""
    script, pid = tmp_path / "lingering.py", tmp_path / "pid"
    script.write_text(LINGERING)
    target = shlex.join([sys.executable, str(script), str(pid)])
    process = cli_process(command[0], target, *command[1:])
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        os.kill(int(pid.read_text()), 0)  # (raises ProcessLookupError once the server has ended)
        _, err = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert first.strip() and (process.returncode, err) == (0, "")


# ------------------------------------------------------ mcp-sync run, as a server


def test_run_serves_a_file_to_our_client(target: str) -> None:
    with mcp_sync.connect(
        [sys.executable, "-m", "mcp_sync", "run", target], env=ENV, stderr=lambda line: None
    ) as client:
        assert client.server_info.name == "cli-target"
        assert client.tools.greet(name="run").text == "hello run x1"


def test_run_serves_a_module_object_to_our_client() -> None:
    command = [sys.executable, "-m", "mcp_sync", "run", "examples.echo_server:server"]
    with mcp_sync.connect(command, env=ENV, inherit_env=True, cwd=ROOT) as client:
        assert client.tools.add(a=1, b=1).structured_content == {"result": 2}


SDK_CLIENT = """
import json, sys, warnings
import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

warnings.simplefilter("ignore")
config = json.loads(sys.argv[1])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    server = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                init = dump(await session.initialize())
                tools = dump(await session.list_tools())
                greeting = dump(await session.call_tool("greet", {"name": "SDK", "times": 2}))
    print(json.dumps({"server": init["serverInfo"]["name"], "tools": [t["name"] for t in tools["tools"]],
                      "greeting": greeting["content"][0]["text"]}))


anyio.run(main)
"""


@pytest.mark.interop
def test_run_serves_a_file_to_the_official_sdk_client(target: str, tmp_path: Path) -> None:
    python = peers.peer_python()
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    config = {"command": sys.executable, "args": ["-m", "mcp_sync", "run", f"{target}:server"], "env": ENV}
    done = subprocess.run(
        [python, str(script), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=peers.peer_environment(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["server"] == "cli-target"
    assert report["tools"][:2] == ["greet", "types"]
    assert report["greeting"] == "hello SDK x2"


Serve = Callable[..., tuple["subprocess.Popen[str]", str]]


@pytest.fixture
def served_over_http(target: str) -> Iterator[Serve]:
    processes: list[subprocess.Popen[str]] = []

    def start(*options: str) -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_sync", "run", target, "--port", "0", *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=ROOT,
        )
        processes.append(process)
        assert process.stderr is not None
        lines = [process.stderr.readline(), process.stderr.readline()]
        assert lines[0] == "imported with print() going to stderr\n"
        assert lines[1].startswith("mcp-sync: serving cli-target on http://127.0.0.1:")
        return process, lines[1].split(" on ")[1].split()[0]

    yield start
    for process in processes:
        process.kill()
        process.wait()
        assert process.stderr is not None
        process.stderr.close()


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    return process.wait(TIMEOUT)


def test_run_over_streamable_http(served_over_http: Serve) -> None:
    process, url = served_over_http("--transport", "http")
    assert url.endswith("/mcp")
    with mcp_sync.connect(url, timeout=10) as client:
        assert client.tools.greet(name="http").text == "hello http x1"
    transport = StreamableHTTPClientTransport(url)
    with MCPClient(era="handshake", timeout=10) as client:
        client.connect(transport)
        assert client.tools.greet(name="http").text == "hello http x1"
        assert transport.session_id  # a handshake-era client gets a session by default
    assert stop(process) == 0


def test_run_stateless_http_and_sse(served_over_http: Serve) -> None:
    process, url = served_over_http("--transport", "http", "--stateless", "--host", "127.0.0.1")
    # The handshake era, where sessions exist: the 2026-07-28 revision has none with or without the flag.
    transport = StreamableHTTPClientTransport(url)
    with MCPClient(era="handshake", timeout=10) as client:
        client.connect(transport)
        assert client.protocol_version == "2025-11-25"  # the newest handshake revision
        assert client.call_tool("greet", {"name": "stateless"}).text == "hello stateless x1"
        assert transport.session_id is None
    assert stop(process) == 0
    process, url = served_over_http("--transport", "sse")
    assert url.endswith("/sse")
    with mcp_sync.connect(url, http_transport="sse", timeout=10) as client:
        assert client.call_tool("greet", {"name": "sse"}).text == "hello sse x1"
    assert stop(process) == 0


# --------------------------------------------------- third-party server: time


@pytest.fixture(scope="module")
def time_server() -> str:
    return shlex.join([peers.peer_python(), "-m", "mcp_server_time", "--local-timezone", "UTC"])


@pytest.mark.interop
def test_list_and_call_the_time_server(time_server: str) -> None:
    env = peers.peer_environment()
    listed = cli("list", time_server, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("mcp-time ")
    assert "  get_current_time(timezone: string)" in listed.stdout
    assert "  convert_time(source_timezone: string, time: string, target_timezone: string)" in listed.stdout
    called = cli("call", time_server, "get_current_time", "timezone=UTC", env=env)
    assert called.returncode == 0, called.stderr
    answer = json.loads(called.stdout)
    assert answer["timezone"] == "UTC" and "datetime" in answer


# ----------------------------------------------------------- in this process


def test_list_shows_every_section(capsys: pytest.CaptureFixture[str], web: str) -> None:
    code, out, _ = run_main(capsys, "list", web)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "cli-target 2.0 (protocol 2026-07-28)"
    assert "  greet(name: string, times: integer = 1)" in out and "Say hello." in out and "second line" not in out
    long_row = lines.index("  a_tool_with_a_rather_long_name_for_the_table(first_argument?: string)")
    assert lines[long_row + 1] == "      Its description goes on the next line."
    assert "  stats()" in lines
    assert "Resources (2)" in lines and "Resource templates (1)" in lines and "Prompts (1)" in lines
    assert any(line.startswith("  notes://readme") and line.endswith("readme (text/plain)") for line in lines)
    assert any(line.startswith("  notes://logo") and line.endswith("logo") for line in lines)
    assert any(line.startswith("  notes://{name}/text") and line.endswith("note") for line in lines)
    assert any(line.startswith("  welcome(name, punctuation?)") and "A welcome message." in line for line in lines)


def test_call_outputs(capsys: pytest.CaptureFixture[str], web: str) -> None:
    assert run_main(capsys, "call", web, "stats")[1] == '{\n  "count": 3\n}\n'
    assert run_main(capsys, "call", web, "picture")[1] == "a picture:\n[image image/png, 8 bytes]\n"
    code, out, _ = run_main(
        capsys, "call", web, "types", "n=1.5", "flag=yes", "tags=[1]", 'opts={"a": 1}', "text=42", "free=null"
    )
    assert (code, json.loads(out)) == (
        0,
        {"n": 1.5, "flag": True, "tags": [1], "opts": {"a": 1}, "text": "42", "free": None},
    )
    code, out, _ = run_main(capsys, "call", web, "greet", "--json", '{"name": "json", "times": 1}', "times=3")
    assert (code, out) == (0, "hello json x3\n")
    code, out, _ = run_main(capsys, "call", web, "greet", "--json", '{"name": "raw"}', "--raw")
    # The result as sent at 2026-07-28: the server names itself in every result, which says it is complete.
    assert (code, json.loads(out)) == (
        0,
        {
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "cli-target", "version": "2.0"}},
            "resultType": "complete",
            "content": [{"type": "text", "text": "hello raw x1"}],
        },
    )


def test_call_errors(capsys: pytest.CaptureFixture[str], web: str) -> None:
    assert run_main(capsys, "call", web, "fail") == (1, "", "mcp-sync: error: tool 'fail' failed: it broke\n")
    assert run_main(capsys, "call", web, "fail_silently")[2] == (
        "mcp-sync: error: tool 'fail_silently' failed: no reason given\n"
    )
    code, out, err = run_main(capsys, "call", web, "fail", "--raw")
    assert (code, json.loads(out)["isError"], err) == (1, True, "mcp-sync: error: tool 'fail' failed: it broke\n")
    assert run_main(capsys, "call", web, "greet", "--json", "{bad")[2].startswith(
        "mcp-sync: error: --json is not valid JSON: "
    )
    assert run_main(capsys, "call", web, "greet", "--json", "[1]")[2] == (
        "mcp-sync: error: --json must be a JSON object\n"
    )
    assert run_main(capsys, "call", web, "greet", "name")[2] == "mcp-sync: error: 'name' is not NAME=VALUE\n"
    assert run_main(capsys, "call", web, "greet", "name=x", "times=many")[2] == (
        "mcp-sync: error: argument times: 'many' is not integer\n"
    )
    # A tool the list does not show: its arguments are read without a schema, and the server answers.
    code, _, err = run_main(capsys, "call", web, "hidden", "x=1")
    assert code == 1 and "hidden" in err


def test_read_and_prompt(capsys: pytest.CaptureFixture[str], web: str) -> None:
    assert run_main(capsys, "read", web, "notes://readme") == (0, "Read me first.\n", "")
    assert run_main(capsys, "read", web, "notes://logo")[1] == "[blob notes://logo application/octet-stream, 4 bytes]\n"
    assert run_main(capsys, "read", web, "notes://shopping/text")[1] == "note shopping\n"
    raw = json.loads(run_main(capsys, "read", web, "notes://readme", "--raw")[1])
    assert raw["contents"] == [{"uri": "notes://readme", "mimeType": "text/plain", "text": "Read me first."}]
    assert run_main(capsys, "prompt", web, "welcome", "name=Ada", "punctuation=!")[1] == (
        "A welcome message.\n[user] Welcome, Ada!\n"
    )
    raw = json.loads(run_main(capsys, "prompt", web, "welcome", "name=Ada", "--raw")[1])
    assert raw["messages"] == [{"role": "user", "content": {"type": "text", "text": "Welcome, Ada."}}]
    code, _, err = run_main(capsys, "read", web, "notes://missing")
    assert code == 1 and err.startswith("mcp-sync: error: ") and "notes://missing" in err


MINIMAL = """
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "minimal", "version": "0"}}
    else:
        result = {"tools": [{"name": "only", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def test_list_shows_only_what_the_server_offers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "minimal.py"
    script.write_text(MINIMAL)
    code, out, _ = run_main(capsys, "list", shlex.join([sys.executable, str(script)]))
    assert (code, out) == (0, "minimal 0 (protocol 2025-11-25)\n\nTools (1)\n  only()\n")


def test_a_file_with_an_object_name_as_target(capsys: pytest.CaptureFixture[str], target: str) -> None:
    assert run_main(capsys, "call", f"{target}:server", "greet", "name=obj") == (0, "hello obj x1\n", "")


def test_a_url_target_with_headers(capsys: pytest.CaptureFixture[str]) -> None:
    server = MCPServer("web", "1.0")

    def whoami(args: dict[str, Any], ctx: Any) -> str:
        return "me"

    server.register_tool("whoami", whoami)
    with start_http(server) as running:
        code, out, err = run_main(capsys, "list", running.url, "-H", "X-Trace: 1", "--timeout", "10")
        assert (code, err) == (0, "") and "  whoami()" in out
        assert run_main(capsys, "call", running.url, "whoami") == (0, "me\n", "")
        assert run_main(capsys, "list", running.url, "-e", "A=1")[2] == (
            "mcp-sync: error: --env applies to servers started as a command, not to URLs\n"
        )


def test_target_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(capsys, "list", ECHO_SERVER, "-H", "A: 1")[2] == (
        "mcp-sync: error: --header applies to URLs, not to servers started as a command\n"
    )
    assert run_main(capsys, "list", ECHO_SERVER, "-H", "no colon")[2] == (
        "mcp-sync: error: 'no colon' is not NAME:VALUE\n"
    )
    assert run_main(capsys, "list", "  ")[2] == "mcp-sync: error: the server command is empty\n"
    assert run_main(capsys, "list", "python -c 'unterminated")[2] == (
        "mcp-sync: error: ValueError: No closing quotation\n"
    )
    dying = shlex.join([sys.executable, "-c", "import sys; sys.stderr.write('first\\nno luck\\n'); sys.exit(3)"])
    code, _, err = run_main(capsys, "list", dying)
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith("mcp-sync: error: could not connect to server `") and err.endswith("(server said: no luck)\n")
    assert "exited with code 3" in err


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    for wrong in ([], ["list", ECHO_SERVER, "stray"], ["call", ECHO_SERVER, "add", "a=1", "--bogus"]):
        with pytest.raises(SystemExit) as usage:
            main(wrong)
        assert usage.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0 and capsys.readouterr().out == f"mcp-sync {mcp_sync.__version__}\n"


def test_a_missing_tool_or_prompt_name_is_the_only_argument_named_as_required() -> None:
    for command, name in (("call", "TOOL"), ("prompt", "NAME")):
        done = cli(command, ECHO_SERVER)
        assert done.returncode == 2
        missing = f"mcp-sync {command}: error: the following arguments are required: {name}"
        assert done.stderr.splitlines()[-1] == missing
    no_arguments = cli("call", f"{shlex.quote(sys.executable)} {ROOT / 'examples' / 'library_server.py'}", "reindex")
    assert (no_arguments.returncode, json.loads(no_arguments.stdout)) == (0, {"result": 4})


def test_reading_a_book_the_library_does_not_have_says_so() -> None:
    library = [sys.executable, str(ROOT / "examples" / "library_server.py")]
    done = cli("read", shlex.join(library), "books://99")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "mcp-sync: error: no book with id 99\n"
    # The example raises NOT_FOUND: each era's resource-not-found reaches the client, not an internal error (-32603).
    for era, code in (("handshake", -32002), ("stateless", -32602)):
        with mcp_sync.connect(library, era=era) as client, pytest.raises(MCPError) as caught:
            client.read_resource("books://99")
        assert (caught.value.jsonrpc_code, str(caught.value)) == (code, f"[{caught.value.code}] no book with id 99")


# ------------------------------------------------------ run: finding the server


@pytest.fixture
def scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    files = {
        "cli_single.py": "from mcp_sync import MCPServer\napp = MCPServer('single')\nalias = app\nprint('loud')\n",
        "cli_none.py": "value = 1\n",
        "cli_several.py": "from mcp_sync import MCPServer\na = MCPServer('a')\nb = a\nc = MCPServer('c')\n",
        "cli_nested.py": "from mcp_sync import MCPServer\nclass Holder:\n    server = MCPServer('nested')\n",
        "cli_broken.py": "raise RuntimeError('cannot start\\nsecond line')\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_load_server_from_files_and_modules(scripts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load_server("cli_single.py").info.name == "single"
    assert capsys.readouterr() == ("", "loud\n")  # print() at import goes to stderr
    assert load_server(f"{scripts / 'cli_single.py'}:alias").info.name == "single"
    assert load_server("cli_nested.py:Holder.server").info.name == "nested"
    assert load_server("cli_single").info.name == "single"  # as a module, found from the current directory
    assert load_server("cli_nested:Holder.server").info.name == "nested"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.py"], "no such file: missing.py"),
        (["cli_none.py"], "cli_none.py defines no MCPServer; name one as cli_none.py:NAME"),
        (["cli_several.py"], "cli_several.py defines several MCPServers (a, b, c); name one as cli_several.py:NAME"),
        (["cli_single.py:nope"], "cli_single.py has no 'nope'"),
        (["cli_nested.py:Holder"], "cli_nested.py:Holder is a type, not an MCPServer"),
        (["cli_broken.py"], "loading cli_broken.py failed: RuntimeError: cannot start"),
        (["cli_missing_module"], "importing cli_missing_module failed: ModuleNotFoundError: No module named"),
        (["cli_single.py", "--port", "1"], "--host, --port and --stateless apply to --transport http or sse"),
        (["cli_single.py", "--transport", "sse", "--stateless"], "--stateless applies to --transport http"),
    ],
)
def test_run_errors(scripts: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str) -> None:
    code, out, err = run_main(capsys, "run", *arguments)
    assert (code, out) == (1, "")
    assert err.replace("loud\n", "").startswith(f"mcp-sync: error: {message}") and err.count("mcp-sync") == 1


# ------------------------------------------------------------ reading values


def test_values_read_against_the_schema() -> None:
    assert parse_value("n", "3", {"type": "number"}) == 3
    assert parse_value("n", "2.5", {"type": "number"}) == 2.5
    with pytest.raises(CommandError, match=r"argument n: 'nan' is not number"):
        parse_value("n", "nan", {"type": "number"})
    with pytest.raises(CommandError, match=r"'x' is not number"):
        parse_value("n", "x", {"type": "number"})
    assert [parse_value("b", raw, {"type": "boolean"}) for raw in ("true", "NO", "on", "0")] == [
        True,
        False,
        True,
        False,
    ]
    assert parse_value("v", "null", {"type": ["integer", "null"]}) is None
    assert parse_value("v", "7", {"type": ["integer", "null"]}) == 7
    with pytest.raises(CommandError, match=r"'none' is not integer or null"):
        parse_value("v", "none", {"type": ["integer", "null"]})
    assert parse_value("o", '{"a": [1]}', {"type": "object"}) == {"a": [1]}
    with pytest.raises(CommandError):
        parse_value("o", "[1]", {"type": "object"})
    with pytest.raises(CommandError):
        parse_value("a", "{oops", {"type": "array"})
    assert parse_value("e", "2", {"enum": [1, 2]}) == 2 and parse_value("e", "2", {"enum": ["1", "2"]}) == "2"
    assert parse_value("u", "5", {"anyOf": [{"type": "integer"}, {"type": "string"}]}) == 5
    assert parse_value("u", "five", {"oneOf": [{"type": "integer"}, {"type": "string"}]}) == "five"
    assert parse_value("s", "007", {"type": "string"}) == "007"
    assert parse_value("x", "[1, 2]", None) == [1, 2] and parse_value("x", "plain", {}) == "plain"
    assert parse_arguments(["a=1", "b==2", " c =3"], {"properties": {"a": {"type": "integer"}}}) == {
        "a": 1,
        "b": "=2",
        "c": 3,
    }
    assert parse_arguments(["a=1"], {"properties": [1]}) == {"a": 1}
    with pytest.raises(CommandError, match="'=1' is not NAME=VALUE"):
        parse_arguments(["=1"])


# ------------------------------------------------- a server that asks for OAuth


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """Our server behind a real authorization server (oidc-provider); its URL and the authorization server."""
    import authserver
    import conformance

    from mcp_sync.server import start_http

    port = conformance.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with authserver.running_authorization_server(url) as issuer:

        def verify(token: str) -> dict[str, Any] | None:
            try:
                claims = issuer.verify(token)
            except authserver.InvalidToken:
                return None
            return claims if claims.get("aud") == url else None

        server = MCPServer("guarded")
        server.register_tool("whoami", lambda args, ctx: "a signed-in caller", description="Who is calling")
        metadata = {"authorization_servers": [issuer.issuer], "scopes_supported": ["mcp:read"]}
        running = start_http(server, port=port, token_verifier=verify, resource_metadata=metadata)
        try:
            yield url, issuer
        finally:
            running.close()


@pytest.mark.interop
def test_login_call_and_logout_a_server_that_asks_for_oauth(protected: tuple[str, Any], tmp_path: Path) -> None:
    url, issuer = protected
    env = {**os.environ, "MCP_SYNC_OAUTH_DIR": str(tmp_path / "oauth")}
    mcp_sync_command = [sys.executable, "-m", "mcp_sync"]

    # Without a sign-in (and no terminal for one), the call says what to do.
    refused = subprocess.run(
        [*mcp_sync_command, "call", url, "whoami"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert refused.returncode == 1 and "requires a sign-in" in refused.stderr

    login = subprocess.Popen(
        [*mcp_sync_command, "login", url, "--no-browser"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert login.stderr is not None
        assert login.stderr.readline() == "Sign in by visiting:\n"
        authorization_url = login.stderr.readline().strip()
        callback = issuer.approve(authorization_url)  # the person logs in and consents ...
        assert requests.get(callback, timeout=TIMEOUT).status_code == 200  # ... and the browser comes back
        out, _ = login.communicate(timeout=TIMEOUT)
    finally:
        login.kill()
        login.wait()
    assert login.returncode == 0
    assert out == f"signed in to {url} (scopes: mcp:read)\n"
    stored = list((tmp_path / "oauth").iterdir())
    assert stored and all(path.stat().st_mode & 0o777 == 0o600 for path in stored)

    called = subprocess.run(
        [*mcp_sync_command, "call", url, "whoami"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert (called.returncode, called.stdout) == (0, "a signed-in caller\n")

    out = subprocess.run([*mcp_sync_command, "logout", url], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.stdout == f"signed out of {url}\n"
    again = subprocess.run(
        [*mcp_sync_command, "call", url, "whoami"], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert again.returncode == 1 and "requires a sign-in" in again.stderr


def test_login_and_logout_take_urls_and_say_when_no_sign_in_is_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_SYNC_OAUTH_DIR", str(tmp_path))
    assert main(["login", "python server.py"]) == 1
    assert main(["logout", "python server.py"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "mcp-sync: error: login applies to URLs",
        "mcp-sync: error: logout applies to URLs",
    ]
    running = start_http(MCPServer("open"))
    try:
        assert main(["login", running.url, "--no-browser"]) == 0
    finally:
        running.close()
    assert capsys.readouterr().out == f"{running.url} asks for no sign-in\n"
    assert list(tmp_path.iterdir()) == []  # nothing kept
