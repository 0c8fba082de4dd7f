"""mcp_sync.proxy: a server serving another server, with real targets (a subprocess over stdio, or in memory)
and real clients (in memory, over HTTP)."""

from __future__ import annotations

import json
import logging
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peers
import pytest

import mcp_sync
from mcp_sync import MCPClient, MCPError, MCPServer, cli
from mcp_sync.compose import ProxyServer
from mcp_sync.errors import MCP_CODES
from mcp_sync.protocol.jsonrpc import decode_message, encode_message
from mcp_sync.server import start_http
from mcp_sync.server.context import Context
from mcp_sync.server.middleware import Call, Next
from mcp_sync.server.session import ServerSession
from mcp_sync.transports.memory import InMemoryTransport
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    PromptReference,
    Root,
    SamplingMessage,
    TextContent,
)

sys.path.insert(0, str(Path(__file__).parent / "servers"))
import proxied

TARGET = [sys.executable, str(Path(__file__).parent / "servers" / "proxied.py")]
WAIT = 10.0
"""The longest a test waits for something another thread does (seconds)."""


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="hello from the model"), model="m")


def elicit(params: ElicitRequestFormParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": params.message.removesuffix("?")})


def roots() -> list[Root]:
    return [Root(uri="file:///work")]


def downstream(server: MCPServer, **options: Any) -> MCPClient:
    """Our client connected to ``server`` in memory, answering every question."""
    return mcp_sync.connect(
        server, sampling_provider=sample, elicitation_provider=elicit, roots_provider=roots, **options
    )


@pytest.fixture
def stdio_proxy() -> Iterator[ProxyServer]:
    with mcp_sync.proxy(TARGET, name="front", timeout=WAIT) as front:
        yield front


def test_the_target_s_lists_and_calls_through_a_stdio_proxy(stdio_proxy: ProxyServer) -> None:
    assert stdio_proxy.upstream().negotiated_era == "stateless"  # mcp_sync serves 2026-07-28 over stdio
    with downstream(stdio_proxy, era="handshake") as client:
        assert client.server_info.name == "front"
        assert client.server_info.version == "2.0"
        assert client.initialize_result is not None
        assert client.initialize_result.instructions == "a target behind a proxy"
        names = [tool.name for tool in client.tools()]
        assert names == ["echo", "count", "chatty", "ask", "slow", "saw_cancelled", "grow", "getenv", "die"]
        echo = client.tools()[0]
        assert echo.input_schema["properties"] == {"text": {"title": "Text", "type": "string"}}
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert [r.uri for r in client.resources()] == ["notes://readme"]
        assert [t.uri_template for t in client.resource_templates()] == ["notes://{name}/text"]
        assert client.read_resource("notes://readme").text == "read me"
        assert client.read_resource("notes://groceries/text").text == "note groceries"
        assert [p.name for p in client.prompts()] == ["greet"]
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
        completed = client.complete(PromptReference(name="greet"), "name", "A")
        assert completed.completion.values == ["Ada", "Alan"]
        with pytest.raises(MCPError) as unknown:
            client.call_tool("no-such-tool")
        assert unknown.value.code == MCP_CODES.INVALID_PARAMS  # as a server without a proxy says it


def test_progress_and_logs_reach_the_calling_client(stdio_proxy: ProxyServer) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    with downstream(stdio_proxy, era="handshake", log_handler=logs.append, log_level="warning") as client:
        progress: list[ProgressNotificationParams] = []
        assert client.call_tool("count", {"steps": 3}, progress=progress.append).text == "counted 3"
        assert [(p.progress, p.total, p.message) for p in progress] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]
        assert client.call_tool("chatty").text == "said"
        # The logs come before the result on one connection, and the debug one is below the client's level.
        assert [(m.level, m.data, m.logger) for m in logs] == [("warning", {"disk": "almost full"}, "store")]


def test_the_progress_of_a_read_and_of_a_prompt_reaches_the_client_that_asked() -> None:
    target = MCPServer("target")

    def halfway(ctx: Context) -> str:
        ctx.progress(1, 2, "half")
        return "done"

    target.register_resource("slow://one", lambda uri, ctx: halfway(ctx))
    target.register_prompt("slow", lambda args, ctx: halfway(ctx))
    seen: list[ProgressNotificationParams] = []
    with mcp_sync.proxy(target, era="handshake") as front, downstream(front, era="handshake") as client:
        assert client.read_resource("slow://one", progress=seen.append).text == "done"
        assert client.get_prompt("slow", progress=seen.append).messages[0].content.text == "done"  # type: ignore[union-attr]
    assert [(p.progress, p.total, p.message) for p in seen] == [(1, 2, "half")] * 2


