"""A shared proxy connection and the target's questions: each reaches the client whose call it belongs to, one that
could be either of two clients' reaches neither, and between calls the target is given the roots of every client.
Real peers: the target a subprocess over stdio, served over Streamable HTTP on a loopback port, or in memory; our
clients connected to the proxy."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import queue
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_compose import wait_for

import mcp_sync
from mcp_sync import MCPClient, MCPError, MCPServer
from mcp_sync.server import start_http
from mcp_sync.server.context import Context
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    Root,
    TextContent,
)

sys.path.insert(0, str(Path(__file__).parent / "servers"))
import questioner

QUESTIONER = [sys.executable, str(Path(__file__).parent / "servers" / "questioner.py")]
WAIT = 10.0
"""The longest a test waits for something another thread does (seconds)."""


def answering(front: MCPServer, who: str, **options: Any) -> MCPClient:
    """Our client of ``front`` (handshake era) whose every answer says ``who`` it is."""

    def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text=f"sampled by {who}"), model="m")

    def elicit(params: ElicitRequestFormParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": who})

    return mcp_sync.connect(
        front,
        era="handshake",
        sampling_provider=sample,
        elicitation_provider=elicit,
        roots_provider=lambda: [Root(uri=f"file:///{who}")],
        **options,
    )


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "isolated"])
def test_each_question_of_an_http_target_reaches_the_client_whose_call_it_belongs_to(shared: bool) -> None:
    with (
        start_http(questioner.build()) as running,
        mcp_sync.proxy(running.url, shared=shared, era="handshake", timeout=WAIT) as front,
        answering(front, "first") as first,
        answering(front, "second") as second,
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="test-caller") as callers,
    ):
        assert (front.upstream(front.sessions[0]) is front.upstream(front.sessions[1])) is shared
        calls = {who: callers.submit(client.call_tool, "who") for who, client in (("first", first), ("second", second))}
        answers = {who: json.loads(call.result(WAIT).text or "") for who, call in calls.items()}
    assert answers == {
        "first": ["sampled by first", "first", ["file:///first"]],
        "second": ["sampled by second", "second", ["file:///second"]],
    }


REFUSED = "refused: the proxy cannot tell which of its clients this request is for"


def logging_to(logs: dict[str, list[Any]], who: str) -> dict[str, Any]:
    """Options of ``answering`` that keep the info logs the client ``who`` gets in ``logs[who]``."""
    logs[who] = []
    return {"log_handler": lambda message: logs[who].append(message.data), "log_level": "info"}


def test_over_stdio_a_question_that_could_be_either_of_two_clients_reaches_neither() -> None:
    # A stdio target's request says nothing of the call it is for: with two clients' calls in flight on one
    # connection, a guess would put one person's question to the other. One client's own calls are still answered.
    logs: dict[str, list[Any]] = {}
    with (
        mcp_sync.proxy(QUESTIONER, shared=True, era="handshake", timeout=WAIT) as front,
        answering(front, "first", **logging_to(logs, "first")) as first,
        answering(front, "second", **logging_to(logs, "second")) as second,
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="test-caller") as callers,
    ):
        assert wait_for(lambda: len(front._roots_kept) == 2)  # each client's roots, asked as it connected
        calls = {who: callers.submit(client.call_tool, "who") for who, client in (("first", first), ("second", second))}
        for call in calls.values():
            sampled, named, roots = json.loads(call.result(WAIT).text or "")
            assert sampled.startswith(REFUSED) and named.startswith(REFUSED), (sampled, named)
            assert "(over stdio nothing can)" in sampled
            assert roots == ["file:///first", "file:///second"]  # as between calls: every client's (given then too)
        # Each call's log could be either client's: neither gets it (given to both, one's data would reach the other).
        assert logs == {"first": [], "second": []}
        twice = [callers.submit(first.call_tool, "who") for _ in range(2)]
        assert [json.loads(call.result(WAIT).text or "") for call in twice] == [
            ["sampled by first", "first", ["file:///first"]]
        ] * 2
        assert wait_for(lambda: logs["first"] == ["who asks", "who asks"])  # one client's calls: its logs
        assert logs["second"] == []


def test_a_mounted_proxy_asks_none_of_the_parent_s_clients_a_question_it_cannot_place() -> None:
    # The parent's clients all share the mounted proxy's one connection to its stdio target.
    app = MCPServer("app")
    with mcp_sync.proxy(QUESTIONER, era="handshake", timeout=WAIT) as remote:
        app.mount(remote, prefix="q")
        with (
            answering(app, "first") as first,
            answering(app, "second") as second,
            concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="test-caller") as callers,
        ):
            calls = [callers.submit(client.call_tool, "q_who") for client in (first, second)]
            answers = [json.loads(call.result(WAIT).text or "") for call in calls]
    for answer in answers:
        assert all(asked.startswith(REFUSED) for asked in answer), answer  # the roots too: no union to give


@pytest.mark.parametrize("asking", ["read", "prompt"])
def test_a_question_of_an_http_target_during_a_read_or_a_prompt_reaches_its_own_client(asking: str) -> None:
    target = MCPServer("target")
    together = threading.Barrier(2, timeout=WAIT)
    arrived = threading.Event()

    def own(ctx: Context) -> str:
        arrived.set()
        together.wait()
        return json.dumps(questioner.answers(ctx, together))

    target.register_tool("who", lambda args, ctx: (together.wait(), json.dumps(questioner.answers(ctx, together)))[1])
    target.register_resource("whose://me", lambda uri, ctx: own(ctx))
    target.register_prompt("whose", lambda args, ctx: own(ctx))
    with (
        start_http(target) as running,
        mcp_sync.proxy(running.url, shared=True, era="handshake", timeout=WAIT) as front,
        answering(front, "reader") as reader,
        answering(front, "caller") as caller,
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="test-caller") as callers,
    ):
        if asking == "read":
            read = callers.submit(lambda: reader.read_resource("whose://me").text)
        else:
            read = callers.submit(lambda: reader.get_prompt("whose").messages[0].content.text)  # type: ignore[union-attr]
        assert arrived.wait(WAIT)  # in flight first: the tool call is the latest one
        call = callers.submit(caller.call_tool, "who")
        assert json.loads(read.result(WAIT) or "") == ["sampled by reader", "reader", ["file:///reader"]]
        assert json.loads(call.result(WAIT).text or "") == ["sampled by caller", "caller", ["file:///caller"]]


def test_between_calls_a_shared_connection_gives_the_target_every_client_s_roots() -> None:
    target = MCPServer("target")
    target.register_tool("echo", lambda args, ctx: args["text"])
    second_roots = [Root(uri="file:///second"), Root(uri="file:///first")]

    connecting = threading.current_thread()

    def failing_roots() -> list[Root]:
        if threading.current_thread() is not connecting:  # read as it connects; fails when asked (roots/list)
            raise RuntimeError("the roots are not available just now")
        return [Root(uri="file:///failing")]

    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        answering(front, "first") as first,
        mcp_sync.connect(front, era="handshake", roots_provider=lambda: list(second_roots)) as second,
        mcp_sync.connect(front, era="handshake") as rootless,
        mcp_sync.connect(front, era="handshake", roots_provider=failing_roots),  # left out; the others count
    ):
        (upstream,) = target.sessions  # one connection serves them all
        assert rootless.call_tool("echo", {"text": "here"}).text == "here"

        def given() -> list[str]:
            return [root.uri for root in upstream.list_roots(timeout=WAIT).roots]

        # Each client is asked as it connects; each URI once, in the order of the sessions.
        assert wait_for(lambda: given() == ["file:///first", "file:///second"])
        heard: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        upstream.dispatcher.on_notification("notifications/roots/list_changed", heard.put)
        second_roots[:] = [Root(uri="file:///third")]
        second.refresh_roots()
        heard.get(timeout=WAIT)  # a client's change is told to the target, once the proxy has the new roots
        assert given() == ["file:///first", "file:///third"]
        first.close()  # a client gone: its roots are no longer given
        assert wait_for(lambda: given() == ["file:///third"])


def test_a_silent_client_holds_no_other_client_s_calls_on_a_shared_connection() -> None:
    target = MCPServer("target")
    target.register_tool("echo", lambda args, ctx: args["text"])
    asked, answer = threading.Event(), threading.Event()

    connecting = threading.current_thread()

    def silent_roots() -> list[Root]:
        if threading.current_thread() is not connecting:  # read as it connects; silent when asked (roots/list)
            asked.set()
            answer.wait(WAIT)  # until the test ends
        return [Root(uri="file:///silent")]

    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        answering(front, "first") as first,
        mcp_sync.connect(front, era="handshake", roots_provider=silent_roots),
        # 2026-07-28: its roots cannot be asked between calls; it is not waited for either.
        mcp_sync.connect(front, era="stateless", roots_provider=lambda: [Root(uri="file:///new")]),
        contextlib.ExitStack() as leaving,
    ):
        leaving.callback(answer.set)  # first thing on the way out: the silent client can close
        (upstream,) = target.sessions

        def given() -> list[str]:
            return [root.uri for root in upstream.list_roots(timeout=WAIT).roots]

        # The target is answered from what the proxy has, without waiting for the silent client.
        assert wait_for(lambda: given() == ["file:///first"])
        dropped = front.upstream()
        upstream.transport.close()  # the shared connection drops: the next call connects again
        assert wait_for(lambda: not dropped.initialized)
        assert first.call_tool("echo", {"text": "still served"}).text == "still served"
        (again,) = target.sessions
        assert [root.uri for root in again.list_roots(timeout=WAIT).roots] == ["file:///first"]
        assert asked.wait(WAIT)  # it was asked (as it connected) ...
        assert not answer.is_set()  # ... and all of the above happened while it had not answered


def test_between_calls_the_proxy_s_own_connection_gives_no_roots_unless_shared() -> None:
    target = MCPServer("target")
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as front, answering(front, "first"):
        own, the_client_s = target.sessions  # the proxy's own (local calls, mounts), then the client's
        assert own.list_roots(timeout=WAIT).roots == []
        assert [root.uri for root in the_client_s.list_roots(timeout=WAIT).roots] == ["file:///first"]


def test_a_question_with_no_call_to_relate_it_to_is_refused_on_a_shared_http_connection() -> None:
    target = MCPServer("target")
    with (
        start_http(target) as running,
        mcp_sync.proxy(running.url, shared=True, era="handshake", timeout=WAIT) as front,
        answering(front, "first"),
    ):
        (upstream,) = target.sessions
        with pytest.raises(MCPError) as refused:
            upstream.create_message(CreateMessageRequestParams(messages=[], max_tokens=5), timeout=WAIT)
        assert "no client call is in flight" in refused.value.message


def test_a_roots_change_heard_as_its_session_ends_is_dropped() -> None:
    target = MCPServer("target")
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as front:
        client = answering(front, "gone")
        (session,) = front.sessions
        key = id(session.transport)
        client.close()
        assert wait_for(lambda: not front.sessions)
        front._roots_changed(key)  # as the worker does when the change was heard just before the end
        # The proxy's own connection only: nothing was opened for it (its own, opened as it listed, closes on the
        # proxy's worker once it ended).
        assert wait_for(lambda: len(target.sessions) == 1)


def test_roots_heard_from_a_session_that_ended_or_after_the_close_ask_nobody() -> None:
    target = MCPServer("target")
    with mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front:
        client = answering(front, "gone")
        (session,) = front.sessions
        key = id(session.transport)
        client.close()
        assert wait_for(lambda: not front.sessions)
        # As the pool and the reader threads do when the change was heard just before the end: nothing is kept.
        front._read_roots(key, session, True, 0)
        front._roots_heard(key, {})
        assert front._roots_kept == {}
        front.upstream().close()  # the shared connection closed meanwhile: the change is told to no one
        front._roots_changed(key)
    front._ask_roots(key, session, tell=True)  # after the close: nothing is asked
    assert front._roots_kept == {}


def test_a_roots_change_is_told_to_the_target_without_asking_the_client_on_the_proxy_s_worker() -> None:
    target = MCPServer("target")
    target.register_tool("echo", lambda args, ctx: args["text"])
    connecting, silent_now, answer = threading.current_thread(), threading.Event(), threading.Event()

    def silent_roots() -> list[Root]:
        if silent_now.is_set() and threading.current_thread() is not connecting:
            answer.wait(2 * WAIT)  # silent while the test runs (read by the client itself at once)
        return [Root(uri="file:///silent")]

    with (
        mcp_sync.proxy(target, era="handshake", timeout=WAIT) as front,
        mcp_sync.connect(front, era="handshake", roots_provider=silent_roots) as silent,
        answering(front, "other") as other,
        contextlib.ExitStack() as leaving,
    ):
        leaving.callback(answer.set)
        assert silent.call_tool("echo", {"text": "hi"}).text == "hi"  # its own upstream connection is open
        silent_now.set()
        heard = threading.Event()
        for session in target.sessions:
            session.dispatcher.on_notification("notifications/roots/list_changed", lambda params: heard.set())
        silent.refresh_roots()
        assert heard.wait(WAIT)  # told at once: the proxy's worker did not wait for the silent client's roots
        told = threading.Event()
        other.on_notification("notifications/tools/list_changed", lambda params: told.set())
        target.register_tool("later", lambda args, ctx: "later")
        assert told.wait(WAIT)  # and the worker is free for the other sessions' work
        assert not answer.is_set()
