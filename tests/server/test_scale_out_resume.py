"""Streams that outlive the worker holding them: resuming on another worker, through Redis (issue 14).

``examples/scaled_app.py`` under gunicorn, four workers, ``--keep-alive 0``
(each request on a new connection, so requests spread over the workers), one
real Redis. Our handshake-era client holds a GET stream on one worker; that
worker is killed with SIGKILL; the client reconnects with ``Last-Event-ID``,
lands on another worker, and gets every event it missed (raised by other
workers while it was away), in order, then the live ones. After the sessions
end, every key left in Redis expires. Two single-worker gunicorn masters on
two ports behind a per-request round robin (a loopback TCP proxy that sends
each connection to the next port) serve a handshake-era session the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import peers
import pytest
import redis
from redisserver import RedisServer, running_redis
from test_hosting import Hosted, gunicorn, hosting, stopped
from test_scale_out import TIMEOUT, Heard, raw_call, wait_until, workers_of

from mcp_sync.client import http_client
from mcp_sync.errors import MCPError
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    EmptyResult,
    SubscribeRequestParams,
    TextContent,
)

SCALED_APP = "examples.scaled_app:application"
URIS = [f"notes://{n}" for n in range(1, 9)]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def scaled(tmp_path: Path) -> Iterator[tuple[Hosted, RedisServer]]:
    with running_redis(tmp_path / "redis.log") as redis_server:
        argv = gunicorn("-k", "gthread", "--threads", "8", "-w", "4", "--keep-alive", "0", SCALED_APP)
        with hosting("gunicorn-4", argv, tmp_path, sigterm_status=0, MCP_SYNC_REDIS_URL=redis_server.url) as hosted:
            yield hosted, redis_server


def connections(hosted: Hosted) -> list[int]:
    """The worker holding each open connection of the server's port (with no request in flight: the streams)."""
    sockets: dict[str, int] = {}
    for pid in workers_of(hosted):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        sockets[target[8:-1]] = pid
    holders = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].rpartition(":")[2], 16), fields[3], fields[9]
        if local_port == hosted.port and state == "01" and inode in sockets:
            holders.append(sockets[inode])
    return holders


def stream_holders(hosted: Hosted) -> set[int]:
    """The workers holding an open connection (a GET stream, when no request is in flight)."""
    return set(connections(hosted))


def kept_updates(redis_server: RedisServer) -> list[str]:
    """The URIs of the resource updates on the one GET stream kept in Redis, in the stream's order."""
    with redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys:
        [stream] = list(keys.scan_iter(match="*.get"))
        messages = [json.loads(fields[b"m"]) for _, fields in keys.xrange(stream) if fields[b"m"]]
    return [m["params"]["uri"] for m in messages if m["method"] == "notifications/resources/updated"]


def leftover_keys(redis_server: RedisServer) -> dict[str, int]:
    """Every key in Redis but the shared secret (kept for the deployment's life), with its TTL (-1: none)."""
    with redis.Redis.from_url(redis_server.url, socket_timeout=TIMEOUT) as keys:
        return {
            key.decode(): keys.ttl(key)
            for key in keys.scan_iter(count=1000)
            if not key.endswith(b":request-state-secret")
        }


def test_a_get_stream_resumes_on_another_worker_after_its_worker_is_killed(
    scaled: tuple[Hosted, RedisServer],
) -> None:
    hosted, redis_server = scaled
    url = hosted.base + "/mcp"
    heard = Heard()
    with http_client(url, era="handshake", timeout=TIMEOUT) as client:
        client.on_notification("notifications/resources/updated", lambda params: heard.add("updated", params))
        # The session's copies are made where its requests land: a few calls put it on more than one worker,
        # so that a copy outlives the worker killed below. Then the subscriptions, which every copy follows.
        # (The kernel chooses which worker accepts a connection, and under load one may win every time: the
        # first worker is stopped for the second call, which another worker accepts.)
        served = {client.call_tool("pid").structured_content["result"]}  # type: ignore[index]
        with stopped(served):
            served.add(client.call_tool("pid").structured_content["result"])  # type: ignore[index]
        assert len(served) == 2, served
        for uri in URIS:
            client.send_request("resources/subscribe", SubscribeRequestParams(uri=uri), EmptyResult)
        wait_until(lambda: len(stream_holders(hosted)) == 1, "one worker holds the GET stream")
        [holder] = stream_holders(hosted)
        assert raw_call(url, "touch", {"uri": URIS[0]})["content"][0]["text"].startswith(URIS[0])
        assert heard.wait_for(1) == [("updated", URIS[0])]

        os.kill(holder, signal.SIGKILL)
        # Raised by the other workers while the client is away (it waits the server's retry before resuming).
        for uri in URIS[1:6]:
            assert raw_call(url, "touch", {"uri": uri})["content"][0]["text"].startswith(uri)
        # Each once; raised by different workers, they are in the order the stream kept them (below).
        assert sorted(heard.wait_for(6)) == [("updated", uri) for uri in URIS[:6]]
        wait_until(lambda: len(stream_holders(hosted)) == 1, "another worker holds the resumed GET stream")
        assert stream_holders(hosted) != {holder}
        for uri in URIS[6:]:  # live, after the resume
            assert raw_call(url, "touch", {"uri": uri})["content"][0]["text"].startswith(uri)
        assert sorted(heard.wait_for(8)) == [("updated", uri) for uri in URIS]
        assert len(heard.items) == 8  # none twice
        assert [uri for _, uri in heard.items] == kept_updates(redis_server)  # in the stream's order
    # The client ended its session (DELETE): what is left of it in Redis expires.
    left = leftover_keys(redis_server)
    assert left and all(ttl > 0 for ttl in left.values()), left
    assert not [key for key in left if ":session:" in key or key.endswith(".get")], left


