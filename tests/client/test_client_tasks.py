"""Tool calls run as tasks, end to end: our client against our server, and against fastmcp-tasks.

Our server is ``tests/servers/task_server.py`` (its tools run as tasks, and
wait on files the tests create), served in this process over real HTTP
(``start_http``) or in memory. A second client runs in a real subprocess
to reattach to a task the first one started. The command line is run as
``python -m mcp_sync``. The interop peer is fastmcp with ``fastmcp-tasks``
(a third-party SEP-2663 server), installed in its own virtualenv by
``tests/peers.py``; without it those tests skip (fail with
``MCP_SYNC_REQUIRE_INTEROP=1``).
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peers
import pytest
import requests

from mcp_sync import MCPClient, MCPServer, connect
from mcp_sync.client.tasks import ToolTask, UnknownTaskError
from mcp_sync.protocol.errors import MCP_CODES, MCPError
from mcp_sync.protocol.tasks import EXTENSION
from mcp_sync.server import RunningHTTPServer, start_http
from mcp_sync.server.middleware import Call, Next
from mcp_sync.types import ElicitRequestFormParams, ElicitResult

ROOT = Path(__file__).parent.parent.parent
SERVERS = ROOT / "tests" / "servers"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
WAIT = 30.0


def wait_for(condition: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def load_task_server() -> MCPServer:
    spec = importlib.util.spec_from_file_location("task_server_under_test", SERVERS / "task_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server: MCPServer = module.server
    return server


def green(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"colour": "green"})


@pytest.fixture
def server() -> Iterator[MCPServer]:
    served = load_task_server()
    yield served
    served.stop()


@pytest.fixture
def http(server: MCPServer) -> Iterator[RunningHTTPServer]:
    with start_http(server) as running:
        yield running


@pytest.fixture
def client(http: RunningHTTPServer) -> Iterator[MCPClient]:
    with connect(http.url, timeout=WAIT, elicitation_provider=green) as c:
        yield c


# ------------------------------------------------------------------ our server


def test_call_tool_waits_for_the_task_transparently(server: MCPServer, client: MCPClient, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    polls: list[str] = []

    @server.middleware
    def open_on_first_poll(call: Call, next: Next) -> Any:
        if call.kind == "request" and call.method == "tasks/get":
            polls.append(str(call.params["taskId"]))
            gate.touch()  # the tool waits for it: only a call that polls gets its result
        return next(call)

    assert client.call_tool("slow", {"text": "done", "gate": str(gate)}).text == "done"
    assert polls and client.negotiated_era == "stateless"


def test_start_tool_then_collect_the_result(client: MCPClient, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    task = client.start_tool("slow", {"text": "built", "gate": str(gate)})
    finished: list[ToolTask] = []
    task.add_done_callback(finished.append)
    assert isinstance(task, concurrent.futures.Future) and task.task_id
    assert task.status == "working" and not task.done()
    with pytest.raises(concurrent.futures.TimeoutError):
        task.result(timeout=0.05)
    gate.touch()
    assert task.result(WAIT).text == "built"
    assert task.status == "completed" and finished == [task]


class RecordingSession(requests.Session):
    """A ``requests`` session that keeps the headers of every request it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.headers_sent: list[dict[str, str]] = []

    def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        self.headers_sent.append({str(k): str(v) for k, v in (kwargs.get("headers") or {}).items()})
        return super().request(method, url, *args, **kwargs)


def test_task_requests_name_their_task_in_mcp_name(http: RunningHTTPServer, tmp_path: Path) -> None:
    recording = RecordingSession()
    with connect(http.url, timeout=WAIT, session=recording) as c:
        task = c.start_tool("until_cancelled", {"marker": str(tmp_path / "m")})
        assert wait_for(lambda: any(h.get("Mcp-Method") == "tasks/get" for h in recording.headers_sent))
        assert task.cancel()
    named = {h["Mcp-Method"]: h.get("Mcp-Name") for h in recording.headers_sent if "Mcp-Method" in h}
    assert named["tasks/get"] == named["tasks/cancel"] == task.task_id