@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
def test_the_target_s_questions_are_relayed_to_the_calling_client(up_era: str, down_era: str) -> None:
    with mcp_sync.proxy(proxied.build(), era=up_era) as front, downstream(front, era=down_era) as client:
        assert front.upstream().negotiated_era == up_era
        assert client.negotiated_era == down_era
        answer = json.loads(client.call_tool("ask").text or "")
    assert answer == {
        "action": "accept",
        "data": {"name": "Your name"},
        "sampled": "hello from the model",
        "roots": ["file:///work"],
    }


def test_a_question_from_the_target_without_a_call_in_flight_is_refused() -> None:
    with mcp_sync.proxy(proxied.build()) as front:
        params = CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text="x"))], max_tokens=5
        )
        with pytest.raises(MCPError) as refused:
            front._sample(front._shared, params)
        assert refused.value.code == MCP_CODES.MISSING_CAPABILITY


def test_cancelling_the_downstream_call_cancels_the_upstream_one(stdio_proxy: ProxyServer) -> None:
    with downstream(stdio_proxy) as client:
        begun, cancel = threading.Event(), threading.Event()
        failure: list[MCPError] = []

        def call() -> None:
            try:
                client.call_tool("slow", {"marker": "m1"}, cancel=cancel, progress=lambda p: begun.set())
            except MCPError as exc:
                failure.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert begun.wait(WAIT)
        cancel.set()
        caller.join(WAIT)
        assert [exc.code for exc in failure] == [MCP_CODES.REQUEST_CANCELLED]
        assert client.call_tool("saw_cancelled", {"marker": "m1"}).structured_content == {"result": True}


@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
def test_a_downstream_client_that_goes_away_mid_call_cancels_the_upstream_call_and_closes_its_connection(
    down_era: str,
) -> None:
    target = proxied.build()  # in memory: every upstream connection reaches the same server, which remembers
    with mcp_sync.proxy(target, timeout=WAIT) as front:
        leaving = downstream(front, era=down_era)
        begun = threading.Event()
        failure: list[MCPError] = []

        def call() -> None:
            try:
                leaving.call_tool("slow", {"marker": "gone"}, progress=lambda p: begun.set())
            except MCPError as exc:
                failure.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert begun.wait(WAIT)
        (session,) = front.sessions
        upstream = front.upstream(session)
        assert upstream is not front.upstream()  # a connection of its own
        leaving.close()
        caller.join(WAIT)
        assert [exc.code for exc in failure] == [MCP_CODES.TRANSPORT_CLOSED]
        with downstream(front) as staying:
            assert staying.call_tool("saw_cancelled", {"marker": "gone"}).structured_content == {"result": True}
            # The session's connection was closed once its cancelled call returned: only the others are left.
            assert not upstream.initialized
            assert len(target.sessions) == 2  # the shared connection's, and the staying client's


@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
def test_list_changes_of_the_target_reach_the_downstream_client(up_era: str) -> None:
    with mcp_sync.proxy(proxied.build(), era=up_era) as front, downstream(front, era="handshake") as client:
        changed = {kind: threading.Event() for kind in ("tools", "prompts", "resources")}
        for kind, event in changed.items():
            client.on_notification(f"notifications/{kind}/list_changed", lambda params, e=event: e.set())
        assert client.call_tool("grow", {"name": "extra"}).text == "grown"
        assert all(event.wait(WAIT) for event in changed.values())
        # The proxy told its clients once it had listed again: a listing now has the new items.
        assert "extra" in [tool.name for tool in client.refresh_tools()]
        assert "extra" in [prompt.name for prompt in client.refresh_prompts()]
        assert "notes://extra" in [resource.uri for resource in client.refresh_resources()]
        assert client.call_tool("extra").text == "I am extra"
        assert client.get_prompt("extra").messages[0].content.text == "prompt extra"  # type: ignore[union-attr]
        assert client.read_resource("notes://extra").text == "resource extra"


def test_an_upstream_that_dies_fails_the_call_and_the_next_call_reconnects(
    stdio_proxy: ProxyServer, caplog: pytest.LogCaptureFixture
) -> None:
    with downstream(stdio_proxy, era="handshake") as client:
        (session,) = stdio_proxy.sessions
        first = stdio_proxy.upstream(session)
        with pytest.raises(MCPError) as died:
            client.call_tool("die")
        # An error response, not a tool result; the JSON-RPC code is a plain internal error, the data says which.
        assert died.value.code == MCP_CODES.INTERNAL_ERROR
        assert died.value.data == {"upstream": MCP_CODES.TRANSPORT_CLOSED}
        assert "the proxy's target is unreachable" in died.value.message
        assert not first.initialized
        # A list change met while the target is gone is logged; the next call lists everything anew.
        with caplog.at_level(logging.WARNING, logger="mcp_sync.compose"):
            stdio_proxy._relist(stdio_proxy._link_for(session), first, "tools")
        assert "could not list the target's tools again" in caplog.text
        relisted = threading.Event()
        client.on_notification("notifications/tools/list_changed", lambda params: relisted.set())
        # The same downstream session goes on: the proxy started the target again.
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert stdio_proxy.upstream(session) is not first
        assert relisted.wait(WAIT)


