"""The MCP WSGI app hosted by real servers and frameworks, in subprocesses on 127.0.0.1.

- ``examples/wsgi_app.py`` under gunicorn (``gthread``, one worker) and
  waitress: our client initializes, lists and calls tools and gets progress
  in both eras (its default finds the stateless revision 2026-07-28; the
  handshake era, ``era="handshake"``, negotiates 2025-11-25), answers a
  sampling request in each era's way, and speaks the legacy HTTP+SSE
  transport.
- The same app stateless under gunicorn with two workers: calls land on both
  and all succeed.
- ``examples/flask_app.py`` (MCP mounted at ``/mcp`` beside Flask's page)
  under the embedded server, werkzeug's development server and gunicorn.
- ``examples/django_app.py`` (MCP beside Django's views) under Django's
  ``runserver`` and gunicorn.

Everywhere: a forged ``Host`` or ``Origin`` is refused by the MCP endpoint,
and SIGTERM stops the server with the exit status it is known for and leaves
no process of its group running.

That a server streams rather than buffers is shown without timing, in the
handshake era: the tools that sample send a progress notification and then
block until the client answers the sampling request, which travels on the
same SSE response. A server that held the response back until its end would
never deliver that request and the call would time out. At 2026-07-28 a tool
that samples answers with an input request instead and runs again from the
start once the client has the answer: its progress comes once per round.

Each server is started once per module (module-scoped fixtures); every wait
is bounded.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import free_port, processes, wait_until

from mcp_sync import MCPClient
from mcp_sync.client import http_client
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.types import CreateMessageRequestParams, CreateMessageResult, ProgressNotificationParams, TextContent

ROOT = Path(__file__).parent.parent.parent
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
"""Less than gunicorn's 30 s ``graceful_timeout``: a stop that waits for open streams fails."""
CALL_TIMEOUT = 10.0
HTTP_TIMEOUT = 10.0
BOTH = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hosting", "version": "1"}},
}

pytestmark = pytest.mark.timeout(90)

MODERN = "2026-07-28"
ERAS = {"auto": MODERN, "handshake": "2025-11-25"}
"""The client's eras, each with the version it negotiates with our servers."""