def test_cancel_mid_run_reaches_the_handler(client: MCPClient, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    task = client.start_tool("until_cancelled", {"marker": str(marker)})
    assert task.cancel()
    assert task.cancelled() and task.status == "cancelled"
    assert wait_for(marker.exists)  # the handler saw ctx.cancelled
    with pytest.raises(concurrent.futures.CancelledError):
        task.result(0)


def test_input_required_is_answered_through_the_providers(client: MCPClient) -> None:
    assert client.call_tool("ask", {"question": "Colour?"}).text == "the user likes green"
    asked: list[str] = []

    def blue(params: ElicitRequestFormParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"colour": "blue"})

    client.set_elicitation_provider(blue)
    assert client.start_tool("ask", {"question": "Which?"}).result(WAIT).text == "the user likes blue"
    assert asked == ["Which?"]


def test_a_tool_error_completes_the_task_with_is_error(client: MCPClient) -> None:
    assert client.call_tool("broken").is_error
    with pytest.raises(MCPError, match="it broke"):
        client.call_tool("broken", raise_on_error=True)
    assert client.start_tool("broken").result(WAIT).is_error


def test_a_handshake_era_client_gets_the_2025_11_25_form(server: MCPServer, tmp_path: Path) -> None:
    """The extension is no handshake revision's (SEP-2663): the client declares 2025-11-25's tasks at initialize."""
    gate = tmp_path / "gate"
    with connect(server, era="handshake", timeout=WAIT, elicitation_provider=green) as c:
        assert c.negotiated_era == "handshake"
        offered = c.server_capabilities
        assert EXTENSION not in (offered.extensions or {}) and "tools" in offered.model_extra["tasks"]["requests"]
        assert c.call_tool("ask", {"question": "Colour?"}).text == "the user likes green"
        task = c.start_tool("slow", {"text": "old era", "gate": str(gate)})
        again = c.task(str(task.task_id))
        gate.touch()
        assert task.result(WAIT).text == again.result(WAIT).text == "old era"


def test_an_unknown_task_id_is_a_typed_error(client: MCPClient) -> None:
    with pytest.raises(UnknownTaskError) as caught:
        client.task("no-such-task")
    assert caught.value.jsonrpc_code == -32602


REATTACH = """
import sys
from mcp_sync import connect
with connect(sys.argv[1], timeout=30) as client:
    task = client.task(sys.argv[2])
    print(task.status, flush=True)
    sys.stdin.readline()  # the test opens the gate, then says go on
    print(task.result(timeout=30).text, flush=True)
"""


