"""Hostile input on the server's wire, over stdio and HTTP: what an outside fuzzer found, each fixed and kept so.

- A request before ``initialize``, or a second ``initialize``, is the
  client's mistake: ``-32600`` (Invalid Request), never ``-32603`` (which
  blames the server).
- A broken answer to a request of the server's own (``roots/list`` asked by
  a tool): unparseable, a ``result`` that is not an object, a malformed
  ``error``, or a line too long. It fails the handler's call at once, where
  the call used to wait out its timeout; and it is never answered, where an
  unparseable one used to get a ``-32700`` carrying the server's own id,
  which the client would take for the answer to a request of its own with
  the same id.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import end_raw_peer
from servers.wire_server import build_server

from mcp_sync.protocol.jsonrpc import decode_message, reads_as_response, recover_id
from mcp_sync.server import RunningHTTPServer, start_http

ROOT = Path(__file__).resolve().parent.parent.parent
WIRE_SERVER = ROOT / "tests" / "servers" / "wire_server.py"
REVISION = "2025-11-25"
TIMEOUT = 10.0
INIT = {"protocolVersion": REVISION, "capabilities": {"roots": {}}, "clientInfo": {"name": "fuzz", "version": "1"}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

Answer = Callable[[Any], bytes]
"""How a hostile client answers the server's request with id ``id``: the raw message."""

BROKEN_ANSWERS: dict[str, Answer] = {
    "unparseable": lambda i: b'{"jsonrpc":"2.0","id":%s,"result":{"roots":NaN}}' % json.dumps(i).encode(),
    "result-not-an-object": lambda i: b'{"jsonrpc":"2.0","id":%s,"result":5}' % json.dumps(i).encode(),
    "malformed-error": lambda i: b'{"jsonrpc":"2.0","id":%s,"error":{"code":"x"}}' % json.dumps(i).encode(),
}


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def tool_text(answer: dict[str, Any]) -> str:
    text: str = answer["result"]["content"][0]["text"]
    return text


# ------------------------------------------------------------------- stdio


