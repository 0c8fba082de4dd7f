"""MCPServer.mount: another server (or a proxy) served under a prefix, live, with real clients."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_compose import upstream_subscribed, wait_for

import mcp_sync
from mcp_sync import MCPError, MCPServer
from mcp_sync.client.core import RESOURCE_UPDATED
from mcp_sync.errors import MCP_CODES
from mcp_sync.server.mount import Mount
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    ProgressNotificationParams,
    Root,
    TextContent,
)

SERVERS = Path(__file__).parent.parent / "servers"
sys.path.insert(0, str(SERVERS))
import proxied  # noqa: E402

WAIT = 10.0


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="sampled"), model="m")


def elicit(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def roots() -> list[Root]:
    return [Root(uri="file:///work")]


def test_a_mounted_server_is_served_under_its_prefix() -> None:
    app, weather = MCPServer("app"), proxied.build("weather")
    weather.register_resource("readme.txt", lambda uri, ctx: "no scheme")
    app.register_tool("own", lambda args, ctx: "mine")
    mounted = app.mount(weather, prefix="weather")
    assert isinstance(mounted, Mount)
    with mcp_sync.connect(
        app, era="handshake", sampling_provider=sample, elicitation_provider=elicit, roots_provider=roots
    ) as client:
        names = [tool.name for tool in client.tools()]
        assert names == ["own", *(f"weather_{tool.name}" for tool in proxied.build().list_tools())]
        assert client.call_tool("weather_echo", {"text": "hi"}).text == "hi"
        progress: list[ProgressNotificationParams] = []
        assert client.call_tool("weather_count", {"steps": 2}, progress=progress.append).text == "counted 2"
        assert [p.progress for p in progress] == [1, 2]
        # The caller's context goes along: the mounted server's questions reach this client.
        answer = json.loads(client.call_tool("weather_ask").text or "")
        assert answer == {"action": "accept", "data": {"name": "Ada"}, "sampled": "sampled", "roots": ["file:///work"]}
        assert [r.uri for r in client.resources()] == ["notes://weather/readme", "weather/readme.txt"]
        assert [t.uri_template for t in client.resource_templates()] == ["notes://weather/{name}/text"]
        readme = client.read_resource("notes://weather/readme")
        assert (readme.contents[0].uri, readme.text) == ("notes://weather/readme", "read me")
        assert client.read_resource("weather/readme.txt").text == "no scheme"
        templated = client.read_resource("notes://weather/groceries/text")
        assert (templated.contents[0].uri, templated.text) == ("notes://weather/groceries/text", "note groceries")
        assert [p.name for p in client.prompts()] == ["weather_greet"]
        greeting = client.get_prompt("weather_greet", {"name": "Bo"})
        assert greeting.messages[0].content.text == "Hello, Bo!"  # type: ignore[union-attr]
    assert mounted.original("weather/readme.txt") == "readme.txt"


def test_list_changes_of_the_mounted_server_reach_the_parent_s_clients() -> None:
    app, weather = MCPServer("app"), proxied.build("weather")
    mounted = app.mount(weather, prefix="w")
    with mcp_sync.connect(app, era="handshake") as client:
        told = threading.Event()
        client.on_notification("notifications/tools/list_changed", lambda params: told.set())
        weather.register_tool("alerts", lambda args, ctx: "none", description="first")
        assert told.wait(WAIT)
        assert client.call_tool("w_alerts").text == "none"
        weather.unregister_tool("alerts")
        assert "w_alerts" not in [tool.name for tool in client.refresh_tools()]
        assert client.call_tool("w_grow", {"name": "extra"}).text == "grown"
        assert "w_extra" in [tool.name for tool in client.refresh_tools()]
        assert "w_extra" in [prompt.name for prompt in client.refresh_prompts()]
        assert "notes://w/extra" in [resource.uri for resource in client.refresh_resources()]
        # A change of a mounted resource reaches the clients subscribed to it under the parent's URI.
        updated = threading.Event()
        client.events.on(RESOURCE_UPDATED, lambda payload: updated.set())
        client.subscribe_resource("notes://w/readme")
        weather.mark_resource_updated("notes://readme")
        assert updated.wait(WAIT)
        assert client.subscribed_contents("notes://w/readme").text == "read me"  # type: ignore[union-attr]
    mounted.unmount()
    assert app.list_tools() == [] and app.list_prompts() == [] and app.list_resources() == []
    assert app.list_resource_templates() == []
    assert weather._watchers == ()  # no longer followed
    mounted.sync("tools")  # as a notice still on its way when unmount ran would: nothing comes back
    assert app.list_tools() == []
    weather.register_tool("later", lambda args, ctx: "ignored")
    assert app.list_tools() == []
    mounted.unmount()  # again: nothing happens


def test_one_server_mounted_in_two_parents_and_unmounted_from_the_first() -> None:
    first, second, shared = MCPServer("first"), MCPServer("second"), MCPServer("shared")
    shared.register_tool("t", lambda args, ctx: "t")
    one, two = first.mount(shared, prefix="a"), second.mount(shared, prefix="b")
    one.unmount()  # the first parent stops following; the second still does
    shared.register_tool("u", lambda args, ctx: "u")
    assert [tool.name for tool in first.list_tools()] == []
    assert [tool.name for tool in second.list_tools()] == ["b_t", "b_u"]
    two.unmount()
    shared.register_tool("v", lambda args, ctx: "v")
    assert [tool.name for tool in second.list_tools()] == [] and shared._watchers == ()


def test_a_proxy_mounted_under_a_prefix() -> None:
    target = [sys.executable, str(SERVERS / "proxied.py")]
    app = MCPServer("app")
    with mcp_sync.proxy(target, timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        with mcp_sync.connect(app, era="handshake") as client:
            assert client.call_tool("remote_echo", {"text": "far"}).text == "far"
            told = threading.Event()
            client.on_notification("notifications/tools/list_changed", lambda params: told.set())
            assert client.call_tool("remote_grow", {"name": "extra"}).text == "grown"
            assert told.wait(WAIT)
            assert client.call_tool("remote_extra").text == "I am extra"
        mounted.unmount()


def test_mounting_refuses_an_empty_prefix_and_a_clash() -> None:
    app, other = MCPServer("app"), MCPServer("other")
    other.register_tool("t", lambda args, ctx: "t")
    with pytest.raises(ValueError, match="non-empty prefix"):
        app.mount(other, prefix="")
    app.register_tool("x_t", lambda args, ctx: "mine")
    with pytest.raises(MCPError) as clash:
        app.mount(other, prefix="x")
    assert clash.value.code == MCP_CODES.DUPLICATE_REGISTRATION
    assert other._watchers == ()  # nothing of the failed mount is left
    assert [tool.name for tool in app.list_tools()] == ["x_t"]


@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
def test_a_mounted_proxy_passes_the_parent_s_subscriptions_to_its_target(up_era: str, down_era: str) -> None:
    target, app = proxied.build(), MCPServer("app")
    app.register_resource("app://own", lambda uri, ctx: "the parent's own")
    with mcp_sync.proxy(target, era=up_era, timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        with mcp_sync.connect(app, era=down_era) as client, mcp_sync.connect(app, era=down_era) as bystander:
            updated: list[str] = []
            client.events.on(RESOURCE_UPDATED, lambda payload: updated.append(payload.uri))
            told = threading.Event()
            bystander.events.on(RESOURCE_UPDATED, lambda payload: told.set())
            client.subscribe_resource("app://own")  # the parent's own: nothing passed on
            assert not upstream_subscribed(target, "app://own")
            client.subscribe_resource("notes://remote/readme")
            assert upstream_subscribed(target, "notes://readme")
            target.mark_resource_updated("notes://readme")
            assert wait_for(lambda: updated == ["notes://remote/readme"])
            contents = client.subscribed_contents("notes://remote/readme")
            assert contents is not None and contents.text == "read me"
            client.unsubscribe_resource("notes://remote/readme")
            assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))
            # A session that ends without unsubscribing: the target stops being asked for it.
            leaving = mcp_sync.connect(app, era=down_era)
            leaving.subscribe_resource("notes://remote/groceries/text")
            assert upstream_subscribed(target, "notes://groceries/text")
            leaving.close()
            assert wait_for(lambda: not upstream_subscribed(target, "notes://groceries/text"))
            # Unmounting ends what is still subscribed through the mount.
            client.subscribe_resource("notes://remote/readme")
            assert upstream_subscribed(target, "notes://readme")
            mounted.unmount()
            assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))
            assert not told.is_set()  # subscribed to nothing: told nothing
    assert app._subscription_watchers == ()


def test_a_mounted_server_s_unsubscription_of_a_uri_subscribed_before_the_mount_is_passed_on() -> None:
    app, weather = MCPServer("app"), proxied.build("weather")
    weather.register_resource("notes://later", lambda uri, ctx: "later")
    heard: list[tuple[str, bool]] = []
    weather.on_subscription(lambda session, uri, subscribed: heard.append((uri, subscribed)))
    with mcp_sync.connect(app, era="handshake") as client:
        app.register_resource("notes://w/later", lambda uri, ctx: "the parent's, until the mount")
        client.subscribe_resource("notes://w/later")
        app.unregister_resource("notes://w/later")
        mounted = app.mount(weather, prefix="w")
        client.unsubscribe_resource("notes://w/later")
        mounted.unmount()
    assert heard == [("notes://later", False)]


def held_subscriptions(target: MCPServer, subscribing: bool) -> tuple[threading.Event, threading.Event, list[bool]]:
    """Make ``target`` hold each subscription (``subscribing``) or unsubscription until released.

    Returns the event set as one is held, the event that releases it, and for each held one whether it
    was released (``False``: it gave up after WAIT seconds).
    """
    held, release, released = threading.Event(), threading.Event(), []

    def hold(session: Any, uri: str, subscribed: bool) -> None:
        if subscribed is subscribing:
            held.set()
            released.append(release.wait(WAIT))

    target.on_subscription(hold)
    return held, release, released


def test_a_session_that_ends_while_its_subscription_is_made_upstream_does_not_keep_it() -> None:
    target, app = proxied.build(), MCPServer("app")
    held, release, _ = held_subscriptions(target, subscribing=True)
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        client = mcp_sync.connect(app, era="handshake")
        refused: list[BaseException] = []

        def subscribe() -> None:
            try:
                client.subscribe_resource("notes://remote/readme")
            except MCPError as exc:
                refused.append(exc)

        subscribing = threading.Thread(target=subscribe, name="test-subscriber")
        subscribing.start()
        assert held.wait(WAIT)  # the mounted proxy is subscribing at its target
        client.close()  # the parent's session ends meanwhile
        assert wait_for(lambda: not app.sessions)
        release.set()
        subscribing.join(WAIT)
        assert refused and refused[0].code == MCP_CODES.TRANSPORT_CLOSED  # type: ignore[attr-defined]
        # The subscription made after the session ended is ended at once: nothing is left of it.
        assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))
        assert mounted._subscribed == {}
        mounted.unmount()


def test_a_subscription_made_while_the_mount_goes_is_not_kept() -> None:
    target, app = proxied.build(), MCPServer("app")
    held, release, _ = held_subscriptions(target, subscribing=True)
    with (
        mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote,
        mcp_sync.connect(app, era="handshake") as client,
    ):
        mounted = app.mount(remote, prefix="remote")
        subscribing = threading.Thread(
            target=client.subscribe_resource, args=("notes://remote/readme",), name="test-subscriber"
        )
        subscribing.start()
        assert held.wait(WAIT)
        mounted.unmount()  # while the mounted proxy subscribes at its target
        release.set()
        subscribing.join(WAIT)
        assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))
        assert mounted._subscribed == {}
        # A subscription heard after the unmount (the parent told its watchers just before it): not passed on.
        (session,) = app.sessions
        mounted._subscription(session, "notes://remote/readme", True)
        assert not upstream_subscribed(target, "notes://readme") and mounted._subscribed == {}


def test_a_parent_s_session_closes_without_waiting_for_the_mounted_proxy_s_target() -> None:
    target, app = proxied.build(), MCPServer("app")
    held, release, released = held_subscriptions(target, subscribing=False)
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        first, second = mcp_sync.connect(app, era="handshake"), mcp_sync.connect(app, era="handshake")
        first.subscribe_resource("notes://remote/readme")
        second.subscribe_resource("notes://remote/groceries/text")
        first.close()  # returns while the target still holds the unsubscription, ended on the mount's thread
        assert wait_for(held.is_set)
        second.close()  # its subscription waits its turn on that thread
        unmounting = threading.Thread(target=mounted.unmount, name="test-unmount")
        unmounting.start()
        assert wait_for(lambda: not mounted._active)
        with mounted._lock:  # the unmount has seen the mount's thread at work: it waits for it
            pass
        release.set()
        unmounting.join(WAIT)
        assert mounted._releaser is None
        assert not upstream_subscribed(target, "notes://readme")
        assert not upstream_subscribed(target, "notes://groceries/text")
        assert released == [True, True]  # the target was let go, not given up on: no close waited for it


def test_the_parent_s_stop_waits_for_a_release_already_under_way() -> None:
    # The session ended before stop(): its subscription is being ended on the mount's thread, held at the target,
    # when stop() begins. stop() waits for that thread too (the test above may see the session end after it).
    target, app = proxied.build(), MCPServer("app")
    held, release, released = held_subscriptions(target, subscribing=False)
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        with mcp_sync.connect(app, era="handshake") as client:
            client.subscribe_resource("notes://remote/readme")
        assert held.wait(WAIT)  # the mount's thread is ending the subscription at the target
        stopped = threading.Event()
        stopping = threading.Thread(target=lambda: (app.stop(), stopped.set()), name="test-stop")
        stopping.start()
        assert not stopped.wait(0.5)  # stop() waits for that thread
        release.set()
        stopping.join(WAIT)
        assert stopped.is_set() and mounted._releaser is None
        assert released == [True] and not upstream_subscribed(target, "notes://readme")
        mounted.unmount()


def test_the_parent_s_stop_waits_for_the_mount_s_releases() -> None:
    # stop() closes the sessions, whose subscriptions the mount ends on a thread of its own: stop() returns once
    # that thread is done, so that none outlives it.
    target, app = proxied.build(), MCPServer("app")
    held, release, released = held_subscriptions(target, subscribing=False)
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        client = mcp_sync.connect(app, era="handshake")
        client.subscribe_resource("notes://remote/readme")
        stopped = threading.Event()
        stopping = threading.Thread(target=lambda: (app.stop(), stopped.set()), name="test-stop")
        stopping.start()
        assert held.wait(WAIT)  # the mount's thread is ending the subscription at the target
        assert not stopped.is_set()  # and stop() waits for it
        release.set()
        stopping.join(WAIT)
        assert stopped.is_set() and mounted._releaser is None
        assert released == [True] and not upstream_subscribed(target, "notes://readme")
        client.close()
        app.stop()  # again, with nothing left to release: it returns at once
        mounted.unmount()
        assert app._stop_waiters == ()


def test_a_proxy_that_is_the_parent_passes_a_mounted_uri_s_subscription_to_the_mount() -> None:
    outer, inner = MCPServer("outer"), proxied.build("inner")
    outer.register_resource("notes://one", lambda uri, ctx: "one")
    with (
        mcp_sync.proxy(outer, era="handshake", timeout=WAIT) as front,
        mcp_sync.proxy(inner, era="handshake", timeout=WAIT) as remote,
    ):
        mounted = front.mount(remote, prefix="w")
        with mcp_sync.connect(front, era="handshake") as client:
            updated: list[str] = []
            client.events.on(RESOURCE_UPDATED, lambda payload: updated.append(payload.uri))
            client.subscribe_resource("notes://w/readme")
            assert upstream_subscribed(inner, "notes://readme")  # the mounted proxy's target
            assert not upstream_subscribed(outer, "notes://w/readme")  # not the parent proxy's own
            inner.mark_resource_updated("notes://readme")
            assert wait_for(lambda: updated == ["notes://w/readme"])
            client.subscribe_resource("notes://one")  # the parent proxy's target's own: subscribed there
            assert upstream_subscribed(outer, "notes://one")
            client.unsubscribe_resource("notes://w/readme")
            assert wait_for(lambda: not upstream_subscribed(inner, "notes://readme"))
            client.unsubscribe_resource("notes://one")
            assert wait_for(lambda: not upstream_subscribed(outer, "notes://one"))
        mounted.unmount()


def test_a_subscription_the_mounted_server_refuses_or_of_a_closed_session_is_not_kept() -> None:
    target, app = proxied.build(), MCPServer("app")

    def refuse(session: Any, uri: str, subscribed: bool) -> None:
        if subscribed and uri == "notes://groceries/text":
            raise MCPError(MCP_CODES.NOT_FOUND, "no updates for the groceries")

    target.on_subscription(refuse)
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as remote:
        mounted = app.mount(remote, prefix="remote")
        with mcp_sync.connect(app, era="handshake") as client:
            with pytest.raises(MCPError):  # the target's refusal refuses the parent's subscription
                client.subscribe_resource("notes://remote/groceries/text")
            ((_, uris, _),) = mounted._subscribed.values()
            assert uris == set()
            (session,) = app.sessions
        assert wait_for(lambda: not app.sessions)
        assert mounted._subscribed == {}
        # A subscription handled after its session's transport closed (whose close handlers have run): ended at once.
        mounted._subscription(session, "notes://remote/readme", True)
        assert not upstream_subscribed(target, "notes://readme") and mounted._subscribed == {}
        mounted.unmount()
        mounted._session_ended(session)  # a close heard as the unmount ran: nothing is left to end