def test_a_call_whose_worker_is_killed_fails_with_a_typed_error_after_resuming(
    scaled: tuple[Hosted, RedisServer],
) -> None:
    """A POST's stream resumed on another worker replays what the dead one wrote, then ends: no answer will
    come (the handler died with its worker), so the client gives up after its attempts, with an error."""
    hosted, _ = scaled
    url = hosted.base + "/mcp"
    asked, killed = threading.Event(), threading.Event()

    def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.set()
        assert killed.wait(TIMEOUT)
        return CreateMessageResult(role="assistant", content=TextContent(text="too late"), model="test-model")

    with http_client(url, era="handshake", timeout=30.0, sampling_provider=sample) as client:
        wait_until(lambda: len(connections(hosted)) == 1, "the GET stream is open")
        [get_holder] = connections(hosted)
        failed: list[BaseException] = []

        def call() -> None:
            try:
                client.call_tool("ask", {"question": "Sky?"})
            except MCPError as error:
                failed.append(error)

        caller = threading.Thread(target=call, name="test-caller")
        caller.start()
        assert asked.wait(TIMEOUT)  # the handler waits for the answer, its POST's stream open
        wait_until(lambda: len(connections(hosted)) == 2, "the call's stream is open")
        post_holder = next(iter(set(connections(hosted)) - {get_holder}), get_holder)
        os.kill(post_holder, signal.SIGKILL)
        killed.set()
        caller.join(60)
        assert not caller.is_alive()
        [error] = failed
        assert "gave up resuming the answer to tools/call" in str(error), error
        assert client.call_tool("echo", {"text": "still served"}).text == "still served"


SDK_DRIVER = """
import json, sys, warnings
import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

warnings.simplefilter("ignore")
url, uris = sys.argv[1], sys.argv[2:]


async def main():
    heard = []
    changed = anyio.Event()

    async def on_message(message):
        nonlocal changed
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            heard.append(str(root.params.uri))
            changed.set()
            changed = anyio.Event()

    with anyio.fail_after(60):
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], message_handler=on_message) as session:
                await session.initialize()
                # First the copies of the session on two workers (see the test of our client): a call, then
                # another once the test has stopped the worker that answered. Then the subscriptions.
                pids = []
                for _ in range(2):
                    pids.append((await session.call_tool("pid", {})).structured_content["result"])
                    print(json.dumps({"answered": pids[-1]}), flush=True)
                    await anyio.to_thread.run_sync(sys.stdin.readline)
                for uri in uris:
                    await session.subscribe_resource(uri)
                print(json.dumps({"ready": sorted(pids)}), flush=True)
                while len(heard) < len(uris):
                    await changed.wait()
                print(json.dumps({"heard": heard}), flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)  # the test reads the stream first


anyio.run(main)
"""


