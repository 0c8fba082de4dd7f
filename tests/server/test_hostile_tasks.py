"""Hostile input against the tasks extension, skills and directory reads: what an outside fuzzer would send.

A seeded generator makes malformed requests for every new method (wrong
types for each parameter, missing parameters, huge and odd strings, null
ids, forged, foreign and expired task ids, answers to questions never asked
or of the wrong shape, answering twice, cancelling a finished task,
updating a cancelled one, an ``Mcp-Name`` that is not the task's). They go
over a real loopback HTTP socket (2026-07-28) and to a real stdio
subprocess (2025-11-25, where the client declared both the extension and
the older ``tasks`` capability). Every message must get a well-formed
JSON-RPC answer with its id, within the request timeout, and an error code
that blames the request (never ``-32603``); afterwards the server still
answers a plain call and every task started is finished or forgotten.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import end_raw_peer
from servers.tasks_server import build_server

from mcp_sync import MCPServer
from mcp_sync.protocol.frontmatter import parse_frontmatter
from mcp_sync.protocol.stateless import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION
from mcp_sync.protocol.tasks import EXTENSION, is_terminal
from mcp_sync.server import RunningHTTPServer, start_http

SEED = 20261201
TIMEOUT = 10.0
REVISION = "2026-07-28"
ROOT = Path(__file__).resolve().parent.parent.parent
SKILLS = "io.modelcontextprotocol/skills"
CAPABILITIES = {"elicitation": {}, "sampling": {}, "roots": {}, "extensions": {EXTENSION: {}, SKILLS: {}}}
# What a bad request may be answered with: invalid request or params, unknown method, the HTTP
# header mismatch (-32020), a missing client capability (-32021). Never -32603: that blames the server.
BLAMES_THE_REQUEST = {-32600, -32601, -32602, -32020, -32021}
HEADER_LIMIT = 4096  # longer names are sent without their Mcp-Name header (a header that long is refused as HTTP)

PARAMETERS = {
    "tools/call": ("name", "arguments", "task"),
    "tasks/get": ("taskId",),
    "tasks/update": ("taskId", "inputResponses"),
    "tasks/cancel": ("taskId",),
    "tasks/result": ("taskId",),
    "tasks/list": ("cursor",),
    "subscriptions/listen": ("notifications",),
    "skills/list": ("cursor",),
    "skills/get": ("uri",),
    "resources/directory/read": ("uri", "cursor"),
}


def junk(rng: random.Random) -> list[Any]:
    """Values of every JSON type, odd strings among them (a few drawn from ``rng``)."""
    noise = "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0xD800)])) for _ in range(40))
    return [
        None,
        0,
        -1,
        2**70,
        1.5,
        True,
        "",
        "x" * 200_000,
        "\u0000\u202e\U0001f600" + noise,
        "../../../etc/passwd",
        "skill://../SKILL.md",
        "-rf",
        [],
        [None],
        {},
        {"taskIds": 5, "nested": {"deep": [[[[[]]]]]}},
    ]


def valid(method: str, task_id: str) -> dict[str, Any]:
    """Well-formed parameters of ``method``, which the generator then spoils one at a time."""
    return {
        "tools/call": {"name": "slow", "arguments": {"seconds": 0}},
        "tasks/get": {"taskId": task_id},
        "tasks/update": {"taskId": task_id, "inputResponses": {}},
        "tasks/cancel": {"taskId": task_id},
        "tasks/result": {"taskId": task_id},
        "tasks/list": {},
        "subscriptions/listen": {"notifications": {"taskIds": [task_id]}},
        "skills/list": {},
        "skills/get": {"uri": "skill://hello/SKILL.md"},
        "resources/directory/read": {"uri": "skill://hello"},
    }[method]


def spoiled(rng: random.Random, task_id: str) -> Iterator[tuple[str, Any]]:
    """Every method with each parameter replaced by junk or left out, and params that are no object at all."""
    for method, names in PARAMETERS.items():
        for name in names:
            for value in junk(rng):
                params = valid(method, task_id)
                params[name] = value
                yield method, params
            params = valid(method, task_id)
            params.pop(name, None)
            yield method, params
        for params in (None, [], "params", 7):
            yield method, params
        for meta in (None, 5, [], {CLIENT_CAPABILITIES: 5}, {CLIENT_CAPABILITIES: {"extensions": []}}):
            yield method, {**valid(method, task_id), "_meta": meta}
    yield "tasks/nonsense", {}
    yield "", {}


def check(answer: Any, request_id: Any) -> dict[str, Any]:
    """``answer`` is a JSON-RPC answer to ``request_id``; an error in it blames the request."""
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", answer
    assert answer.get("id") == request_id, answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error.get("message"), str), answer
        assert error.get("code") in BLAMES_THE_REQUEST, str(answer)[:500]
    return answer


# ------------------------------------------------------------------- HTTP


class Http:
    """Raw 2026-07-28 messages to one server, each checked as it is answered."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.ids = iter(range(1, 1_000_000))

    def send(self, method: str, params: Any, name: str | None = None) -> dict[str, Any]:
        request_id = next(self.ids)
        if isinstance(params, dict) and "_meta" not in params:  # the generator's own _meta is sent as it is
            params = dict(params)
            params["_meta"] = {
                PROTOCOL_VERSION: REVISION,
                CLIENT_INFO: {"name": "hostile", "version": "1"},
                CLIENT_CAPABILITIES: CAPABILITIES,
            }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": REVISION,
            "Mcp-Method": method,
        }
        if name is None and isinstance(params, dict):
            named = params.get("name", params.get("taskId"))
            name = named if isinstance(named, str) else None
        if (
            name is not None
            and len(name) < HEADER_LIMIT
            and name.isascii()
            and name.isprintable()
            and name == name.strip()
        ):
            headers["Mcp-Name"] = name
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        with self.http.post(self.url, json=message, headers=headers, timeout=TIMEOUT, stream=True) as response:
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                # A listen stream stays open: its first message is an error or the acknowledgement.
                for line in response.iter_lines(decode_unicode=True):
                    if line.startswith("data:"):
                        first = json.loads(line[5:])
                        if first.get("method") == "notifications/subscriptions/acknowledged":
                            assert method == "subscriptions/listen", first
                            return {"jsonrpc": "2.0", "id": request_id, "result": {"acknowledged": first}}
                        if "id" in first:
                            return check(first, request_id)
                raise AssertionError(f"the stream for {method} ended unanswered")
            return check(response.json(), request_id)

    def result(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        answer = self.send(method, params, name)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, method: str, params: dict[str, Any], name: str | None = None) -> int:
        answer = self.send(method, params, name)
        assert "error" in answer, answer
        return int(answer["error"]["code"])

    def start(self, tool: str, arguments: dict[str, Any]) -> str:
        created = self.result("tools/call", {"name": tool, "arguments": arguments})
        assert created["resultType"] == "task", created
        return str(created["taskId"])

    def status(self, task_id: str) -> str | None:
        """The task's status, ``None`` once it is forgotten."""
        answer = self.send("tasks/get", {"taskId": task_id})
        return answer["result"]["status"] if "result" in answer else None

    def settled(self, task_id: str, done: Any = is_terminal) -> str | None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            status = self.status(task_id)
            if status is None or done(status) or time.monotonic() > deadline:
                return status
            time.sleep(0.02)  # a polling interval, not a synchronisation


