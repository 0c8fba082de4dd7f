"""The client against a misbehaving task server: every call ends in a result or a typed error, without spinning.

The server is the scripted JSON-RPC peer of ``test_tasks_wire.py``; a
seeded generator makes its ``tasks/get`` answers: malformed task shapes,
statuses going backwards, a terminal status without its result, poll
intervals of zero, below zero, huge or of the wrong type, ``inputRequests``
full of garbage. Whatever it says, ``call_tool`` ends within its timeout
with a result or an :class:`MCPError`, having polled no more often than
:data:`MIN_POLL_INTERVAL` allows; handles polled by the client's poller
thread end the same way, and one handle's trouble never stops the others.
"""

from __future__ import annotations

import concurrent.futures
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from test_tasks_wire import TOOLS, Peer, ask_colour, polled, task, text_result, wait_for

from mcp_sync import MCPClient
from mcp_sync.client.tasks import MIN_POLL_INTERVAL
from mcp_sync.protocol.errors import MCP_CODES, MCPError

SEED = 20261201
LIMIT = 0.2  # each call's own timeout, in seconds
WAIT = 10.0
FORM_QUESTION = {
    "method": "elicitation/create",
    "params": {"message": "Colour?", "requestedSchema": {"type": "object", "properties": {}}},
}


def interval(value: Any, legacy: bool, **fields: Any) -> dict[str, Any]:
    """A working task whose suggested poll interval is ``value``."""
    wire = task(legacy=legacy, **fields)
    wire["pollInterval" if legacy else "pollIntervalMs"] = value
    return wire


def garbage(rng: random.Random, legacy: bool) -> dict[str, Any]:
    """One hostile ``tasks/get`` answer."""
    odd = rng.choice([None, 5, -1, "", "x" * 10_000, [], {}, [1, 2], {"a": {"b": None}}, True, 1.5, "\u0000\u202e"])
    status = rng.choice(["working", "input_required", "completed", "failed", "cancelled", "bogus", "WORKING"])
    return rng.choice(
        [
            lambda: {"taskId": "t1"},
            lambda: {"status": status},
            lambda: task(legacy=legacy, status=odd),
            lambda: {**task(legacy=legacy, status=status), "taskId": odd},
            lambda: task("another", status, legacy=legacy),
            lambda: task(legacy=legacy, status="completed"),
            lambda: task(legacy=legacy, status="completed", result=odd),
            lambda: task(legacy=legacy, status="completed", result={"content": odd}),
            lambda: task(legacy=legacy, status="failed"),
            lambda: task(legacy=legacy, status="failed", error=odd),
            lambda: task(legacy=legacy, status="failed", error={"code": odd, "message": odd, "data": odd}),
            lambda: task(legacy=legacy, status=status, statusMessage=odd),
            lambda: task(legacy=legacy, status="input_required", inputRequests=odd),
            lambda: task(legacy=legacy, status="input_required", inputRequests={"k": odd}),
            lambda: task(legacy=legacy, status="input_required", inputRequests={"k": {"method": odd, "params": {}}}),
            lambda: task(legacy=legacy, status="input_required", inputRequests={"k": {**FORM_QUESTION, "params": odd}}),
            lambda: task(legacy=legacy, status="input_required", inputRequests={"k": FORM_QUESTION, "": odd}),
            lambda: interval(rng.choice([0, -5, 10**16, 1e308, True, "fast", None, [], -(10**16)]), legacy),
            lambda: task(legacy=legacy, status="completed", result=text_result("ok")),
            lambda: task(legacy=legacy),
        ]
    )()


def scripts(legacy: bool) -> Iterator[list[dict[str, Any]]]:
    """Seeded runs of ``tasks/get`` answers, the first a well-formed task (the ``tools/call`` answer)."""
    rng = random.Random(SEED + legacy)
    for _ in range(24):
        yield [task(legacy=legacy), *(garbage(rng, legacy) for _ in range(rng.randint(1, 4)))]
    # Statuses going backwards: done, then working again (the client has stopped listening by then).
    yield [task(legacy=legacy), task(status="completed", legacy=legacy, result=text_result("ok")), task(legacy=legacy)]
    yield [task(legacy=legacy), task(status="input_required", legacy=legacy, inputRequests={}), task(legacy=legacy)]