def test_reattach_from_a_new_process_after_the_client_closed(http: RunningHTTPServer, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with connect(http.url, timeout=WAIT) as first:
        task = first.start_tool("slow", {"text": "outlived its client", "gate": str(gate)})
        task_id = task.task_id
    error = task.exception(WAIT)  # closing the client ends the handle, not the task
    assert isinstance(error, MCPError) and error.code == MCP_CODES.TRANSPORT_CLOSED
    assert task_id is not None
    process = subprocess.Popen(
        [sys.executable, "-c", REATTACH, http.url, task_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == "working\n"
        gate.touch()
        out, err = process.communicate("go\n", timeout=WAIT)
        assert process.returncode == 0, err
        assert out == "outlived its client\n"
    finally:
        process.kill()
        process.wait(WAIT)


def test_in_memory_and_the_poller_thread_ends_with_the_client(server: MCPServer, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with connect(server, timeout=WAIT) as c:
        task = c.start_tool("slow", {"text": "x", "gate": str(gate)})
        assert wait_for(lambda: any(t.name == "mcp-sync-client-tasks" for t in threading.enumerate()))
    assert isinstance(task.exception(WAIT), MCPError)
    assert not [t for t in threading.enumerate() if t.name == "mcp-sync-client-tasks"]


# ------------------------------------------------------------------ the command line


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_sync ARGS``, to completion."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_sync", *args],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        env=ENV,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_cli_detach_then_wait(http: RunningHTTPServer, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    started = cli("call", http.url, "slow", "text=from the shell", f"gate={gate}", "--detach")
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    shown = cli("task", http.url, task_id)
    assert (shown.returncode, shown.stdout) == (0, f"{task_id}: working\n"), shown.stderr
    gate.touch()
    waited = cli("task", http.url, task_id, "--wait")
    assert (waited.returncode, waited.stdout) == (0, '{\n  "result": "from the shell"\n}\n'), waited.stderr


def test_cli_cancel(http: RunningHTTPServer, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    started = cli("call", http.url, "until_cancelled", f"marker={marker}", "--detach")
    task_id = started.stdout.strip()
    cancelled = cli("task", http.url, task_id, "--cancel")
    assert (cancelled.returncode, cancelled.stdout) == (0, f"{task_id}: cancel sent\n"), cancelled.stderr
    assert wait_for(marker.exists)
    waited = cli("task", http.url, task_id, "--wait")
    assert waited.returncode == 1
    assert waited.stderr == f"mcp-sync: error: task {task_id} was cancelled\n"


def test_cli_errors(http: RunningHTTPServer, tmp_path: Path) -> None:
    unknown = cli("task", http.url, "nope", "--wait")
    assert unknown.returncode == 1 and "knows no task 'nope'" in unknown.stderr
    failed = cli("call", http.url, "broken", "--detach")
    task_id = failed.stdout.strip()
    waited = cli("task", http.url, task_id, "--wait")
    assert waited.returncode == 1 and "failed: Error: it broke" in waited.stderr
    slow = cli("call", http.url, "slow", "text=x", f"gate={tmp_path / 'never'}", "--detach")
    late = cli("task", http.url, slow.stdout.strip(), "--wait", "--timeout", "0.3")
    assert late.returncode == 1 and "did not end within 0.3s" in late.stderr


def test_cli_detach_of_a_call_answered_at_once(tmp_path: Path) -> None:
    echo = str(ROOT / "examples" / "echo_server.py")
    done = cli("call", echo, "echo", "text=hi", "--detach")
    assert (done.returncode, done.stdout) == (0, "hi\n")
    assert done.stderr == "the server answered at once (no task to detach)\n"


# ------------------------------------------------------------------ fastmcp-tasks


@pytest.fixture(scope="module")
def fastmcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = peers.fastmcp_tasks_python()
    out = tmp_path_factory.mktemp("fastmcp") / "server.out"
    with open(out, "wb") as sink:
        process = subprocess.Popen(
            [python, str(SERVERS / "fastmcp_tasks_server.py"), "--port", "0"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=peers.peer_environment(),
        )
    try:
        assert wait_for(lambda: b"PORT " in out.read_bytes() or process.poll() is not None, 60.0)
        text = out.read_text()
        assert "PORT " in text, f"the fastmcp server did not start:\n{text}"
        port = int(text.split("PORT ")[1].split()[0])
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(WAIT)


@pytest.mark.interop
def test_fastmcp_tasks_interop(fastmcp_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with connect(fastmcp_url, timeout=WAIT, elicitation_provider=green) as c:
        assert c.server_capabilities.extensions is not None
        assert "io.modelcontextprotocol/tasks" in c.server_capabilities.extensions
        task = c.start_tool("slow", {"text": "from fastmcp", "gate": str(gate)})
        assert task.task_id and task.status == "working"
        gate.touch()
        assert task.result(WAIT).text == "from fastmcp"
        assert c.call_tool("slow", {"text": "again", "gate": str(gate)}).text == "again"
        assert c.call_tool("ask", {"question": "Colour?"}).text == "the user likes green"
        assert c.call_tool("broken").is_error
        with pytest.raises(UnknownTaskError):
            c.task("no-such-task")


@pytest.mark.interop
def test_fastmcp_tasks_reattach_and_cancel(fastmcp_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with connect(fastmcp_url, timeout=WAIT) as first:
        task_id = first.start_tool("slow", {"text": "kept", "gate": str(gate)}).task_id
        doomed = first.start_tool("slow", {"text": "never", "gate": str(tmp_path / "never")})
        assert doomed.cancel()
    assert task_id is not None
    with connect(fastmcp_url, timeout=WAIT) as second:
        again = second.task(task_id)
        gate.touch()
        assert again.result(WAIT).text == "kept"
        seen = second.task(str(doomed.task_id))
        assert wait_for(seen.done) and seen.cancelled()