def skills_root(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    (root / "hello" / "sub").mkdir(parents=True)
    (root / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: Says hello\n---\nHello.\n")
    (root / "hello" / "sub" / "notes.txt").write_text("notes")
    return root


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[MCPServer, RunningHTTPServer]]:
    gate = threading.Event()
    server = build_server(gate)
    server.add_skills(skills_root(tmp_path))
    running = start_http(server)
    try:
        yield server, running
    finally:
        gate.set()
        running.close()
        server.stop()


def test_malformed_requests_over_http_are_refused_cleanly(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    server, running = served
    peer = Http(running.url)
    rng = random.Random(SEED)
    waiting = peer.start("ask", {})
    for method, params in spoiled(rng, waiting):
        peer.send(method, params)
    assert peer.settled(waiting, lambda status: status == "input_required") == "input_required"
    peer.result("tasks/cancel", {"taskId": waiting})
    assert peer.settled(waiting) == "cancelled"
    assert peer.result("tools/call", {"name": "plain", "arguments": {"name": "Ada"}})["content"][0]["text"] == (
        "Hello, Ada!"
    )
    deadline = time.monotonic() + TIMEOUT
    while not all(is_terminal(record.status) for record in server.tasks.store.records()):
        assert time.monotonic() < deadline, server.tasks.store.records()
        time.sleep(0.02)  # a polling interval on the store
    assert server.tasks.store.records()  # the generator did start tasks


def test_adversarial_task_sequences_over_http(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    server, running = served
    peer = Http(running.url)
    rng = random.Random(SEED + 1)
    started: list[str] = []

    # Forged ids: random hex, an id of another server, one in the wrong case.
    done = peer.start("slow", {"seconds": 0})
    started.append(done)
    assert peer.settled(done) == "completed"
    for forged in (rng.randbytes(16).hex(), done.upper(), done + "0", done[:-1], " " + done):
        for method in ("tasks/get", "tasks/cancel"):
            assert peer.error(method, {"taskId": forged}) == -32602
        assert peer.error("tasks/update", {"taskId": forged, "inputResponses": {"k": {}}}) == -32602

    # An Mcp-Name that is not the task's, for each method routed by it.
    for method, params in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
        assert peer.error(method, {"taskId": done, **params}, name=done[::-1]) == -32020

    # Cancel after completion is an empty ack and changes nothing; so is an update of a finished task.
    assert peer.result("tasks/cancel", {"taskId": done})["resultType"] == "complete"
    assert peer.result("tasks/update", {"taskId": done, "inputResponses": {"x": 1}})["resultType"] == "complete"
    assert peer.status(done) == "completed"

    # Answers of the wrong shape, to unknown keys, then twice.
    for garbage in (None, 5, "accept", [], {"action": "maybe"}, {"action": "accept", "content": [1, 2]}):
        asking = peer.start("ask", {})
        started.append(asking)
        assert peer.settled(asking, lambda status: status != "working") == "input_required"
        [key] = peer.result("tasks/get", {"taskId": asking})["inputRequests"]
        unknown = {"not-" + key: {"action": "accept", "content": {"name": "Eve"}}, "": None, "\u0000": {}}
        assert peer.result("tasks/update", {"taskId": asking, "inputResponses": unknown})["resultType"] == "complete"
        assert peer.status(asking) == "input_required"  # answers to questions never asked are ignored
        peer.result("tasks/update", {"taskId": asking, "inputResponses": {key: garbage}})
        peer.result("tasks/update", {"taskId": asking, "inputResponses": {key: garbage}})  # twice
        assert peer.settled(asking) == "failed"
        failed = peer.result("tasks/get", {"taskId": asking})
        assert failed["error"]["code"] != -32603, failed  # a bad answer is the client's fault

    answered = peer.start("ask", {})
    started.append(answered)
    peer.settled(answered, lambda status: status != "working")
    [key] = peer.result("tasks/get", {"taskId": answered})["inputRequests"]
    good = {key: {"action": "accept", "content": {"name": "Bo"}}}
    peer.result("tasks/update", {"taskId": answered, "inputResponses": good})
    peer.result("tasks/update", {"taskId": answered, "inputResponses": good})  # answering twice
    assert peer.settled(answered) == "completed"
    assert peer.result("tasks/get", {"taskId": answered})["result"]["content"][0]["text"] == "Hello, Bo!"

    # Update after cancel: acknowledged, the task stays cancelled.
    gated = peer.start("slow", {"seconds": 60})
    started.append(gated)
    peer.result("tasks/cancel", {"taskId": gated})
    peer.result("tasks/cancel", {"taskId": gated})
    peer.result("tasks/update", {"taskId": gated, "inputResponses": {"any": {"action": "decline"}}})
    assert peer.settled(gated) == "cancelled"

    # An expired task is as unknown as a forged one.
    server.tasks.ttl_ms = 1
    expired = peer.start("slow", {"seconds": 0})
    server.tasks.ttl_ms = 60_000
    assert peer.settled(expired, lambda status: False) is None  # forgotten once its millisecond is up
    for method in ("tasks/get", "tasks/cancel"):
        assert peer.error(method, {"taskId": expired}) == -32602

    # A listen with a malformed taskIds must not break the tasks of other clients.
    listen = {"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen"}
    listen["params"] = {
        "notifications": {"taskIds": 5},
        "_meta": {PROTOCOL_VERSION: REVISION, CLIENT_INFO: {"name": "h", "version": "1"}, CLIENT_CAPABILITIES: {}},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "subscriptions/listen",
    }
    listen["params"]["_meta"][CLIENT_CAPABILITIES] = CAPABILITIES
    with requests.post(running.url, json=listen, headers=headers, stream=True, timeout=TIMEOUT) as stream:
        first = next(line for line in stream.iter_lines(decode_unicode=True) if line.startswith("data:"))
        assert "error" in json.loads(first[5:]) or "acknowledged" in first
        other = peer.start("ask", {})
        started.append(other)
        peer.settled(other, lambda status: status != "working")
        [key] = peer.result("tasks/get", {"taskId": other})["inputRequests"]
        peer.result("tasks/update", {"taskId": other, "inputResponses": {key: {"action": "decline"}}})
        assert peer.settled(other) == "completed"
        assert peer.result("tasks/get", {"taskId": other})["result"]["content"][0]["text"] == "(decline)"

    assert peer.result("tools/call", {"name": "plain", "arguments": {"name": "Ada"}})["resultType"] == "complete"
    assert all(peer.settled(task_id) in {"completed", "failed", "cancelled", None} for task_id in started)
    deadline = time.monotonic() + TIMEOUT
    while server.tasks.running() and time.monotonic() < deadline:
        time.sleep(0.02)  # a polling interval on the runner's own count
    assert server.tasks.running() == 0


def test_odd_envelopes_and_headers_over_http(served: tuple[MCPServer, RunningHTTPServer]) -> None:
    """Null and odd ids, batches, no JSON at all, and headers naming another method or tool: a 400 that says why."""
    _, running = served
    meta = {PROTOCOL_VERSION: REVISION, CLIENT_INFO: {"name": "h", "version": "1"}, CLIENT_CAPABILITIES: CAPABILITIES}
    get = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"taskId": "abc", "_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": REVISION,
        "Mcp-Method": "tasks/get",
        "Mcp-Name": "abc",
    }
    bodies: list[tuple[Any, int]] = [({**get, "id": odd}, -32600) for odd in (None, [], {}, 1.5, True)]
    bodies += [({**get, "id": 1, "jsonrpc": "1.0"}, -32600), ([{**get, "id": 1}], -32600), ([], -32600)]
    bodies += [(value, -32600) for value in ("x", 5, None)]
    for body, code in bodies:
        response = requests.post(running.url, data=json.dumps(body), headers=headers, timeout=TIMEOUT)
        assert response.status_code == 400 and response.json()["error"]["code"] == code, (body, response.text)
    for raw in (b"{", b"\xff\xfe", b"", json.dumps({**get, "id": 1}).encode()[:-3]):
        response = requests.post(running.url, data=raw, headers=headers, timeout=TIMEOUT)
        answer = response.json()
        assert response.status_code == 400 and answer["error"]["code"] == -32700 and answer["id"] is None, raw
    mismatched = [
        ({**get, "id": 1}, {"Mcp-Method": "tasks/cancel"}),
        ({**get, "id": 1}, {"Mcp-Name": "abd"}),
        (
            {**get, "id": 1, "method": "tools/call", "params": {"name": "plain", "_meta": meta}},
            {"Mcp-Method": "tools/call"},
        ),
    ]
    for body, changed in mismatched:
        response = requests.post(running.url, json=body, headers={**headers, **changed}, timeout=TIMEOUT)
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020, response.text


def test_a_frontmatter_line_with_a_long_run_of_blanks_is_read_in_one_pass() -> None:
    """A hostile SKILL.md (a client reads the server's): 200,000 blanks in a plain value.

    Searching for the comment from each blank made this quadratic (minutes,
    past the suite's per-test timeout); read in one pass it is immediate.
    """
    blanks = " \t" * 100_000
    text = f"---\nname: hello\ndescription: x{blanks}y\nmetadata:\n  note: a{blanks}# said{blanks}\n---\n"
    assert parse_frontmatter(text) == {
        "name": "hello",
        "description": f"x{blanks}y",
        "metadata": {"note": "a"},
    }


# ------------------------------------------------------------------- stdio


class Stdio:
    """The hostile test server in a subprocess, spoken to line by line at 2025-11-25."""

    def __init__(self, skills: Path, *options: str, answering: bool = True) -> None:
        self.answering = answering
        self._writing = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "servers" / "hostile_server.py"), str(skills), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            cwd=ROOT / "tests" / "servers",
        )
        self.ids = iter(range(1, 1_000_000))
        self.answers: dict[Any, dict[str, Any]] = {}
        self.every: list[dict[str, Any]] = []  # answers to requests not sent by send()
        self.asked: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="test-hostile-stdio-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            with self._arrived:
                if "method" in message and "id" in message:
                    self.asked.append(message)
                    if self.answering:  # a client that answers: no roots, no to every question
                        answer = {"roots": []} if message["method"] == "roots/list" else {"action": "decline"}
                        self.write({"jsonrpc": "2.0", "id": message["id"], "result": answer})
                elif isinstance(message.get("id"), int):
                    self.answers[message["id"]] = message
                elif "id" in message:
                    self.every.append(message)
                self._arrived.notify_all()

    def write(self, message: Any) -> None:
        assert self.process.stdin is not None
        with self._writing:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()

    def send(self, method: str, params: Any) -> dict[str, Any]:
        request_id = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        deadline = time.monotonic() + TIMEOUT
        with self._arrived:
            while request_id not in self.answers:
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {method} {str(params)[:200]}"
                self._arrived.wait(left)
            return check(self.answers.pop(request_id), request_id)

    def result(self, method: str, params: Any) -> Any:
        answer = self.send(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def close(self) -> None:
        end_raw_peer(self.process, self._reader, TIMEOUT)


LEGACY_ONLY = {"elicitation": {}, "tasks": {"list": {}, "cancel": {}}}
BOTH = {**CAPABILITIES, "tasks": {"list": {}, "cancel": {}}}


@pytest.mark.parametrize(
    ("capabilities", "options"),
    [(BOTH, ()), (LEGACY_ONLY, ()), (BOTH, ("--proxy",))],
    ids=["extension-declared-too", "2025-11-25-form", "extension-through-a-proxy"],
)
def test_malformed_requests_over_stdio_are_refused_cleanly(
    tmp_path: Path, capabilities: dict[str, Any], options: tuple[str, ...]
) -> None:
    peer = Stdio(skills_root(tmp_path), *options)
    try:
        info = {"name": "hostile", "version": "1"}
        peer.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": info})
        peer.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        rng = random.Random(SEED + 2)
        created = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0}, "task": {}})
        if options:  # the proxy follows the task upstream itself and serves no tasks/*
            assert created["content"][0]["text"] == "done" and "taskId" not in created
            task_id = "0" * 32
        else:
            task_id = created["task"]["taskId"]  # the core form: the extension is no handshake revision's
        for method, params in spoiled(rng, task_id):
            if method != "subscriptions/listen":  # a 2026-07-28 method: -32601 here, checked below once
                peer.send(method, params)
        assert peer.send("subscriptions/listen", {"notifications": {}})["error"]["code"] in BLAMES_THE_REQUEST
        # Null and odd request ids are answered (or refused) without taking the server down.
        for odd in (None, [], {}, 1.5, True):
            peer.write({"jsonrpc": "2.0", "id": odd, "method": "tasks/get", "params": {"taskId": task_id}})
        peer.write({"jsonrpc": "2.0", "id": "dup", "method": "tasks/list"})
        peer.write({"jsonrpc": "2.0", "id": "dup", "method": "tasks/list"})
        # Deadline poll on what arrived: each odd id refused as an invalid request (id null), each "dup" answered.
        deadline = time.monotonic() + TIMEOUT
        while len(peer.every) < 7 and time.monotonic() < deadline:
            time.sleep(0.02)
        refused = [answer for answer in peer.every if answer["id"] is None]
        assert len(refused) == 5 and all(answer["error"]["code"] == -32600 for answer in refused), refused
        assert [answer["id"] for answer in peer.every if answer["id"] == "dup"] == ["dup", "dup"]
        for answer in peer.every:
            check(answer, answer["id"])
        if capabilities is LEGACY_ONLY:
            # Retention asked for in every odd way: never beyond the server's own TTL (an hour).
            for ttl in (None, -5, 0, True, 2**70, "long", 1.5, 60_000):
                legacy = peer.result("tools/call", {"name": "slow", "arguments": {"seconds": 0}, "task": {"ttl": ttl}})
                assert legacy["task"]["ttl"] == (60_000 if ttl == 60_000 else 60 * 60 * 1000), (ttl, legacy)
                result = peer.result("tasks/result", {"taskId": legacy["task"]["taskId"]})
                assert result["content"][0]["text"] == "done"
            for task in peer.result("tasks/list", {})["tasks"]:
                assert is_terminal(task["status"]), task
        assert peer.result("tools/call", {"name": "plain", "arguments": {"name": "Ada"}})["content"][0]["text"] == (
            "Hello, Ada!"
        )
        deadline = time.monotonic() + TIMEOUT
        while not options and not is_terminal(peer.result("tasks/get", {"taskId": task_id})["status"]):
            assert time.monotonic() < deadline
            time.sleep(0.02)  # a polling interval, not a synchronisation
    finally:
        peer.close()
    assert peer.process.returncode == 0


def test_a_proxy_whose_client_leaves_unanswering_stops_at_once(tmp_path: Path) -> None:
    """The proxy opens a session's upstream at its first request, asking the client for its roots meanwhile.

    A client that never answers and closes stdin: the process ends within the
    timeout (it waited a minute for the roots it would never get).
    """
    peer = Stdio(skills_root(tmp_path), "--proxy", answering=False)
    try:
        info = {"name": "hostile", "version": "1"}
        peer.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": info})
        peer.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        peer.write({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "plain", "arguments": {}}})
        deadline = time.monotonic() + TIMEOUT
        while not peer.asked and time.monotonic() < deadline:
            time.sleep(0.02)  # a polling interval on what arrived
        assert [question["method"] for question in peer.asked] == ["roots/list"]
    finally:
        peer.close()
    assert peer.process.returncode == 0