@pytest.fixture(params=["extension", "legacy"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    scripted = Peer(request.param == "legacy", TOOLS)
    scripted.answers["tasks/update"] = lambda params: {}
    scripted.answers["tasks/cancel"] = lambda params: task(legacy=scripted.legacy, status="cancelled")
    scripted.answers["tasks/result"] = lambda params: text_result("result")
    yield scripted
    scripted.close()


def client_of(peer: Peer, **providers: Any) -> MCPClient:
    client = MCPClient(era="handshake" if peer.legacy else "stateless", timeout=WAIT, **providers)
    client.connect(peer.client_end)
    return client


def test_call_tool_ends_in_a_result_or_a_typed_error_without_spinning(peer: Peer) -> None:
    outcomes: dict[str, int] = {}
    with client_of(peer, elicitation_provider=ask_colour) as client:
        for states in scripts(peer.legacy):
            polled(peer, states)
            peer.seen.clear()
            try:
                result = client.call_tool("job", timeout=LIMIT)
            except MCPError as exc:
                outcomes[str(exc.code)] = outcomes.get(str(exc.code), 0) + 1
            else:
                assert result.text in {"ok", "result"}, (states, result)
                outcomes["result"] = outcomes.get("result", 0) + 1
            polls = peer.methods().count("tasks/get")
            assert polls <= LIMIT / MIN_POLL_INTERVAL + len(states) + 2, (polls, states)
    # The generator reaches every way out: a result, the client's refusal, the task's own error, a timeout.
    assert {"result", "MCP.PROTOCOL_INVALID", "MCP.TIMEOUT"} <= set(outcomes), outcomes


def test_an_unknown_status_is_a_malformed_task(peer: Peer) -> None:
    """A status outside the five would be polled for ever by a handle (whose poller has no deadline)."""
    with client_of(peer) as client:
        for status in ("bogus", "WORKING", "Completed", 5, None):
            polled(peer, [task(legacy=peer.legacy), task(status=status, legacy=peer.legacy)])
            handle = client.start_tool("job")
            with pytest.raises(MCPError) as caught:
                handle.result(WAIT)
            assert caught.value.code == MCP_CODES.PROTOCOL_INVALID and "malformed task" in str(caught.value)


def test_a_huge_poll_interval_is_waited_within_bounds(peer: Peer) -> None:
    with client_of(peer) as client:
        polled(peer, [interval(10**16, peer.legacy)])
        with pytest.raises(MCPError) as caught:
            client.call_tool("job", timeout=LIMIT)
        assert caught.value.code == MCP_CODES.TIMEOUT
        assert peer.methods().count("tasks/get") == 1
        # Without a timeout the wait is the server's, bounded (a wait of 10**13 s would overflow):
        # the caller's cancel still ends it.
        peer.seen.clear()
        cancel = threading.Event()
        waiting = threading.Thread(
            target=lambda: wait_for(lambda: "tasks/get" in peer.methods(), WAIT) and cancel.set()
        )
        waiting.start()
        with pytest.raises(MCPError) as caught:
            client.call_tool("job", timeout=None, cancel=cancel)
        waiting.join(WAIT)
        assert caught.value.code == MCP_CODES.REQUEST_CANCELLED
        assert peer.methods().count("tasks/get") == 1


def by_task(peer: Peer, scripts: dict[str, list[dict[str, Any]]]) -> None:
    """Each task's own run of ``tasks/get`` answers (the last for ever); ``tools/call`` creates them in order."""
    created = [dict(states[0]) for states in scripts.values()]
    peer.answers["tools/call"] = lambda params: (
        {"task": created.pop(0)}
        if peer.legacy
        else {
            **created.pop(0),
            "resultType": "task",
        }
    )

    def get(params: dict[str, Any]) -> Any:
        left = scripts[params["taskId"]]
        return left.pop(0) if len(left) > 1 else left[0]

    peer.answers["tasks/get"] = get


def test_the_poller_outlives_a_handle_in_trouble(peer: Peer) -> None:
    """A handle whose server suggests a huge interval, or whose provider fails, does not stop the others."""

    def broken_provider(params: Any) -> Any:
        raise ValueError("the provider broke")

    legacy = peer.legacy
    asking = task("asking", "input_required", legacy=legacy, inputRequests={"k": FORM_QUESTION})
    by_task(
        peer,
        {
            "sleepy": [interval(10**16, legacy, task_id="sleepy")],
            "asking": [task("asking", legacy=legacy), asking],
            "fine": [task("fine", legacy=legacy), task("fine", "completed", legacy=legacy, result=text_result("ok"))],
        },
    )
    with client_of(peer, elicitation_provider=broken_provider) as client:
        sleepy, failing, fine = (client.start_tool("job") for _ in range(3))
        if legacy:  # 2025-11-25 asks on the session, not in the task: tasks/result answers
            assert failing.result(WAIT).text == "result"
        else:
            with pytest.raises(ValueError, match="the provider broke"):
                failing.result(WAIT)
        assert fine.result(WAIT).text in {"ok", "result"}
        with pytest.raises(concurrent.futures.TimeoutError):
            sleepy.result(LIMIT)
        assert [params["taskId"] for method, params in peer.seen if method == "tasks/get"].count("sleepy") == 1
    with pytest.raises(MCPError) as caught:  # closing the client ends the handle still waiting
        sleepy.result(WAIT)
    assert caught.value.code == MCP_CODES.TRANSPORT_CLOSED