@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
def test_an_unknown_resource_is_said_in_the_downstream_era_s_words(up_era: str, down_era: str) -> None:
    with (
        mcp_sync.proxy(proxied.build(), era=up_era) as front,
        downstream(front, era=down_era) as client,
        pytest.raises(MCPError) as missing,
    ):
        client.read_resource("notes://nowhere")
    with mcp_sync.connect(proxied.build(), era=down_era) as direct, pytest.raises(MCPError) as directly:
        direct.read_resource("notes://nowhere")
    assert (missing.value.code, missing.value.jsonrpc_code) == (directly.value.code, directly.value.jsonrpc_code)


@pytest.mark.parametrize("shared", [False, True], ids=["isolated", "shared"])
def test_logs_outside_any_call_go_to_every_client(shared: bool) -> None:
    target = proxied.build()
    heard = threading.Event()
    logs: list[LoggingMessageNotificationParams] = []

    def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)
        heard.set()

    with (
        mcp_sync.proxy(target, era="handshake", shared=shared) as front,
        # (a handshake-era client: a 2026-07-28 one gets log messages only for a request that names a level)
        downstream(front, era="handshake", log_handler=on_log) as client,
    ):
        client.set_log_level("info")
        target.log("warning", "the target speaks up")
        assert heard.wait(WAIT)
    assert [(m.level, m.data) for m in logs] == [("warning", "the target speaks up")]


def test_the_proxy_s_own_registrations_are_served_beside_the_target_s() -> None:
    with mcp_sync.proxy(proxied.build()) as front, downstream(front) as client:
        front.register_tool("local", lambda args, ctx: "mine")
        front.register_resource("local://note", lambda uri, ctx: "my note")
        front.register_prompt("hello", lambda args, ctx: "hello there")

        def refuse(uri: str, ctx: Any) -> str:
            raise MCPError(MCP_CODES.INVALID_PARAMS, "not today")

        front.register_resource("local://refused", refuse)
        assert client.call_tool("local").text == "mine"
        assert client.call_tool("echo", {"text": "theirs"}).text == "theirs"
        assert client.read_resource("local://note").text == "my note"
        assert client.get_prompt("hello").messages[0].content.text == "hello there"  # type: ignore[union-attr]
        assert front.get_tool("echo") is not None and front.get_tool("local") is not None
        assert front.get_tool("nothing") is None
        with pytest.raises(MCPError) as refused:
            client.read_resource("local://refused")
        assert refused.value.code == MCP_CODES.INVALID_PARAMS
        # Local calls (no client) go through too.
        assert front.read_resource("notes://readme").text == "read me"
        assert front.get_prompt("greet", {"name": "Bo"}).messages[0].content.text == "Hello, Bo!"  # type: ignore[union-attr]


@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
def test_our_client_through_a_proxy_served_over_http(stdio_proxy: ProxyServer, down_era: str) -> None:
    options = {"sampling_provider": sample, "elicitation_provider": elicit, "roots_provider": roots}
    with (
        start_http(stdio_proxy) as running,
        mcp_sync.connect(running.url, timeout=WAIT, era=down_era, **options) as client,
    ):
        progress: list[float] = []
        assert client.call_tool("count", {"steps": 2}, progress=lambda p: progress.append(p.progress)).text == (
            "counted 2"
        )
        assert progress == [1, 2]
        assert client.read_resource("notes://readme").text == "read me"
        # The questions travel with the call they belong to: on its response stream, or as input rounds.
        assert json.loads(client.call_tool("ask").text or "")["sampled"] == "hello from the model"


def test_a_closed_proxy_refuses_calls_and_closes_once() -> None:
    front = mcp_sync.proxy(proxied.build())
    front.close()
    with pytest.raises(MCPError) as closed:
        front.invoke_tool("echo", {"text": "x"})
    assert closed.value.code == MCP_CODES.TRANSPORT_CLOSED
    front.close()


def test_a_target_that_cannot_start_fails_at_once() -> None:
    with pytest.raises(MCPError):
        mcp_sync.proxy([sys.executable, "-c", "import sys; sys.exit(1)"], connect_timeout=WAIT)