def gunicorn(*options: str) -> list[str]:
    """gunicorn with our options; without the control socket it opens in ``~/.gunicorn`` since 25.1."""
    try:
        major, minor = (int(part) for part in importlib.metadata.version("gunicorn").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        major = minor = 0  # not installed: the server's output will say so
    quiet = ["--no-control-socket"] if (major, minor) >= (25, 1) else []
    return [sys.executable, "-m", "gunicorn", *quiet, "-k", "gthread", "-b", "127.0.0.1:{port}", *options]


def group_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that still run (zombies waiting to be reaped do not count)."""
    return [pid for pid, state, _, group in processes() if group == pgid and state != "Z"]


@contextlib.contextmanager
def stopped(workers: set[int]) -> Iterator[None]:
    """Within the block ``workers`` are stopped (SIGSTOP): they accept nothing, so new connections go to the others.

    Which worker accepts a connection is the kernel's choice, and under load one worker can win every time; a test
    that needs calls on each worker steers them so. The block must be short: gunicorn kills a worker silent for
    its ``--timeout`` (30 s).
    """
    for worker in workers:
        os.kill(worker, signal.SIGSTOP)
    try:
        yield
    finally:
        for worker in workers:
            os.kill(worker, signal.SIGCONT)


class Hosted:
    """A server command in its own process group, on a free loopback port."""

    def __init__(self, name: str, argv: list[str], tmp: Path, *, sigterm_status: int, **env: str) -> None:
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.sigterm_status = sigterm_status
        self.log = tmp / f"{name}.log"
        with open(self.log, "wb") as sink:
            # The environment is inherited (coverage measures the servers); the project comes first on the path.
            self.process = subprocess.Popen(
                [part.format(port=self.port) for part in argv],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pgid = self.process.pid
        self._wait_until_listening()

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
                return
            except OSError:
                time.sleep(0.05)
        self.kill()
        pytest.fail(f"{self.name} did not start listening on {self.port}:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> tuple[int, float]:
        """SIGTERM, then the exit status and how long it took; fails when it does not exit in time."""
        start = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not exit within {STOP_TIMEOUT} s of SIGTERM:\n{self.output()}")
        return status, time.monotonic() - start

    def leftovers(self, timeout: float = 5.0) -> list[int]:
        """Processes of the server's group still running after ``timeout`` (workers being reaped get that long)."""
        deadline = time.monotonic() + timeout
        members = group_members(self.pgid)
        while members and time.monotonic() < deadline:
            time.sleep(0.05)
            members = group_members(self.pgid)
        return members

    def kill(self) -> None:
        """SIGKILL whatever of the group still runs (only after a failure)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)

    def check_stop(self) -> float:
        """Stop with SIGTERM; assert the exit status and that nothing of the group is left; the time it took."""
        if self.process.poll() is not None:
            pytest.fail(f"{self.name} had exited already ({self.process.returncode}):\n{self.output()}")
        status, took = self.stop()
        left = self.leftovers()
        if left:
            self.kill()
        assert status == self.sigterm_status, f"{self.name} exited with {status}:\n{self.output()}"
        assert not left, f"{self.name} left processes running: {left}"
        return took

    def close(self) -> None:
        """After the tests: stop the server if a test did not (checking it too), and never leave it running."""
        try:
            if self.process.poll() is None:
                self.check_stop()
        finally:
            if self.process.poll() is None or group_members(self.pgid):
                self.kill()


@contextlib.contextmanager
def hosting(name: str, argv: list[str], tmp: Path, *, sigterm_status: int, **env: str) -> Iterator[Hosted]:
    hosted = Hosted(name, argv, tmp, sigterm_status=sigterm_status, **env)
    try:
        yield hosted
    finally:
        hosted.close()


# ------------------------------------------------------------------ clients


class Sampler:
    """Answers sampling requests, noting how many progress notifications had arrived by then."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.progress: list[ProgressNotificationParams] = []
        self.asked: list[tuple[str, int]] = []

    def __call__(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        content = params.messages[0].content
        self.asked.append((getattr(content, "text", ""), len(self.progress)))
        return CreateMessageResult(role="assistant", content=TextContent(text=self.answer), model="test-model")


def connect(url: str, **options: Any) -> MCPClient:
    options.setdefault("timeout", CALL_TIMEOUT)
    return http_client(url, **options)


def status_of(url: str, method: str = "POST", **headers: str) -> int:
    """The status of a raw request to ``url`` with ``headers`` (an initialize for POST)."""
    headers = {"Accept": BOTH, "Content-Type": "application/json", **headers}
    if method == "POST":
        return requests.post(url, json=INITIALIZE, headers=headers, timeout=HTTP_TIMEOUT).status_code
    return requests.get(url, headers={**headers, "Accept": "text/event-stream"}, timeout=HTTP_TIMEOUT).status_code


def initialize_as(url: str, host: str) -> int:
    """Initialize with the ``Host`` header ``host``; ends the session it opened. The status."""
    headers = {"Accept": BOTH, "Content-Type": "application/json", "Host": host}
    answer = requests.post(url, json=INITIALIZE, headers=headers, timeout=HTTP_TIMEOUT)
    session = answer.headers.get("Mcp-Session-Id")
    if session is not None:
        requests.delete(url, headers={**headers, "Mcp-Session-Id": session}, timeout=HTTP_TIMEOUT)
    return answer.status_code


def check_dns_rebinding_protection(url: str, *, port: int, legacy: str | None) -> None:
    """A forged Host gets 421 and a foreign Origin 403 from the MCP endpoint; the loopback names pass."""
    assert status_of(url, Host="evil.example.com") == 421
    assert status_of(url, Host=f"evil.example.com:{port}") == 421
    assert status_of(url, Origin="http://evil.example.com") == 403
    if legacy is not None:
        assert status_of(legacy, "GET", Host="evil.example.com") == 421
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        assert initialize_as(url, host) == 200, host


def in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(i)`` for ``i`` in ``range(count)`` on as many threads at once; the results (raising the first error)."""
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = work(index)
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"hosting-test-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CALL_TIMEOUT * 3)
    assert not any(thread.is_alive() for thread in threads), "a client thread did not finish"
    if errors:
        raise errors[0]
    return results


def stop_with_clients_connected(hosted: Hosted, url: str, legacy: str) -> float:
    """SIGTERM while a client is connected (its GET stream open) and a legacy client has just hung up.

    Neither stream would end by itself: gunicorn would wait ``graceful_timeout``
    for them, did the app not close itself once its worker is told to stop.
    """
    with connect(legacy, transport="sse") as gone:
        gone.ping()
    client = connect(url, era="handshake")  # a session of the handshake era, whose GET stream stays open
    try:
        client.ping()
        return hosted.check_stop()
    finally:
        client.close()


# ------------------------------------------------- examples/wsgi_app.py: gunicorn and waitress

WSGI_APP = "examples.wsgi_app:application"
WSGI_SERVERS: dict[str, tuple[list[str], int]] = {
    # gunicorn's master stops its workers and exits 0; waitress has no SIGTERM handler: the signal ends it.
    "gunicorn": (gunicorn("--threads", "8", "-w", "1", WSGI_APP), 0),
    "waitress": (
        [sys.executable, "-m", "waitress", "--listen=127.0.0.1:{port}", "--threads=8", WSGI_APP],
        -signal.SIGTERM,
    ),
}


@pytest.fixture(scope="module", params=sorted(WSGI_SERVERS))
def wsgi_host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    argv, status = WSGI_SERVERS[request.param]
    with hosting(request.param, argv, tmp_path_factory.mktemp(request.param), sigterm_status=status) as hosted:
        yield hosted


@pytest.mark.parametrize("era", sorted(ERAS))
def test_initialize_list_and_call_tools(wsgi_host: Hosted, era: str) -> None:
    with connect(wsgi_host.base + "/mcp", transport="streamable", era=era) as client:
        assert client.protocol_version == ERAS[era]
        assert client.server_info.name == "wsgi-example"
        assert [tool.name for tool in client.list_tools().tools] == ["add", "countdown", "ask_model", "worker_pid"]
        assert client.call_tool("add", {"a": 2, "b": 3.5}).structured_content == {"result": 5.5}
        client.ping()


@pytest.mark.parametrize("era", sorted(ERAS))
def test_progress_notifications_arrive_before_the_result(wsgi_host: Hosted, era: str) -> None:
    seen: list[ProgressNotificationParams] = []
    with connect(wsgi_host.base + "/mcp", era=era) as client:
        assert client.protocol_version == ERAS[era]
        result = client.call_tool("countdown", {"steps": 4}, progress=seen.append)
        got_by_then = len(seen)
    assert result.text == "liftoff"
    assert got_by_then == 4
    assert [(p.progress, p.total, p.message) for p in seen] == [(i, 4, f"{4 - i} to go") for i in range(1, 5)]


def test_sampling_round_trip_through_the_stream(wsgi_host: Hosted) -> None:
    """Handshake era: the sampling request travels on the call's SSE response while the tool waits."""
    sampler = Sampler("blue")
    with connect(wsgi_host.base + "/mcp", sampling_provider=sampler, era="handshake") as client:
        result = client.call_tool(
            "ask_model", {"question": "What colour is the sky?"}, progress=sampler.progress.append
        )
    assert result.text == "the model says: blue"
    # The progress notification came first, on the same response, while the tool waited for the answer.
    assert sampler.asked == [("What colour is the sky?", 1)]
    assert [p.message for p in sampler.progress] == ["asking the model", "answered"]


def test_sampling_in_input_rounds(wsgi_host: Hosted) -> None:
    """2026-07-28: the tool asks for input, is run again with the answer, and reports progress in each round."""
    sampler = Sampler("blue")
    with connect(wsgi_host.base + "/mcp", sampling_provider=sampler) as client:
        assert client.protocol_version == MODERN
        result = client.call_tool(
            "ask_model", {"question": "What colour is the sky?"}, progress=sampler.progress.append
        )
    assert result.text == "the model says: blue"
    assert sampler.asked == [("What colour is the sky?", 1)]  # asked once, after the first round's progress
    assert [p.message for p in sampler.progress] == ["asking the model", "asking the model", "answered"]


def test_concurrent_clients(wsgi_host: Hosted) -> None:
    def work(index: int) -> list[Any]:
        with connect(wsgi_host.base + "/mcp") as client:
            return [client.call_tool("add", {"a": index, "b": n}).structured_content["result"] for n in range(5)]

    assert in_threads(3, work) == [[float(i + n) for n in range(5)] for i in range(3)]


def test_the_legacy_http_sse_transport(wsgi_host: Hosted) -> None:
    seen: list[ProgressNotificationParams] = []
    sampler = Sampler("green")
    with connect(wsgi_host.base + "/sse", transport="sse", sampling_provider=sampler) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3.0}
        assert client.call_tool("countdown", {"steps": 2}, progress=seen.append).text == "liftoff"
        assert client.call_tool("ask_model", {"question": "grass?"}).text == "the model says: green"
    assert [p.progress for p in seen] == [1, 2]


def test_the_endpoint_refuses_forged_hosts_and_origins(wsgi_host: Hosted) -> None:
    check_dns_rebinding_protection(wsgi_host.base + "/mcp", port=wsgi_host.port, legacy=wsgi_host.base + "/sse")


def test_sigterm_stops_the_wsgi_server(wsgi_host: Hosted) -> None:
    assert stop_with_clients_connected(wsgi_host, wsgi_host.base + "/mcp", wsgi_host.base + "/sse") < STOP_TIMEOUT


# ------------------------------------------------- a graceful stop ends the streams

STREAMS_APP = ["--pythonpath", "tests/servers", "wsgi_streams:application"]
"""An app with nothing set up for stopping (unlike the examples' documentation, no hook, no handler)."""


class OpenStream:
    """An SSE response read on a thread of its own until it ends."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self.data = b""
        self.ended = threading.Event()
        self._reader = threading.Thread(target=self._read, name="hosting-test-stream", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with contextlib.suppress(requests.RequestException, OSError, ValueError):
            while chunk := self.response.raw.read1(65536):
                self.data += chunk
        self.ended.set()

    def close(self) -> None:
        self.response.close()
        self._reader.join(HTTP_TIMEOUT)


def open_get_stream(url: str) -> OpenStream:
    """A session of the handshake era (2025-11-25) with its standalone GET stream open."""
    headers = {"Accept": BOTH, "Content-Type": "application/json"}
    answer = requests.post(url, json=INITIALIZE, headers=headers, timeout=HTTP_TIMEOUT)
    assert answer.status_code == 200, answer.text
    session = {"Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert requests.post(url, json=initialized, headers={**headers, **session}, timeout=HTTP_TIMEOUT).status_code == 202
    stream = requests.get(
        url, headers={"Accept": "text/event-stream", **session}, stream=True, timeout=(HTTP_TIMEOUT, STOP_TIMEOUT * 2)
    )
    assert stream.status_code == 200
    return OpenStream(stream)


@pytest.mark.parametrize("preload", [False, True], ids=["app-per-worker", "preload"])
def test_sigterm_ends_open_get_and_listen_streams_and_gunicorn_exits(tmp_path: Path, preload: bool) -> None:
    """SIGTERM while a GET stream and a 2026-07-28 subscriptions/listen stream are open.

    Neither stream ends by itself; gunicorn's graceful stop would wait its
    ``graceful_timeout`` (30 s) for them. The app notices that its worker was
    told to stop and closes: the GET stream ends, the listen stream ends with
    its result, and the master exits (within ``STOP_TIMEOUT``, well inside the
    graceful timeout). With ``--preload`` the app is made in the master, before
    any worker exists, and still notices.
    """
    argv = gunicorn("--threads", "8", "-w", "1", *(["--preload"] if preload else []), *STREAMS_APP)
    with hosting("gunicorn-streams", argv, tmp_path, sigterm_status=0) as hosted:
        url = hosted.base + "/mcp"
        get = open_get_stream(url)
        client = connect(url)
        try:
            assert client.protocol_version == MODERN
            subscription = client.listen(tools=True)
            assert not get.ended.is_set() and not subscription.done.is_set()
            hosted.process.send_signal(signal.SIGTERM)
            assert get.ended.wait(STOP_TIMEOUT), f"the GET stream is still open:\n{hosted.output()}"
            assert subscription.wait(STOP_TIMEOUT), f"the listen stream is still open:\n{hosted.output()}"
            assert subscription.error is None  # it ended with its result, not cut off
            try:
                status = hosted.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"gunicorn did not exit within {STOP_TIMEOUT} s of SIGTERM:\n{hosted.output()}")
            assert status == 0, hosted.output()
            assert not hosted.leftovers(), hosted.output()
        finally:
            client.close()
            get.close()


# ------------------------------------------------- stateless, gunicorn with two workers


HANG_UPS = "tests.servers.hang_ups:application"
HANG_UP_SERVERS: dict[str, tuple[list[str], int]] = {
    "gunicorn": (gunicorn("--threads", "4", "-w", "1", HANG_UPS), 0),
    # waitress tells of a hang-up only when it reads ahead of the request being served
    "waitress": (
        [sys.executable, "-m", "waitress", "--listen=127.0.0.1:{port}", "--channel-request-lookahead=1", HANG_UPS],
        -signal.SIGTERM,
    ),
}


@pytest.mark.parametrize("name", sorted(HANG_UP_SERVERS))
def test_a_2026_client_hanging_up_cancels_its_call_at_once(tmp_path: Path, name: str) -> None:
    # The call's answer is a stream the server's thread writes while the tool runs on a handler thread. Hanging up
    # is the cancellation in 2026-07-28: the tool hears of it within a look of the watch, not at the next ping's
    # failed write (a minute away here), which held the tool, its thread and the server's until then.
    argv, status = HANG_UP_SERVERS[name]
    with hosting(name, argv, tmp_path, sigterm_status=status) as hosted, connect(hosted.base + "/mcp") as client:
        assert client.protocol_version == MODERN
        for tag in ("first", "second"):
            started = threading.Event()
            with pytest.raises(MCPError) as raised:
                client.call_tool("wait", {"tag": tag}, cancel=started, progress=lambda p, s=started: s.set())
            assert raised.value.code == MCP_CODES.REQUEST_CANCELLED

        def noted() -> list[str]:
            # (both hang-ups may be seen in one look of the watch: their tools then note them in either order)
            return sorted(client.call_tool("cancelled").structured_content["result"])  # type: ignore[index]

        deadline = time.monotonic() + CALL_TIMEOUT
        while (seen := noted()) != ["first", "second"]:
            assert time.monotonic() < deadline, f"the tools heard of {seen} only:\n{hosted.output()}"
            time.sleep(0.1)  # another request tells: poll it


LENT_CALLS = "tests.servers.lent_calls:application"


def test_a_2026_call_runs_on_gunicorns_thread_and_is_answered_for_as_the_worker_stops(tmp_path: Path) -> None:
    """Under gunicorn's gthread worker a 2026-07-28 call runs on the thread gunicorn gave its request, not on a
    handler thread it would be handed to and back (gunicorn's ``write()`` may be called from another thread, as the
    embedded server's, so an answer that turns into a stream still goes out meanwhile). A handler that holds the
    thread, deaf to being told to stop, does not hold its answer: once SIGTERM closes the app, the POST gets the
    "shutting down" error at once, written from another thread, and gunicorn exits once the handler lets go."""
    argv = gunicorn("--threads", "4", "-w", "1", LENT_CALLS)
    with (
        hosting("gunicorn-lent", argv, tmp_path, sigterm_status=0) as hosted,
        socket.create_server(("127.0.0.1", 0)) as holder,
        connect(hosted.base + "/mcp") as client,
    ):
        assert client.protocol_version == MODERN
        thread = client.call_tool("where").text
        assert not thread.startswith("mcp-sync"), thread  # gthread's own pool thread
        errors: list[MCPError] = []

        def call() -> None:
            with pytest.raises(MCPError) as raised:
                client.call_tool("hold", {"port": holder.getsockname()[1]})
            errors.append(raised.value)

        caller = threading.Thread(target=call, name="lent-caller")
        holder.settimeout(CALL_TIMEOUT)
        caller.start()
        try:
            held, _ = holder.accept()  # the tool runs
            with held:
                hosted.process.send_signal(signal.SIGTERM)
                caller.join(STOP_TIMEOUT)
                assert errors, f"the held call got no answer while its handler ran:\n{hosted.output()}"
                assert "shutting down" in errors[0].message
        finally:
            caller.join(CALL_TIMEOUT)
        try:
            status = hosted.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"gunicorn did not exit within {STOP_TIMEOUT} s of SIGTERM:\n{hosted.output()}")
        assert status == 0, hosted.output()
        assert not hosted.leftovers(), hosted.output()


@pytest.fixture(scope="module")
def stateless_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    argv = gunicorn("--threads", "4", "-w", "2", WSGI_APP)
    with hosting(
        "gunicorn-2", argv, tmp_path_factory.mktemp("stateless"), sigterm_status=0, MCP_STATELESS="1"
    ) as hosted:
        yield hosted


def test_stateless_mode_has_no_sessions(stateless_host: Hosted) -> None:
    url = stateless_host.base + "/mcp"
    answer = requests.post(url, json=INITIALIZE, headers={"Accept": BOTH}, timeout=HTTP_TIMEOUT)
    assert answer.status_code == 200
    assert "Mcp-Session-Id" not in answer.headers
    assert requests.get(url, headers={"Accept": "text/event-stream"}, timeout=HTTP_TIMEOUT).status_code == 405


def test_stateless_calls_spread_over_two_workers_all_succeed(stateless_host: Hosted) -> None:
    url = stateless_host.base + "/mcp"

    def workers() -> set[int]:
        return set(group_members(stateless_host.pgid)) - {stateless_host.pgid}  # the workers, not the master

    wait_until(lambda: len(workers()) == 2)  # (gunicorn forks them one by one)

    def calls(count: int) -> set[int]:
        def work(index: int) -> set[int]:
            pids = set()
            # A new connection for each request: whichever worker runs may accept it.
            with connect(url, headers={"Connection": "close"}) as client:
                for n in range(count):
                    assert client.call_tool("add", {"a": index, "b": n}).structured_content == {"result": index + n}
                    pids.add(client.call_tool("worker_pid").structured_content["result"])
            return pids

        return set().union(*in_threads(4, work))

    both = workers()
    assert calls(10) <= both  # wherever the kernel puts each connection
    for worker in sorted(both):  # then on each worker in turn, the other stopped
        with stopped(both - {worker}):
            assert calls(3) == {worker}


def test_sigterm_stops_the_master_and_both_workers(stateless_host: Hosted) -> None:
    assert len(group_members(stateless_host.pgid)) == 3
    assert stateless_host.check_stop() < STOP_TIMEOUT


# ------------------------------------------------- examples/flask_app.py: MCP mounted at /mcp

FLASK_SERVERS: dict[str, tuple[list[str], int]] = {
    # The example's own entry point runs the embedded server, which stops as on Ctrl-C (exit 0).
    "embedded": ([sys.executable, "examples/flask_app.py", "--port", "{port}"], 0),
    # werkzeug's development server, threaded; it has no SIGTERM handler.
    "werkzeug": (
        [sys.executable, "-m", "flask", "--app", "examples.flask_app", "run", "--port", "{port}"],
        -signal.SIGTERM,
    ),
    "gunicorn": (gunicorn("--threads", "8", "-w", "1", "examples.flask_app:app"), 0),
}


@pytest.fixture(scope="module", params=sorted(FLASK_SERVERS))
def flask_host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    argv, status = FLASK_SERVERS[request.param]
    name = f"flask-{request.param}"
    with hosting(name, argv, tmp_path_factory.mktemp(name), sigterm_status=status) as hosted:
        yield hosted


def test_flask_page_and_mcp_tools_share_the_process(flask_host: Hosted) -> None:
    note = f"<buy> milk {uuid.uuid4().hex[:8]}"
    with connect(flask_host.base + "/mcp") as client:
        assert client.server_info.name == "flask-notes"
        assert [tool.name for tool in client.list_tools().tools] == ["add_note", "summarize_notes"]
        assert client.call_tool("add_note", {"text": note}).text.endswith(" notes")
    page = requests.get(flask_host.base + "/", timeout=HTTP_TIMEOUT)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert f"<li>&lt;buy&gt; milk {note[-8:]}</li>" in page.text
    assert requests.get(flask_host.base + "/nowhere", timeout=HTTP_TIMEOUT).status_code == 404  # Flask's 404


@pytest.mark.parametrize("era", sorted(ERAS))
def test_flask_mount_streams_progress_and_sampling(flask_host: Hosted, era: str) -> None:
    sampler = Sampler("short and sweet")
    with connect(flask_host.base + "/mcp", sampling_provider=sampler, era=era) as client:
        assert client.protocol_version == ERAS[era]
        client.call_tool("add_note", {"text": "call Ada"})
        client.call_tool("add_note", {"text": "water plants"})
        result = client.call_tool("summarize_notes", progress=sampler.progress.append)
    assert result.text == "short and sweet"
    [(question, progress_by_then)] = sampler.asked
    assert question.startswith("Summarize these notes: ") and "call Ada; water plants" in question
    notes = question.count("; ") + 1
    rounds = 1 if era == "handshake" else 2  # at 2026-07-28 the tool runs again once the answer is in
    assert notes >= 2 and progress_by_then == notes  # every progress notification came before the request
    assert [p.progress for p in sampler.progress] == list(range(1, notes + 1)) * rounds


def test_flask_mount_serves_the_legacy_transport_under_its_prefix(flask_host: Hosted) -> None:
    stream = requests.get(
        flask_host.base + "/mcp/sse", headers={"Accept": "text/event-stream"}, stream=True, timeout=HTTP_TIMEOUT
    )
    with stream:
        lines = stream.iter_lines(decode_unicode=True)
        event = [next(lines), next(lines)]
    # The endpoint names the mount (SCRIPT_NAME) before the app's messages path.
    assert event[0] == "event: endpoint"
    assert event[1].startswith("data: /mcp/messages/?session_id=")
    with connect(flask_host.base + "/mcp/sse", transport="sse") as client:
        assert client.call_tool("add_note", {"text": "from a legacy client"}).text.endswith(" notes")
    assert "from a legacy client" in requests.get(flask_host.base + "/", timeout=HTTP_TIMEOUT).text


def test_flask_mount_keeps_dns_rebinding_protection(flask_host: Hosted) -> None:
    check_dns_rebinding_protection(flask_host.base + "/mcp", port=flask_host.port, legacy=flask_host.base + "/mcp/sse")
    # Flask's own page has no such check (that is the application's business, e.g. a trusted_hosts setting).
    forged = requests.get(flask_host.base + "/", headers={"Host": "evil.example.com"}, timeout=HTTP_TIMEOUT)
    assert forged.status_code == 200


def test_sigterm_stops_the_flask_server(flask_host: Hosted) -> None:
    took = stop_with_clients_connected(flask_host, flask_host.base + "/mcp", flask_host.base + "/mcp/sse")
    assert took < STOP_TIMEOUT


# ------------------------------------------------- examples/django_app.py: MCP beside Django's views

DJANGO_SERVERS: dict[str, tuple[list[str], int]] = {
    # Django's runserver has no SIGTERM handler.
    "runserver": (
        [sys.executable, "examples/django_app.py", "runserver", "127.0.0.1:{port}", "--noreload", "--skip-checks"],
        -signal.SIGTERM,
    ),
    "gunicorn": (gunicorn("--threads", "8", "-w", "1", "examples.django_app:application"), 0),
}


@pytest.fixture(scope="module", params=sorted(DJANGO_SERVERS))
def django_host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    argv, status = DJANGO_SERVERS[request.param]
    name = f"django-{request.param}"
    with hosting(name, argv, tmp_path_factory.mktemp(name), sigterm_status=status) as hosted:
        yield hosted


def test_django_views_and_mcp_tools_share_the_process(django_host: Hosted) -> None:
    title = f"Dune {uuid.uuid4().hex[:8]}"
    with connect(django_host.base + "/mcp") as client:
        assert client.server_info.name == "django-shelf"
        assert [tool.name for tool in client.list_tools().tools] == ["add_book", "recommend"]
        assert client.call_tool("add_book", {"title": title}).text.endswith(" books")
    listed = requests.get(django_host.base + "/books/", timeout=HTTP_TIMEOUT)
    assert listed.status_code == 200
    assert title in listed.json()["books"]
    page = requests.get(django_host.base + "/", timeout=HTTP_TIMEOUT)
    assert page.status_code == 200
    assert f"<li>{title}</li>" in page.text
    # CommonMiddleware's APPEND_SLASH redirects to the view; an unknown path is Django's 404.
    assert requests.get(django_host.base + "/books", allow_redirects=False, timeout=HTTP_TIMEOUT).status_code == 301
    assert requests.get(django_host.base + "/nowhere/", timeout=HTTP_TIMEOUT).status_code == 404


@pytest.mark.parametrize("era", sorted(ERAS))
def test_django_mount_streams_progress_and_sampling(django_host: Hosted, era: str) -> None:
    sampler = Sampler("Dune first")
    with connect(django_host.base + "/mcp", sampling_provider=sampler, era=era) as client:
        assert client.protocol_version == ERAS[era]
        client.call_tool("add_book", {"title": "Emma"})
        result = client.call_tool("recommend", progress=sampler.progress.append)
    assert result.text == "Dune first"
    [(question, progress_by_then)] = sampler.asked
    assert question.startswith("Which should I read first: ") and "Emma" in question
    books = question.count("; ") + 1
    rounds = 1 if era == "handshake" else 2  # at 2026-07-28 the tool runs again once the answer is in
    assert progress_by_then == books  # every progress notification came before the request
    assert [p.progress for p in sampler.progress] == list(range(1, books + 1)) * rounds


def test_django_mount_serves_the_legacy_transport(django_host: Hosted) -> None:
    with connect(django_host.base + "/mcp/sse", transport="sse") as client:
        assert client.call_tool("add_book", {"title": "Legacy Tales"}).text.endswith(" books")
    assert "Legacy Tales" in requests.get(django_host.base + "/books/", timeout=HTTP_TIMEOUT).json()["books"]


def test_django_mount_keeps_both_host_checks(django_host: Hosted) -> None:
    check_dns_rebinding_protection(
        django_host.base + "/mcp", port=django_host.port, legacy=django_host.base + "/mcp/sse"
    )
    # Django's views answer a Host outside ALLOWED_HOSTS with 400.
    forged = requests.get(django_host.base + "/books/", headers={"Host": "evil.example.com"}, timeout=HTTP_TIMEOUT)
    assert forged.status_code == 400
    assert requests.get(django_host.base + "/books/", headers={"Host": "localhost"}, timeout=HTTP_TIMEOUT).ok


def test_sigterm_stops_the_django_server(django_host: Hosted) -> None:
    took = stop_with_clients_connected(django_host, django_host.base + "/mcp", django_host.base + "/mcp/sse")
    assert took < STOP_TIMEOUT