@pytest.mark.interop
@pytest.mark.timeout(150)
def test_the_official_sdk_client_resumes_its_get_stream_on_another_worker(
    scaled: tuple[Hosted, RedisServer], tmp_path: Path
) -> None:
    hosted, redis_server = scaled
    url = hosted.base + "/mcp"
    driver = tmp_path / "driver.py"
    driver.write_text(SDK_DRIVER)
    process = subprocess.Popen(
        [peers.peer_python(), str(driver), url, *URIS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        env=peers.peer_environment(),
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        # Each read is bounded: the driver fails after 60 s.
        first = json.loads(process.stdout.readline() or "{}").get("answered")
        assert first is not None, process.stderr.read() if process.stderr else ""
        with stopped({first}):  # the driver's next call, made once told, lands on another worker
            process.stdin.write("\n")
            process.stdin.flush()
            second = json.loads(process.stdout.readline() or "{}").get("answered")
        assert second not in (None, first), process.stderr.read() if process.stderr else ""
        process.stdin.write("\n")
        process.stdin.flush()
        ready = json.loads(process.stdout.readline() or "{}")
        assert sorted(ready.get("ready", ())) == sorted({first, second}), (
            process.stderr.read() if process.stderr else ""
        )
        wait_until(lambda: len(stream_holders(hosted)) == 1, "one worker holds the SDK's GET stream")
        [holder] = stream_holders(hosted)
        assert raw_call(url, "touch", {"uri": URIS[0]})["content"][0]["text"].startswith(URIS[0])
        os.kill(holder, signal.SIGKILL)
        for uri in URIS[1:6]:  # while the SDK's client is away
            assert raw_call(url, "touch", {"uri": uri})["content"][0]["text"].startswith(uri)
        wait_until(lambda: len(stream_holders(hosted) - {holder}) == 1, "another worker holds the resumed stream")
        for uri in URIS[6:]:
            assert raw_call(url, "touch", {"uri": uri})["content"][0]["text"].startswith(uri)
        heard = json.loads(process.stdout.readline() or "{}").get("heard")  # bounded: the driver's own 60 s
        assert heard is not None and sorted(heard) == URIS  # every one, once
        assert heard == kept_updates(redis_server)  # in the stream's order
        _, err = process.communicate("\n", timeout=60)
        assert process.returncode == 0, err[-4000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=TIMEOUT)


# ------------------------------------------- two processes behind a per-request round robin


class RoundRobin:
    """A loopback TCP proxy sending each new connection to the next of ``ports``, in turn."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent: list[int] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, name="test-round-robin")
        self._accepting.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            port = self.ports[len(self.sent) % len(self.ports)]
            self.sent.append(port)
            upstream = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            for source, sink in ((client, upstream), (upstream, client)):
                pipe = threading.Thread(target=self._pipe, args=(source, sink), name="test-round-robin-pipe")
                pipe.start()
                self._threads.append(pipe)

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(0.2)
        try:
            while not self._closed.is_set():
                try:
                    data = source.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass  # the other side went away: the connection ends
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed.set()
        self._accepting.join(TIMEOUT)
        for thread in self._threads:
            thread.join(TIMEOUT)
        self._listener.close()


def test_two_processes_behind_a_per_request_round_robin_serve_one_handshake_session(tmp_path: Path) -> None:
    with running_redis(tmp_path / "redis.log") as redis_server:
        argv = gunicorn("-k", "gthread", "--threads", "8", "-w", "1", "--keep-alive", "0", SCALED_APP)
        env = {"MCP_SYNC_REDIS_URL": redis_server.url}
        with (
            hosting("machine-a", argv, tmp_path, sigterm_status=0, **env) as first,
            hosting("machine-b", argv, tmp_path, sigterm_status=0, **env) as second,
        ):
            proxy = RoundRobin([first.port, second.port])
            try:
                url = f"http://127.0.0.1:{proxy.port}/mcp"
                heard = Heard()
                with http_client(url, era="handshake", timeout=TIMEOUT) as client:
                    client.on_notification("notifications/resources/updated", lambda p: heard.add("updated", p))
                    client.send_request("resources/subscribe", SubscribeRequestParams(uri=URIS[0]), EmptyResult)
                    pids = {client.call_tool("pid").structured_content["result"] for _ in range(6)}  # type: ignore[index]
                    assert pids == workers_of(first) | workers_of(second)
                    progressed: list[float] = []
                    done = client.call_tool("progress", {"steps": 4}, progress=lambda p: progressed.append(p.progress))
                    assert done.text == "4 steps" and progressed == [1, 2, 3, 4]
                    for _ in range(4):  # served by both, heard once each
                        assert client.call_tool("touch", {"uri": URIS[0]}).text.startswith(URIS[0])
                    assert heard.wait_for(4) == [("updated", URIS[0])] * 4
                    assert len(heard.items) == 4
                assert {first.port, second.port} <= set(proxy.sent)
            finally:
                proxy.close()
            left = leftover_keys(redis_server)
            assert all(ttl > 0 for ttl in left.values()), left