# ------------------------------------------------------------ mcp-sync proxy

PROXY = [sys.executable, "-m", "mcp_sync", "proxy"]


def test_mcp_sync_proxy_bridges_a_stdio_server_to_stdio() -> None:
    command = [*PROXY, shlex.join(TARGET), "--timeout", str(WAIT)]
    with mcp_sync.connect(
        command, inherit_env=True, sampling_provider=sample, elicitation_provider=elicit, roots_provider=roots
    ) as client:
        assert client.server_info.name == "proxied"
        assert client.call_tool("echo", {"text": "over two pipes"}).text == "over two pipes"
        assert json.loads(client.call_tool("ask").text or "")["roots"] == ["file:///work"]


@pytest.fixture
def bridged_over_http() -> Iterator[str]:
    """``mcp-sync proxy TARGET --transport http --port 0``: its URL; stopped with Ctrl-C (SIGINT) afterwards."""
    process = subprocess.Popen(
        [*PROXY, shlex.join(TARGET), "--transport", "http", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line.startswith("mcp-sync: serving proxied on http://127.0.0.1:"), line
    yield line.split(" on ")[1].split()[0]
    process.send_signal(signal.SIGINT)
    assert process.wait(WAIT) == 0
    process.stderr.close()


def test_mcp_sync_proxy_bridges_a_stdio_server_to_streamable_http(bridged_over_http: str) -> None:
    with mcp_sync.connect(bridged_over_http, timeout=WAIT, sampling_provider=sample) as client:
        assert client.call_tool("echo", {"text": "over HTTP"}).text == "over HTTP"
        assert [r.uri for r in client.resources()] == ["notes://readme"]


def test_mcp_sync_proxy_refuses_host_and_port_on_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["proxy", shlex.join(TARGET), "--port", "8000"]) == 1
    assert capsys.readouterr().err == "mcp-sync: error: --host and --port apply to --transport http or sse\n"


SDK_DRIVER = r"""
import json
import sys
import warnings

import anyio
import mcp.client.session as sdk_session
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

warnings.simplefilter("ignore")
config = json.loads(sys.argv[1])


async def sample(context, params):
    text = params.messages[0].content.text
    content = types.TextContent(type="text", text=f"SDK: {text}")
    return types.CreateMessageResult(role="assistant", content=content, model="m")


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "SDK"})


async def list_roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///sdk")])


async def scenario(read, write):
    out = {}
    progress = []

    async def on_progress(value, total, message):
        progress.append([value, total, message])

    async with ClientSession(
        read, write, sampling_callback=sample, elicitation_callback=elicit, list_roots_callback=list_roots
    ) as session:
        init = await session.initialize()
        out["version"] = init.protocol_version
        out["server"] = init.server_info.name
        out["tools"] = [tool.name for tool in (await session.list_tools()).tools]
        out["echo"] = (await session.call_tool("echo", {"text": "from the SDK"})).content[0].text
        out["count"] = (await session.call_tool("count", {"steps": 2}, progress_callback=on_progress)).content[0].text
        out["progress"] = progress
        try:
            out["ask"] = json.loads((await session.call_tool("ask", {})).content[0].text)
        except MCPError as exc:
            out["ask"] = {"error": exc.error.message}
    return out


async def main():
    if config["version"] is not None:
        sdk_session.LATEST_HANDSHAKE_VERSION = config["version"]
    with anyio.fail_after(60):
        if "url" in config:
            async with streamable_http_client(config["url"]) as (read, write, *_):
                out = await scenario(read, write)
        else:
            server = StdioServerParameters(command=config["command"][0], args=config["command"][1:], env=config["env"])
            async with stdio_client(server) as (read, write):
                out = await scenario(read, write)
    print(json.dumps(out))


anyio.run(main)
"""


@pytest.fixture(scope="module")
def peer_python() -> str:
    return peers.peer_python()


def drive_with_sdk(peer_python: str, tmp_path: Path, config: dict[str, Any]) -> Any:
    driver = tmp_path / "sdk_driver.py"
    driver.write_text(SDK_DRIVER)
    done = subprocess.run(
        [peer_python, str(driver), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=peers.peer_environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"the SDK driver failed:\n{done.stderr[-6000:]}"
    return json.loads(done.stdout)


def check_sdk_report(report: dict[str, Any], version: str | None = None) -> None:
    assert report["server"] == "proxied"
    assert report["tools"][:3] == ["echo", "count", "chatty"]
    assert report["echo"] == "from the SDK"
    assert report["count"] == "counted 2"
    messages = [None, None] if version == "2024-11-05" else ["step 1", "step 2"]  # progress messages: 2025-03-26 on
    assert report["progress"] == [[1.0, 2.0, messages[0]], [2.0, 2.0, messages[1]]]
    if version == "2024-11-05":
        # Elicitation came with 2025-06-18: the proxy, on the SDK's behalf, tells the target it cannot.
        assert report["ask"] == {"error": "the client does not support form elicitation"}
        return
    assert report["ask"] == {
        "action": "accept",
        "data": {"name": "SDK"},
        "sampled": "SDK: Say hello",
        "roots": ["file:///sdk"],
    }


@pytest.mark.interop
@pytest.mark.parametrize("version", [None, "2024-11-05"], ids=["sdk-default", "2024-11-05"])
def test_the_official_sdk_client_through_mcp_sync_proxy_on_stdio(
    peer_python: str, tmp_path: Path, version: str | None
) -> None:
    config = {
        "command": [*PROXY, shlex.join(TARGET)],
        "env": {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        "version": version,
    }
    report = drive_with_sdk(peer_python, tmp_path, config)
    assert report["version"] == (version or "2025-11-25")
    check_sdk_report(report, version)


@pytest.mark.interop
def test_the_official_sdk_client_through_mcp_sync_proxy_on_http(
    peer_python: str, tmp_path: Path, bridged_over_http: str
) -> None:
    check_sdk_report(drive_with_sdk(peer_python, tmp_path, {"url": bridged_over_http, "version": None}))


# -------------------------------------------------------------- connect_all


def test_connect_all_uses_three_servers_as_one_while_one_fails_to_start(tmp_path: Path) -> None:
    with start_http(proxied.build("web")) as running:
        config = {
            "mcpServers": {
                "local": {"command": TARGET[0], "args": TARGET[1:], "env": {"GREETING": "hej"}},
                "web": {"url": running.url, "headers": {"X-Test": "1"}},
                "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
            }
        }
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps(config))
        with mcp_sync.connect_all(str(path), connect_timeout=WAIT, timeout=WAIT) as servers:
            assert sorted(servers.clients) == ["local", "web"]
            assert list(servers.failures) == ["broken"]
            assert isinstance(servers.failures["broken"], MCPError)
            names = [tool.name for tool in servers.tools()]
            assert names[:2] == ["local_echo", "local_count"]
            assert "web_echo" in names and len(names) == 2 * len(proxied.build().list_tools())
            assert servers.call_tool("local_getenv", {"name": "GREETING"}).text == "hej"
            assert servers.call_tool("web_echo", {"text": "over http"}).text == "over http"
            assert servers["web"].server_info.name == "web"
            with pytest.raises(MCPError) as unknown:
                servers.call_tool("nowhere_echo")
            assert unknown.value.code == MCP_CODES.NOT_FOUND
            with pytest.raises(MCPError):
                servers.call_tool("local_nothing")
            clients = list(servers.clients.values())
        assert not any(client.initialized for client in clients)


def test_connect_all_refuses_an_entry_without_command_or_url() -> None:
    with pytest.raises(ValueError, match="'odd' has neither a command nor a url"):
        mcp_sync.connect_all({"mcpServers": {"odd": {"cwd": "/"}}})


def test_mcp_sync_list_and_call_take_a_server_of_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mcp.json"
    local = {"command": TARGET[0], "args": TARGET[1:], "env": {"GREETING": "from the file", "OTHER": "x"}}
    with start_http(proxied.build("web")) as running:
        path.write_text(json.dumps({"mcpServers": {"local": local, "web": {"url": running.url, "headers": {}}}}))
        config = ["--config", str(path)]
        assert cli.main(["list", "@local", *config]) == 0
        assert "echo(text: string)" in capsys.readouterr().out
        assert cli.main(["call", "@local", "getenv", "name=GREETING", *config]) == 0
        assert json.loads(capsys.readouterr().out) == {"result": "from the file"}
        assert cli.main(["call", "@local", "getenv", "name=OTHER", "-e", "OTHER=given", *config]) == 0
        assert json.loads(capsys.readouterr().out) == {"result": "given"}  # -e wins over the file
        assert cli.main(["call", "@web", "echo", "text=hi", "-H", "Authorization: Bearer t", *config]) == 0
        assert json.loads(capsys.readouterr().out) == {"result": "hi"}
    assert cli.main(["list", "@local"]) == 1
    assert "give it with --config FILE" in capsys.readouterr().err
    assert cli.main(["list", "@nobody", *config]) == 1
    assert capsys.readouterr().err == f"mcp-sync: error: {path} has no server 'nobody' (it has @local, @web)\n"
    path.write_text("{}")
    assert cli.main(["list", "@local", *config]) == 1
    assert f"cannot read the mcpServers of {path}" in capsys.readouterr().err
    path.write_text(json.dumps({"mcpServers": {}}))
    assert cli.main(["list", "@local", *config]) == 1
    assert "(it has none)" in capsys.readouterr().err


# ----------------------------------------------- sessions, subscriptions, roots, failures


@pytest.mark.parametrize("shared", [False, True], ids=["isolated", "shared"])
def test_each_downstream_session_has_its_own_upstream_connection_unless_shared(shared: bool) -> None:
    with (
        mcp_sync.proxy(TARGET, shared=shared, timeout=WAIT) as front,
        downstream(front, era="handshake") as first,
        downstream(front, era="handshake") as second,
    ):
        one, other = front.sessions
        assert (front.upstream(one) is front.upstream(other)) is shared
        assert (front.upstream(one) is front.upstream()) is shared
        told = threading.Event()
        second.on_notification("notifications/tools/list_changed", lambda params: told.set())
        grown = threading.Event()
        first.on_notification("notifications/tools/list_changed", lambda params: grown.set())
        assert first.call_tool("grow", {"name": "extra"}).text == "grown"  # one target process gets a tool
        assert grown.wait(WAIT)
        assert "extra" in [tool.name for tool in first.refresh_tools()]
        if shared:
            assert told.wait(WAIT)
        assert ("extra" in [tool.name for tool in second.refresh_tools()]) is shared
        upstream = front.upstream(one)
    # Each session's connection ended with it (its target process with it), and the shared one with the proxy.
    assert not upstream.initialized


def upstream_subscribed(target: MCPServer, uri: str) -> bool:
    """Whether a connection to ``target`` asks for the changes of ``uri`` (either era's way)."""
    return any(
        uri in session.subscriptions or any(uri in (f.resource_subscriptions or ()) for _, f in session._listening())
        for session in target.sessions
    )


def wait_for(condition: Any) -> bool:
    """Poll ``condition()`` until it holds or WAIT seconds passed."""
    deadline = threading.Event()
    timer = threading.Timer(WAIT, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.wait(0.01):
                return bool(condition())
        return True
    finally:
        timer.cancel()


@pytest.mark.parametrize("down_era", ["handshake", "stateless"])
@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
def test_resource_subscriptions_and_updates_pass_through(up_era: str, down_era: str) -> None:
    target = proxied.build()
    with (
        mcp_sync.proxy(target, era=up_era, timeout=WAIT) as front,
        downstream(front, era=down_era) as client,
        downstream(front, era=down_era) as bystander,
    ):
        updated = threading.Event()
        client.events.on(mcp_sync.client.core.RESOURCE_UPDATED, lambda payload: updated.set())
        assert not upstream_subscribed(target, "notes://readme")
        client.subscribe_resource("notes://readme")
        assert upstream_subscribed(target, "notes://readme")
        target.mark_resource_updated("notes://readme")
        assert updated.wait(WAIT)
        contents = client.subscribed_contents("notes://readme")
        assert contents is not None and contents.text == "read me"
        assert bystander.resources()  # connected, not subscribed: told nothing
        client.unsubscribe_resource("notes://readme")
        assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))


def test_a_shared_upstream_subscription_lasts_while_a_downstream_session_wants_it() -> None:
    target = proxied.build()
    with mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front:
        with downstream(front, era="handshake") as staying:
            leaving = downstream(front, era="handshake")
            staying.subscribe_resource("notes://readme")
            leaving.subscribe_resource("notes://readme")
            leaving.close()  # goes without unsubscribing: the other still wants the changes
            assert wait_for(lambda: len(front.sessions) == 1)
            updated = threading.Event()
            staying.events.on(mcp_sync.client.core.RESOURCE_UPDATED, lambda payload: updated.set())
            target.mark_resource_updated("notes://readme")
            assert updated.wait(WAIT)
            assert upstream_subscribed(target, "notes://readme")
            staying.unsubscribe_resource("notes://readme")
            assert not upstream_subscribed(target, "notes://readme")
            staying.subscribe_resource("notes://readme")
        # The last session went without unsubscribing: the proxy stops asking for it.
        assert wait_for(lambda: not upstream_subscribed(target, "notes://readme"))


def test_a_subscription_the_target_refuses_is_not_counted() -> None:
    target = proxied.build()
    refusing = threading.Event()

    def refuse(session: Any, uri: str, subscribed: bool) -> None:
        if subscribed and refusing.is_set():
            raise MCPError(MCP_CODES.NOT_FOUND, f"no updates for {uri}")

    target.on_subscription(refuse)
    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        downstream(front, era="handshake") as first,
        downstream(front, era="handshake") as second,
    ):
        first.subscribe_resource("notes://readme")
        refusing.set()
        with pytest.raises(MCPError):  # the target's refusal reaches the client
            second.subscribe_resource("notes://readme")
        with pytest.raises(MCPError):
            second.subscribe_resource("notes://groceries/text")
        (first_session, _) = front.sessions
        assert front._shared.subscribers == {"notes://readme": {id(first_session)}}  # the refused count for nothing


def test_the_downstream_client_s_roots_reach_the_target_when_they_change() -> None:
    target = proxied.build()
    current = [Root(uri="file:///first")]
    with (
        mcp_sync.proxy(target, era="handshake", timeout=WAIT) as front,
        mcp_sync.connect(front, era="handshake", roots_provider=lambda: list(current)) as client,
    ):
        heard: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for session in target.sessions:  # the shared connection's, and the client's own
            session.dispatcher.on_notification(
                "notifications/roots/list_changed", lambda params, s=session: heard.put(s)
            )
        current[:] = [Root(uri="file:///second")]
        client.refresh_roots()
        told = heard.get(timeout=WAIT)
        # The target asks, between calls: the proxy asks the client of that connection.
        assert [root.uri for root in told.list_roots().roots] == ["file:///second"]
        assert heard.empty()


def test_roots_changes_of_a_client_on_a_shared_upstream_reach_the_target() -> None:
    target = proxied.build()
    current = [Root(uri="file:///x")]
    with (
        mcp_sync.proxy(target, era="handshake", shared=True, timeout=WAIT) as front,
        mcp_sync.connect(front, era="handshake", roots_provider=lambda: list(current)) as client,
    ):
        (session,) = target.sessions
        heard: queue.SimpleQueue[Any] = queue.SimpleQueue()
        session.dispatcher.on_notification("notifications/roots/list_changed", heard.put)
        current[:] = [Root(uri="file:///y")]
        client.refresh_roots()
        heard.get(timeout=WAIT)
        # Between calls the shared connection gives the roots of every client it serves (here, one).
        assert [root.uri for root in session.list_roots().roots] == ["file:///y"]
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_an_upstream_that_hangs_gets_the_downstream_timeout_and_a_cancellation(stdio_proxy: ProxyServer) -> None:
    with downstream(stdio_proxy) as client:
        with pytest.raises(MCPError) as timed_out:
            client.call_tool("slow", {"marker": "hung"}, timeout=0.5)
        assert timed_out.value.code == MCP_CODES.TIMEOUT
        # The same target process saw the call cancelled: the proxy sent notifications/cancelled on.
        assert client.call_tool("saw_cancelled", {"marker": "hung"}).structured_content == {"result": True}


@pytest.mark.parametrize("up_era", ["handshake", "stateless"])
def test_an_http_upstream_that_dies_and_comes_back_is_reconnected_on_the_next_call(up_era: str) -> None:
    target = proxied.build("web")
    running = start_http(target)
    port = int(running.url.rsplit(":", 1)[1].split("/")[0])
    with mcp_sync.proxy(running.url, era=up_era, timeout=WAIT) as front, downstream(front, era="handshake") as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        client.subscribe_resource("notes://readme")
        running.close()
        with pytest.raises(MCPError) as gone:
            client.call_tool("echo", {"text": "meanwhile"})
        assert gone.value.data == {"upstream": MCP_CODES.TRANSPORT_CLOSED}
        # A session that starts while the target is away is refused, with a typed error, and ends cleanly.
        with pytest.raises(MCPError) as refused:
            downstream(front, era="handshake", connect_timeout=WAIT)
        assert refused.value.data == {"upstream": MCP_CODES.TRANSPORT_CLOSED}
        with start_http(target, port=port):
            assert client.call_tool("echo", {"text": "after"}).text == "after"
            # The new connection subscribed again on the client's behalf.
            updated = threading.Event()
            client.events.on(mcp_sync.client.core.RESOURCE_UPDATED, lambda payload: updated.set())
            target.mark_resource_updated("notes://readme")
            assert updated.wait(WAIT)


def test_a_downstream_session_that_ended_gets_no_upstream_connection() -> None:
    with mcp_sync.proxy(proxied.build(), timeout=WAIT) as front:
        client = downstream(front, era="handshake")
        (session,) = front.sessions
        client.close()
        with pytest.raises(MCPError) as ended:
            front.upstream(session)
        assert ended.value.code == MCP_CODES.TRANSPORT_CLOSED


class ServesBeforeStartReturns(InMemoryTransport):
    """A server end whose serving does not return from ``start`` until what it wrote satisfies ``until``.

    A session's reader thread may serve its first messages before ``MCPServer.start``
    has returned to its caller; this makes that order certain rather than a matter of luck.
    Make both ends with :meth:`pair`; the client end here is written to by hand and never read.
    """

    def __init__(self) -> None:
        super().__init__()
        self.until: Any = lambda written: True
        self.written: list[dict[str, Any]] = []
        self.changed = threading.Condition()

    def _write(self, message: Any) -> None:
        with self.changed:
            self.written.append(json.loads(encode_message(message)))
            self.changed.notify_all()
        super()._write(message)

    def _handlers_changed(self) -> None:
        super()._handlers_changed()
        with self.changed:  # one that times out leaves it to the test's assertions to say what was missing
            self.changed.wait_for(lambda: self.until(self.written), timeout=WAIT)


def pipelined(until: Any, *messages: dict[str, Any]) -> tuple[InMemoryTransport, ServesBeforeStartReturns]:
    """A client end that has already sent ``messages``, and a server end that serves until ``until`` holds."""
    client_end, server_end = ServesBeforeStartReturns.pair()
    server_end.until = until
    for message in messages:
        client_end.send(decode_message(json.dumps({"jsonrpc": "2.0", **message})))  # type: ignore[arg-type]
    return client_end, server_end


def initialize(capabilities: dict[str, Any]) -> dict[str, Any]:
    """A handshake-era initialize request with ``capabilities``."""
    info = {"name": "raw", "version": "1"}
    return {
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "clientInfo": info, "capabilities": capabilities},
    }