class StdioPeer:
    """tests/servers/wire_server.py in a subprocess, spoken to in raw lines; ``answer`` answers its requests."""

    def __init__(self, *args: str, answer: Answer | None = None) -> None:
        self.answer = answer
        self.process = subprocess.Popen(
            [sys.executable, str(WIRE_SERVER), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self.received: list[dict[str, Any]] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="test-wire-stdio-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if "method" in message and "id" in message and self.answer is not None:
                self.write(self.answer(message["id"]))
            with self._arrived:
                self.received.append(message)
                self._arrived.notify_all()

    def write(self, line: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        text = line.decode() if isinstance(line, bytes) else json.dumps(line)
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def answer_to(self, request_id: Any) -> dict[str, Any]:
        """The one answer to our request ``request_id`` (waiting for it)."""
        deadline = time.monotonic() + TIMEOUT
        with self._arrived:
            while not (found := self.answers(request_id)):
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {request_id!r}; received {self.received}"
                self._arrived.wait(left)
        assert len(found) == 1, found
        return found[0]

    def answers(self, request_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.received if "method" not in m and m.get("id") == request_id]

    def initialize(self) -> None:
        self.write({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT})
        assert "result" in self.answer_to("init")
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        end_raw_peer(self.process, self._reader, TIMEOUT)
        assert self.process.returncode == 0


@pytest.fixture
def peer() -> Iterator[StdioPeer]:
    peer = StdioPeer()
    yield peer
    peer.close()


def test_requests_before_initialize_and_a_second_initialize_are_invalid_requests_over_stdio(peer: StdioPeer) -> None:
    peer.write({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    error = peer.answer_to(1)["error"]
    assert error["code"] == -32600 and "before initialize" in error["message"]
    peer.initialize()
    peer.write({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {**INIT, "protocolVersion": "2025-06-18"}})
    error = peer.answer_to(2)["error"]
    assert error["code"] == -32600 and "initialize was already done" in error["message"]
    # The session goes on at the revision it agreed.
    peer.write({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert [tool["name"] for tool in peer.answer_to(3)["result"]["tools"]] == ["echo", "roots"]


def asked_ids(peer: StdioPeer) -> list[Any]:
    return [m["id"] for m in peer.received if m.get("method") == "roots/list"]


@pytest.mark.parametrize("answer", BROKEN_ANSWERS.values(), ids=BROKEN_ANSWERS.keys())
def test_a_broken_answer_fails_the_handlers_call_at_once_and_is_never_answered_over_stdio(answer: Answer) -> None:
    peer = StdioPeer(answer=answer)
    try:
        peer.initialize()
        peer.write(call(7, "roots", {}))
        text = tool_text(peer.answer_to(7))
        assert text.startswith("failed: [MCP.PROTOCOL_INVALID] the peer answered roots/list with an invalid response")
        # The server's own request id got no answer from the server.
        [asked] = asked_ids(peer)
        assert peer.answers(asked) == []
        # The session goes on.
        peer.write(call(8, "echo", {"text": "after"}))
        assert tool_text(peer.answer_to(8)) == "after"
    finally:
        peer.close()


def test_an_answer_too_long_fails_the_handlers_call_at_once_over_stdio() -> None:
    padding = "x" * 5000
    peer = StdioPeer(
        "4096",
        answer=lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "result": {"roots": [], "pad": padding}}).encode(),
    )
    try:
        peer.initialize()
        peer.write(call(7, "roots", {}))
        text = tool_text(peer.answer_to(7))
        assert "invalid response: Invalid request: message larger than the limit of 4096 bytes" in text
        assert peer.answers(asked_ids(peer)[0]) == []
        # A request that long is still answered, with its id.
        peer.write(call(8, "echo", {"text": padding}))
        assert peer.answer_to(8)["error"]["code"] == -32600
    finally:
        peer.close()


def test_an_unparseable_answer_to_nothing_is_dropped_and_an_unparseable_request_still_answered(
    peer: StdioPeer,
) -> None:
    peer.initialize()
    peer.write(BROKEN_ANSWERS["unparseable"](41))
    peer.write(b'{"jsonrpc":"2.0","id":42,"method":"ping","params":{"x":NaN}}')
    assert peer.answer_to(42)["error"]["code"] == -32700
    peer.write({"jsonrpc": "2.0", "id": 43, "method": "ping"})
    assert peer.answer_to(43) == {"jsonrpc": "2.0", "id": 43, "result": {}}
    assert peer.answers(41) == []


# -------------------------------------------------------------------- the scan


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}', True),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":NaN}}', True),
        (b'{"error" : 1, "id": 2', True),  # cut short, after the key
        (b'{"jsonrpc":"2.0","id":1,"method":"x","result":NaN}', False),  # a request carrying a result
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"result":NaN}}', False),
        (b'{"jsonrpc":"2.0","id":1,"params":{"result":1,"error":NaN}}', False),  # nested keys do not count
        (b'[{"result":{}}, NaN]', False),
        (b'{"x":"result","y":["error"]:NaN}', False),  # strings that are values, not keys
        (b"\xff\xfe", False),
    ],
)
def test_reads_as_response_looks_at_the_top_level_keys_only(raw: bytes, expected: bool) -> None:
    assert reads_as_response(raw) is expected


def test_the_id_scan_still_reads_only_the_top_level_id() -> None:
    assert recover_id(b'{"params":{"id":5},"id":6,"x":NaN}') == 6
    assert recover_id(b'{"params":{"id":5},"x":NaN}') is None
    assert decode_message(b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}').id.token == "1.0"  # type: ignore[union-attr]


# --------------------------------------------------------------------- HTTP


@pytest.fixture
def running() -> Iterator[RunningHTTPServer]:
    with start_http(build_server()) as running:
        yield running


def open_session(url: str) -> dict[str, str]:
    answer = requests.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, headers=HEADERS, timeout=TIMEOUT
    )
    headers = {**HEADERS, "Mcp-Session-Id": answer.headers["Mcp-Session-Id"], "MCP-Protocol-Version": REVISION}
    notified = requests.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert notified.status_code == 202
    return headers