def test_a_first_request_served_before_start_returns_finds_its_session() -> None:
    target = proxied.build()
    with mcp_sync.proxy(target, era="handshake", timeout=WAIT) as front:
        (shared_connection,) = target.sessions
        client_end, server_end = pipelined(
            lambda written: any(m.get("id") == 2 for m in written),
            initialize({}),
            {"method": "notifications/initialized"},
            {"id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "mine"}}},
        )
        session = front.start(server_end)
        try:
            with server_end.changed:  # (answered already, unless a very slow machine ran past the transport's wait)
                assert server_end.changed.wait_for(lambda: any(m.get("id") == 2 for m in server_end.written), WAIT)
            (answer,) = [m for m in server_end.written if m.get("id") == 2]
            assert answer["result"]["content"][0]["text"] == "mine"
            # It went over the session's own upstream connection, as every other request of the session does
            # (before the fix: over the shared one, the session being unknown to the proxy yet).
            assert len([s for s in target.sessions if s is not shared_connection]) == 1
            assert front.upstream(session) is not front.upstream()
        finally:
            client_end.close()


def asked_for_roots(written: list[dict[str, Any]]) -> bool:
    return any(m.get("method") == "roots/list" for m in written)


def assert_asks_for_roots(front: ProxyServer) -> None:
    """A client with roots sends ``initialize`` and ``initialized`` at once; ``front`` asks it for its roots."""
    client_end, server_end = pipelined(
        asked_for_roots, initialize({"roots": {"listChanged": True}}), {"method": "notifications/initialized"}
    )
    front.start(server_end)
    try:
        with server_end.changed:
            assert server_end.changed.wait_for(lambda: asked_for_roots(server_end.written), timeout=WAIT)
    finally:
        client_end.close()


def test_a_shared_proxy_asks_a_client_for_its_roots_at_once_even_before_start_returns() -> None:
    with mcp_sync.proxy(proxied.build(), era="handshake", shared=True, timeout=WAIT) as front:
        # The initialized notification is heard before start returns; it asks all the same.
        assert_asks_for_roots(front)


def test_a_shared_proxy_asks_for_roots_when_initialized_is_heard_before_initialize_is_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client sending ``initialized`` right behind ``initialize``: the notification's listener can run while
    initialize is still being served, the client's capabilities unknown yet. Here initialize is held until the
    notification has been heard; the client is asked for its roots all the same (before the fix: never)."""
    heard = threading.Event()
    with mcp_sync.proxy(proxied.build(), era="handshake", shared=True, timeout=WAIT) as front:
        prepare = front.prepare_session

        def prepare_and_listen(session: ServerSession) -> None:
            prepare(session)  # the proxy's listener first, then this one
            session.dispatcher.on_notification("notifications/initialized", lambda params: heard.set())

        monkeypatch.setattr(front, "prepare_session", prepare_and_listen)

        @front.middleware
        def held(call: Call, next: Next) -> Any:
            if call.method == "initialize":
                assert heard.wait(WAIT)
            return next(call)

        assert_asks_for_roots(front)