def test_a_second_initialize_is_an_invalid_request_over_http(running: RunningHTTPServer) -> None:
    headers = open_session(running.url)
    body = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": INIT}
    answer = requests.post(running.url, json=body, headers=headers, timeout=TIMEOUT)
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert error["code"] == -32600 and "initialize was already done" in error["message"]


def events(response: requests.Response) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response, as they come."""
    for line in response.iter_lines():
        if line.startswith(b"data:") and line[5:].strip():
            yield json.loads(line[5:])


def roots_call_answered_by(url: str, headers: dict[str, str], post_answer: Callable[[Any], requests.Response]) -> str:
    """Call the ``roots`` tool; answer its question with ``post_answer``, which must be refused with 400; the
    tool's text."""
    with requests.post(url, json=call(5, "roots", {}), headers=headers, stream=True, timeout=TIMEOUT) as response:
        stream = events(response)
        asked = next(stream)
        assert asked["method"] == "roots/list"
        refused = post_answer(asked["id"])
        assert refused.status_code == 400
        assert refused.json()["id"] is None  # the server's own id is not the client's to be told of
        answer = next(stream)
    assert answer["id"] == 5
    return tool_text(answer)


@pytest.mark.parametrize("answer", BROKEN_ANSWERS.values(), ids=BROKEN_ANSWERS.keys())
def test_a_broken_answer_fails_the_handlers_call_at_once_over_http(running: RunningHTTPServer, answer: Answer) -> None:
    headers = open_session(running.url)

    def post(request_id: Any) -> requests.Response:
        return requests.post(running.url, data=answer(request_id), headers=headers, timeout=TIMEOUT)

    text = roots_call_answered_by(running.url, headers, post)
    assert text.startswith("failed: [MCP.PROTOCOL_INVALID] the peer answered roots/list with an invalid response")
    assert tool_text(requests.post(running.url, json=call(6, "echo", {"text": "on"}), headers=headers).json()) == "on"


def test_a_broken_answer_naming_no_session_or_another_is_refused_and_reaches_no_call(
    running: RunningHTTPServer,
) -> None:
    headers = open_session(running.url)
    strangers = [{k: v for k, v in headers.items() if k != "Mcp-Session-Id"}, {**headers, "Mcp-Session-Id": "x"}]

    def post(request_id: Any) -> requests.Response:
        for stranger in strangers:
            refused = requests.post(running.url, data=BROKEN_ANSWERS["unparseable"](request_id), headers=stranger)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700
        good = {"jsonrpc": "2.0", "id": request_id, "result": {"roots": []}}
        requests.post(running.url, json=good, headers=headers, timeout=TIMEOUT)
        return requests.post(running.url, data=b'{"jsonrpc":"2.0","result":{}}', headers=headers, timeout=TIMEOUT)

    assert roots_call_answered_by(running.url, headers, post) == "0 roots"


def test_a_broken_answer_fails_the_handlers_call_at_once_over_legacy_sse(running: RunningHTTPServer) -> None:
    base = running.url.rsplit("/", 1)[0]
    with requests.get(f"{base}/sse", headers={"Accept": "text/event-stream"}, stream=True, timeout=TIMEOUT) as stream:
        lines = stream.iter_lines()
        assert next(lines) == b"event: endpoint"
        endpoint = base + next(lines).decode().removeprefix("data: ")
        messages = events(stream)

        def post(body: Any) -> requests.Response:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            return requests.post(endpoint, data=data, headers=HEADERS, timeout=TIMEOUT)

        assert post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).status_code == 202
        assert next(messages)["id"] == 1
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        post(call(5, "roots", {}))
        asked = next(messages)
        assert asked["method"] == "roots/list"
        assert post(BROKEN_ANSWERS["unparseable"](asked["id"])).status_code == 400
        answer = next(messages)
    assert answer["id"] == 5
    assert tool_text(answer).startswith("failed: [MCP.PROTOCOL_INVALID] the peer answered roots/list")
