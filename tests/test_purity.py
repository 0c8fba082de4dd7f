"""``import mcp_sync`` stays light, and its lazy names resolve (the layer rules are in test_architecture.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_sync


def run_fresh(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter (one that fails, or takes over a minute, fails the test)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout


def test_import_mcp_sync_is_light() -> None:
    code = (
        "import sys, mcp_sync\n"
        "heavy = [m for m in ('requests', 'sseclient', 'opentelemetry', 'mcp_sync.client', 'mcp_sync.server',"
        " 'mcp_sync.display') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    printed = run_fresh(code)
    assert printed.strip() == ""


def test_lazy_exports_resolve_and_unknown_names_fail() -> None:
    assert mcp_sync.MCPServer.__name__ == "MCPServer"
    assert "MCPClient" in dir(mcp_sync)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = mcp_sync.Nope  # type: ignore[attr-defined]


def test_the_first_import_of_a_name_is_not_walked_by_the_collector_and_leaves_it_as_it_was() -> None:
    """The objects of ``from mcp_sync import MCPServer`` go to the oldest generation unwalked; nothing else changes.

    No collection runs during the import, and what it made (the class) is in
    generation 2; the collector is on again after, nothing stays frozen, and
    a cycle made before the import is still freed once it dies.
    """
    code = (
        "import gc, weakref\n"
        "class Node: pass\n"
        "node = Node(); node.me = node; dead = weakref.ref(node)\n"
        "import mcp_sync\n"
        "collections = []\n"
        "gc.callbacks.append(lambda phase, info: collections.append(info) if phase == 'stop' else None)\n"
        "from mcp_sync import MCPServer\n"
        "print(len(collections), any(each is MCPServer for each in gc.get_objects(generation=2)))\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
        "del node\n"
        "gc.collect()\n"
        "print(dead() is None)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["0 True", "True 0", "True"]


def test_the_first_import_of_a_name_keeps_a_programs_frozen_objects_frozen_and_its_collector_off() -> None:
    """A program that froze its objects (to fork workers) or turned the collector off finds both as it left them."""
    code = (
        "import gc\n"
        "kept = [[]]\n"
        "gc.freeze(); gc.disable()\n"
        "from mcp_sync import MCPClient\n"
        "tracked = gc.get_objects()\n"  # every generation's objects, not the frozen ones
        "print(any(each is kept for each in tracked), any(each is MCPClient for each in tracked), gc.isenabled())\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["False True False"]


def test_the_http_host_has_public_homes_loaded_when_first_used() -> None:
    """``StreamableHTTPApp``, ``serve_http`` and ``start_http`` come from ``mcp_sync`` and ``mcp_sync.server``.

    ``import mcp_sync.server`` (what a stdio server loads) does not load the
    HTTP stack; the first use of one of its names does.
    """
    code = (
        "import sys\n"
        "import mcp_sync.server as server\n"
        "print('mcp_sync.server.http.app' in sys.modules)\n"
        "from mcp_sync.server.http import app, embedded\n"
        "import mcp_sync\n"
        "homes = {'StreamableHTTPApp': app, 'serve_http': embedded, 'start_http': embedded}\n"
        "print(all(getattr(server, n) is getattr(m, n) is getattr(mcp_sync, n) for n, m in homes.items()))\n"
        "print(server.RunningHTTPServer is embedded.RunningHTTPServer)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["False", "True", "True"]
    import mcp_sync.server
    from mcp_sync.server.http import app, embedded

    assert mcp_sync.server.start_http is embedded.start_http and mcp_sync.StreamableHTTPApp is app.StreamableHTTPApp
    with pytest.raises(AttributeError, match=r"'mcp_sync\.server' has no attribute 'Nope'"):
        _ = mcp_sync.server.Nope  # type: ignore[attr-defined]


def test_the_client_and_server_import_only_what_a_connection_needs() -> None:
    """The client and server import builds no per-method envelope and loads no HTTP or skills-only module.

    The per-method envelopes (``protocol.messages``) are for programs that
    validate whole messages; a stdio server's start-up is mostly its imports.
    """
    code = (
        "import sys\n"
        "from mcp_sync import MCPClient, MCPServer\n"
        "heavy = [m for m in ('mcp_sync.protocol.messages', 'mcp_sync.types', 'mimetypes', 'requests', 'sseclient',"
        " 'opentelemetry', 'mcp_sync.server.http', 'mcp_sync.display') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
        "import mcp_sync.types\n"
        "print('mcp_sync.protocol.messages' in sys.modules)\n"
        "from mcp_sync.types import CallToolRequest, Tool\n"
        "print(CallToolRequest.__module__, Tool.__module__)\n"
    )
    printed = run_fresh(code)
    lines = printed.splitlines()
    assert lines == ["", "False", "mcp_sync.protocol.messages mcp_sync.protocol.types"]


def test_the_public_types_module_finds_the_envelopes_and_refuses_unknown_names() -> None:
    import mcp_sync.types as public

    assert public.ServerResult is public.ServerResult  # looked up once, then kept
    assert public.JSONRPCError is public.JSONRPCErrorResponse
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = public.Nope  # type: ignore[attr-defined]


LIGHT = (
    "import sys\n"
    "{statement}\n"
    "roots = ('asyncio', 'requests', 'opentelemetry', 'urllib3', 'sseclient')\n"
    "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in roots)))\n"
)


@pytest.mark.parametrize("statement", ["import mcp_sync", "from mcp_sync import MCPClient, MCPServer"])
def test_importing_the_package_loads_no_asyncio_requests_nor_opentelemetry(statement: str) -> None:
    """Nothing here is async, and HTTP and telemetry are loaded only by who uses them."""
    code = LIGHT.format(statement=statement)
    printed = run_fresh(code)
    assert printed.strip() == ""


FEATURES = (
    "mcp_sync.protocol.skills",
    "mcp_sync.protocol.frontmatter",
    "mcp_sync.protocol.tasks",
    "mcp_sync.protocol.oauth",
    "mcp_sync.protocol.grammar",
    "mcp_sync.server.authorization.tokens",
)
"""What a plain server does not use: the models of skills and tasks, loaded when a server first serves skills or
runs tasks, and OAuth's grammar and the token module, loaded when a token or a refused scope is handled."""


def test_a_server_loads_skills_tasks_and_oauth_modules_only_when_it_uses_them() -> None:
    code = (
        "import sys, tempfile, pathlib\n"
        "from mcp_sync import MCPServer\n"
        "features = " + repr(FEATURES) + "\n"
        "server = MCPServer('demo')\n"
        "server.tool(lambda text: text, name='echo')\n"
        "print(','.join(m for m in features if m in sys.modules))\n"
        "root = pathlib.Path(tempfile.mkdtemp())\n"
        "(root / 'hello').mkdir()\n"
        "(root / 'hello' / 'SKILL.md').write_text('---\\nname: hello\\ndescription: Greet\\n---\\nHi.\\n')\n"
        "print([skill.name for skill in server.add_skills(root)])\n"
        "print(','.join(m for m in features if m in sys.modules))\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["", "['hello']", "mcp_sync.protocol.skills,mcp_sync.protocol.frontmatter"]


def test_a_call_to_a_server_process_loads_no_http_client_nor_oauth_nor_tqdm() -> None:
    """``mcp-sync call "python server.py" ...`` (and ``MCPClient.stdio``) loads HTTP and OAuth only for a URL, and
    tqdm only when the tool reports progress (its bar is made at the first notification)."""
    server = str(Path(__file__).resolve().parents[1] / "examples" / "echo_server.py")
    code = (
        "import sys\n"
        "from mcp_sync.cli import main\n"
        f"code = main(['call', {server!r}, 'echo', 'text=hi'])\n"
        "heavy = ('requests', 'urllib3', 'mcp_sync.client.auth', 'mcp_sync.transports.http', 'mcp_sync.runtime.http',"
        " 'tqdm')\n"
        "print(code, ','.join(m for m in heavy if m in sys.modules))\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["hi", "0 "]


def lazily_loaded() -> list[str]:
    """A first import of each lazily loaded module: the home of each public name of ``mcp_sync`` and
    ``mcp_sync.server`` (one name per home), and the feature modules a server imports when it uses them."""
    import mcp_sync.server

    statements: dict[str, str] = {}
    for package in (mcp_sync, mcp_sync.server):
        for name in package.__all__:
            home = getattr(getattr(package, name), "__module__", None) or f"{package.__name__}.{name}"
            statements.setdefault(home, f"from {package.__name__} import {name}")
    for module in (*FEATURES, "mcp_sync.server.skills", "mcp_sync.server.tasks", "mcp_sync.types"):
        statements.setdefault(module, f"import {module}")
    return sorted(statements.values())


@pytest.mark.parametrize("statement", lazily_loaded())
def test_each_lazily_loaded_module_imports_cleanly_first_in_a_fresh_interpreter(statement: str) -> None:
    """Imported first and alone, a lazily loaded module finds everything it needs (no cycle left to chance)."""
    code = f"import warnings\nwarnings.simplefilter('error')\n{statement}\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


class Opaque:
    """A type pydantic has no schema for."""


def test_a_tool_whose_types_have_no_schema_is_refused_when_registered_not_when_called() -> None:
    """The wire models are built when first used; a user's tool is not: its schema error surfaces at ``@tool``."""
    from pydantic import PydanticSchemaGenerationError

    server = mcp_sync.MCPServer("demo")

    def takes(thing: Opaque) -> str:
        return "never"

    def gives(n: int) -> Opaque:
        return Opaque()

    with pytest.raises(PydanticSchemaGenerationError, match="Opaque"):
        server.tool(takes)
    with pytest.raises(PydanticSchemaGenerationError, match="Opaque"):
        server.tool(gives)
    assert server.list_tools() == []


CLIENT_FEATURES_MODULE = "mcp_sync.protocol.types.client_features"


def test_the_models_of_a_servers_questions_load_when_first_used() -> None:
    """Sampling, roots, elicitation and input-request models are not declared by the client and server import.

    A server needs them when it asks its client, a client when it is asked
    or connects; each public path still finds them, and a model with an
    ``inputResponses`` field, built first, loads them and reads the answers
    as models.
    """
    code = (
        "import sys\n"
        "from mcp_sync import MCPClient, MCPServer\n"
        f"print({CLIENT_FEATURES_MODULE!r} in sys.modules)\n"
        "from mcp_sync.protocol.types import CallToolRequestParams\n"
        "params = CallToolRequestParams.model_validate("
        "{'name': 'x', 'inputResponses': {'a': {'action': 'accept', 'content': {'n': 1}}}})\n"
        f"print({CLIENT_FEATURES_MODULE!r} in sys.modules)\n"
        "answer = params.input_responses['a']\n"
        "print(type(answer).__name__, type(answer).__module__, params.to_wire()['inputResponses'])\n"
        "from mcp_sync.types import ElicitResult\n"
        "import mcp_sync.protocol.types as types\n"
        "print(type(answer) is ElicitResult is types.ElicitResult)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == [
        "False",
        "True",
        "ElicitResult mcp_sync.protocol.types {'a': {'action': 'accept', 'content': {'n': 1}}}",
        "True",
    ]


def test_a_tasks_input_requests_are_read_as_models() -> None:
    """``DetailedTask.input_requests`` is typed as before, its models loaded when the task model is first built."""
    code = (
        "import sys\n"
        "from mcp_sync.protocol.tasks import DetailedTask\n"
        f"print({CLIENT_FEATURES_MODULE!r} in sys.modules)\n"
        "task = DetailedTask.model_validate({'taskId': 't', 'status': 'input_required', 'createdAt': 'now',"
        " 'lastUpdatedAt': 'now', 'ttlMs': None, 'inputRequests': {'q': {'method': 'roots/list'}}})\n"
        "print(type(task.input_requests['q']).__name__)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["False", "ListRootsRequest"]


ON_DEMAND = (
    CLIENT_FEATURES_MODULE,
    "mcp_sync.client.providers",
    "mcp_sync.protocol.frontmatter",
    "mcp_sync.protocol.skill_models",
    "mcp_sync.server.uri_template",
    "mcp_sync.runtime.event_payloads",
    "mcp_sync.server.middleware",
    "mcp_sync.protocol.types.server_features",
    "mcp_sync.protocol.types.utilities",
    "mcp_sync.protocol.types.meta",
    "mcp_sync.server.elicited",
    "mcp_sync.server.stats",
    "mcp_sync.server.session_records",
    "mcp_sync.protocol.types.content",
    "mcp_sync.protocol.task_models",
    "mcp_sync.protocol.apps",
    "mcp_sync.client.apps",
)
"""What the client and server import leaves for first use: the models of a server's questions, of the requests beyond
listing and calling tools, of completion, logging and subscriptions, and the typed views of ``_meta``; skills and
their frontmatter, URI templates, the events' payloads (built only when something listens), the middleware chain,
the answers of ``elicit()`` and ``get_info()``, and a session's records as a backend shares them; the content models
(declared by the first list or call), the tasks' models (by the first task) and the apps extension (by a client or
server that hosts or serves an app)."""


def test_a_plain_client_and_server_load_no_feature_module_until_used() -> None:
    """Imported, a server with a tool and a client made: none of :data:`ON_DEMAND`; each use then loads its own."""
    code = (
        "import sys\n"
        "from mcp_sync import MCPClient, MCPServer\n"
        "from mcp_sync.runtime.events import REQUEST_RECEIVED\n"
        "server = MCPServer('demo')\n"
        "server.tool(lambda text: text, name='echo')\n"
        "client = MCPClient()\n"
        "on_demand = " + repr(ON_DEMAND) + "\n"
        "print(','.join(m for m in on_demand if m in sys.modules))\n"
        "server.register_resource_template('notes://{id}', lambda uri, params, ctx: params['id'])\n"
        "server.events.on(REQUEST_RECEIVED, lambda got: print(type(got).__name__, got.method))\n"
        "server.add_middleware(lambda call, next: next(call))\n"
        "from mcp_sync import connect\n"
        "with connect(server) as connected:\n"
        "    print(connected.call_tool('echo', {'text': 'hi'}).text)\n"
        "    connected.list_prompts(), connected.list_resources(), connected.list_resource_templates()\n"
        "    print('listed', ','.join(m for m in on_demand if m in sys.modules))\n"
        "    print(connected.read_resource('notes://7').text)\n"
        "    connected.set_log_level('info')\n"
        "print(','.join(m for m in on_demand if m in sys.modules))\n"
    )
    printed = run_fresh(code)
    lines = printed.splitlines()
    assert lines[0] == ""
    assert "RequestReceived tools/call" in lines and "hi" in lines and "7" in lines
    listed = set(next(line for line in lines if line.startswith("listed ")).split()[-1].split(","))
    assert not listed & {"mcp_sync.protocol.types.server_features", "mcp_sync.protocol.types.utilities"}
    loaded = lines[-1].split(",")
    assert {
        "mcp_sync.server.uri_template",
        "mcp_sync.runtime.event_payloads",
        "mcp_sync.server.middleware",
        "mcp_sync.protocol.types.server_features",
        "mcp_sync.protocol.types.utilities",
        CLIENT_FEATURES_MODULE,
    } <= set(loaded)


def test_a_servers_rare_answers_and_shared_session_records_load_when_first_needed() -> None:
    """``get_info()`` loads its record's module, ``elicit()`` its answer's, a backend that shares sessions (told of a
    subscription) the session records'; a server that does none of these loads none of them."""
    code = (
        "import sys\n"
        "from mcp_sync import MCPServer, connect\n"
        "from mcp_sync.server import Context\n"
        "server = MCPServer('demo')\n"
        "server.register_resource('notes://1', lambda uri, ctx: 'one')\n"
        "server.register_resource('notes://2', lambda uri, ctx: 'two')\n"
        "@server.tool()\n"
        "def ask(ctx: Context) -> str:\n"
        "    return ctx.elicit('name?', {'type': 'object', 'properties': {'n': {'type': 'string'}}}).action\n"
        "modules = ('mcp_sync.server.stats', 'mcp_sync.server.elicited', 'mcp_sync.server.session_records')\n"
        "def loaded():\n"
        "    return [m.rsplit('.', 1)[1] for m in modules if m in sys.modules]\n"
        "from mcp_sync.types import ElicitResult\n"
        "decline = lambda params: ElicitResult(action='decline')\n"
        "with connect(server, era='handshake', elicitation_provider=decline) as client:\n"
        "    client.subscribe_resource('notes://1')\n"
        "    print(loaded())\n"
        "    print(server.get_info().tools, loaded())\n"
        "    print(client.call_tool('ask').text, loaded())\n"
        "    session = next(iter(server.sessions))\n"
        "    session.on_change = lambda session, update: print(type(update).__name__, sorted(update.subscribed))\n"
        "    client.subscribe_resource('notes://2')\n"
        "    print(loaded())\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == [
        "[]",
        "1 ['stats']",
        "decline ['stats', 'elicited']",
        "SessionUpdate ['notes://2']",
        "['stats', 'elicited', 'session_records']",
    ]


def test_a_stdio_client_builds_its_first_models_while_the_server_starts() -> None:
    """Made with a server process that never answers, the client has built the models of its first exchanges (in
    the time a server takes to start) and no others; merely imported, it had built none of them."""
    code = (
        "import sys\n"
        "from mcp_sync import MCPClient, MCPError\n"
        "from mcp_sync.client.factories import FIRST_MODELS\n"
        "from mcp_sync.types import ReadResourceResult\n"
        "print(any(model.__pydantic_complete__ for model in FIRST_MODELS))\n"
        "silent = [sys.executable, '-c', 'import sys; sys.stdin.read()']\n"
        "try:\n"
        "    MCPClient.stdio(silent, era='handshake', connect_timeout=0.5)\n"
        "except MCPError as exc:\n"
        "    print(exc.code)\n"
        "print(all(model.__pydantic_complete__ for model in FIRST_MODELS), ReadResourceResult.__pydantic_complete__)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["False", "MCP.TIMEOUT", "True False"]


def test_a_plain_server_loads_no_tasks_nor_apps_module() -> None:
    """A server registering a tool without an app loads neither extension's rules (nor a question's models)."""
    code = (
        "import sys\n"
        "from mcp_sync import MCPServer\n"
        "server = MCPServer('demo')\n"
        "server.tool(lambda text: text, name='echo')\n"
        "server_only = ('mcp_sync.protocol.tasks', 'mcp_sync.protocol.apps', " + repr(CLIENT_FEATURES_MODULE) + ")\n"
        "print(','.join(m for m in server_only if m in sys.modules))\n"
        "server.tool(lambda: 'now', name='clock', ui='ui://clock/app.html')\n"
        "print(','.join(m for m in server_only if m in sys.modules))\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == ["", "mcp_sync.protocol.apps"]


def test_a_stdio_server_starts_no_process_machinery_and_a_process_transport_still_loads_it() -> None:
    """Serving on stdin and stdout loads neither ``subprocess`` nor ``shlex``; the first ProcessTransport does."""
    code = (
        "import sys\n"
        "from mcp_sync import MCPServer\n"
        "server = MCPServer('demo')\n"
        "server.tool(lambda text: text, name='echo')\n"
        "server.serve_stdio()\n"  # (stdin is empty: it serves until end-of-file)
        "machinery = ('subprocess', 'shlex', 'mcp_sync.transports.process')\n"
        "print(','.join(m for m in machinery if m in sys.modules))\n"
        "from mcp_sync.transports.stdio import ProcessTransport\n"
        "transport = ProcessTransport([sys.executable, '-c', 'pass'])\n"
        "print(transport.command_line == f'{sys.executable} -c pass', transport.close(), transport.returncode)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == ["", "True None 0"]


def test_a_tool_server_answers_its_handshake_and_lists_without_the_content_models() -> None:
    """Registering tools (one structured), answering ``initialize`` and the lists declare no content model.

    The server's event for each request it receives says whether the
    ``content`` module is loaded by then: not when the call arrives, after
    the handshake and three lists; by the end, having answered the call of
    the structured tool (a ``CallToolResult``), it is.
    """
    code = (
        "import sys\n"
        "from mcp_sync import MCPServer\n"
        "from mcp_sync.runtime.events import REQUEST_RECEIVED\n"
        "content = 'mcp_sync.protocol.types.content'\n"
        "server = MCPServer('demo')\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "server.tool(add)\n"
        "server.tool(lambda text: text, name='echo')\n"
        "seen = lambda got: sys.stderr.write(f'{got.method} {content in sys.modules}\\n')\n"
        "server.events.on(REQUEST_RECEIVED, seen)\n"
        "print('registered', content in sys.modules, file=sys.stderr, flush=True)\n"
        "server.serve_stdio()\n"
        "print('served', content in sys.modules, file=sys.stderr, flush=True)\n"
    )
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 5, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
    ]
    answers = {}
    pipe = subprocess.PIPE
    with subprocess.Popen([sys.executable, "-c", code], stdin=pipe, stdout=pipe, stderr=pipe, text=True) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            for line in lines:  # one at a time: at the end of its input a server cancels what still runs
                server.stdin.write(json.dumps(line) + "\n")
                server.stdin.flush()
                if "id" in line:
                    answer = json.loads(server.stdout.readline())  # (the server answers, or exits and this is "")
                    answers[answer["id"]] = answer["result"]
            _, told = server.communicate(timeout=60)
        finally:
            server.kill()  # (nothing to do once it has ended; ends it if the exchange failed midway)
    assert told.splitlines() == [
        "registered False",
        "initialize False",
        "tools/list False",
        "resources/list False",
        "prompts/list False",
        "tools/call False",
        "served True",
    ]
    assert [tool["name"] for tool in answers[2]["tools"]] == ["add", "echo"]
    assert answers[4] == {"resources": []} and answers[5] == {"prompts": []}
    assert answers[3]["structuredContent"] == {"result": 5}


LAZY_MODULES = (
    *ON_DEMAND,
    "mcp_sync.protocol.tasks",
    "mcp_sync.client.rounds",
    "mcp_sync.server.stateless",
)
"""Modules loaded on demand, or that load others so: each imports cleanly on its own."""


@pytest.mark.parametrize("module", LAZY_MODULES)
def test_a_module_loaded_on_demand_imports_first_and_alone(module: str) -> None:
    """Imported first in a fresh interpreter, and the questions' models still have the package as their home."""
    code = f"import {module}\nfrom mcp_sync.types import Root\nprint(Root.__module__, Root(uri='file:///a').uri)\n"
    printed = run_fresh(code)
    assert printed.strip() == "mcp_sync.protocol.types file:///a"


@pytest.mark.parametrize(
    ("module", "name", "home"),
    [
        ("mcp_sync.runtime.events", "RequestCompleted", "mcp_sync.runtime.event_payloads"),
        ("mcp_sync.server.functions", "template_variables", "mcp_sync.server.uri_template"),
        ("mcp_sync.protocol.skills", "parse_frontmatter", "mcp_sync.protocol.frontmatter"),
        ("mcp_sync.protocol.skills", "SkillEntry", "mcp_sync.protocol.skill_models"),
        ("mcp_sync.protocol.tasks", "DetailedTask", "mcp_sync.protocol.task_models"),
        ("mcp_sync.types", "ElicitResult", CLIENT_FEATURES_MODULE),
        ("mcp_sync.server", "Elicited", "mcp_sync.server.elicited"),
        ("mcp_sync.server", "ServerStats", "mcp_sync.server.stats"),
    ],
)
def test_a_name_loaded_on_demand_is_its_homes_and_an_unknown_one_fails(module: str, name: str, home: str) -> None:
    import importlib

    lazy, defining = importlib.import_module(module), importlib.import_module(home)
    assert getattr(lazy, name) is getattr(defining, name)
    with pytest.raises(AttributeError, match=rf"'{module}' has no attribute 'Nope'"):
        _ = lazy.Nope


def test_the_skills_module_offers_every_skill_model_and_only_those() -> None:
    from mcp_sync.protocol import skill_models, skills

    assert set(skill_models.__all__) == skills.MODELS
    assert all(getattr(skills, name) is getattr(skill_models, name) for name in skills.MODELS)


def test_the_tasks_module_offers_every_task_model_and_its_old_name() -> None:
    from mcp_sync.protocol import task_models, tasks

    assert set(task_models.__all__) == tasks.MODELS
    assert all(getattr(tasks, name) is getattr(task_models, name) for name in tasks.MODELS)
    assert tasks.LegacyCreateTaskResult is task_models.CoreCreateTaskResult


def test_a_client_loads_the_task_and_app_models_at_its_first_task_and_app(tmp_path: Path) -> None:
    """A call answered at once declares the content models, not the tasks' nor the apps'; a call the server runs as a
    task declares the tasks' models, and a call of a tool with an app, by a client that hosts apps, loads the apps
    extension (and notes the call, so that the result shows the app). The server is a process of its own."""
    server = tmp_path / "server.py"
    server.write_text(
        "from mcp_sync import MCPServer\n"
        "server = MCPServer('demo')\n"
        "server.tool(lambda text: text, name='echo')\n"
        "server.tool(lambda text: text, name='slow', task='required')\n"
        "server.add_app_resource('ui://demo/app.html', html='<p>hi</p>')\n"
        "server.tool(lambda: 'now', name='clock', ui='ui://demo/app.html')\n"
        "server.serve_stdio()\n"
    )
    code = (
        "import sys\n"
        "from mcp_sync import MCPClient\n"
        "later = ('mcp_sync.protocol.types.content', 'mcp_sync.protocol.task_models', 'mcp_sync.protocol.apps',\n"
        "         'mcp_sync.client.apps')\n"
        "loaded = lambda: ','.join(m.split('.', 1)[1] for m in later if m in sys.modules) or '-'\n"
        f"command = [sys.executable, {str(server)!r}]\n"
        "with MCPClient.stdio(command) as client:\n"
        "    print(loaded())\n"
        "    print(client.call_tool('echo', {'text': 'hi'}).text, loaded())\n"
        "    print(client.call_tool('slow', {'text': 'later'}).text, loaded())\n"
        "    print(client.call_tool('clock').text, loaded())\n"
        "with MCPClient.stdio(command, host_apps=True) as client:\n"
        "    from mcp_sync.client.apps import app_call\n"
        "    result = client.call_tool('clock')\n"
        "    print(result.text, loaded(), app_call(result).tool.name)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == [
        "protocol.types.content",
        "hi protocol.types.content",
        "later protocol.types.content,protocol.task_models",
        "now protocol.types.content,protocol.task_models",
        "now protocol.types.content,protocol.task_models,protocol.apps,client.apps clock",
    ]


def test_the_signatures_that_name_wire_models_resolve_and_load_them_then() -> None:
    """``typing.get_type_hints`` of a method that names a model loaded on demand finds it (the annotation reads
    ``models.CallToolResult``): it loads the model's module then, not at import."""
    code = (
        "import sys, typing\n"
        "from mcp_sync import Context, MCPClient, MCPServer\n"
        "from mcp_sync.client.listings import Listings\n"
        "content = 'mcp_sync.protocol.types.content'\n"
        "print(content in sys.modules)\n"
        "print(typing.get_type_hints(MCPClient.call_tool)['return'].__name__)\n"
        "print(typing.get_type_hints(Listings.list_resources)['return'].__name__)\n"
        "print(typing.get_type_hints(MCPServer.read_resource)['return'].__name__)\n"
        "print(typing.get_type_hints(Context.list_roots)['return'])\n"
        "print(content in sys.modules)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == [
        "False",
        "CallToolResult",
        "ListResourcesResult",
        "ReadResourceResult",
        "list[mcp_sync.protocol.types.Root]",
        "True",
    ]


def test_the_public_signatures_resolve_without_loading_the_models_of_a_servers_questions() -> None:
    """``typing.get_type_hints`` (what autodoc, validators and CLIs built on signatures call) resolves the signatures
    naming the sampling and elicitation providers, whose models are still loaded only when first used."""
    code = (
        "import sys, typing\n"
        "from mcp_sync import MCPClient, MCPServer\n"
        "client = typing.get_type_hints(MCPClient.__init__)\n"
        "print([str(client[name]) for name in ('sampling_provider', 'roots_provider', 'elicitation_provider')])\n"
        "print(typing.get_type_hints(MCPServer.set_sampling_provider)['provider'])\n"
        f"print({CLIENT_FEATURES_MODULE!r} in sys.modules)\n"
    )
    printed = run_fresh(code)
    assert printed.splitlines() == [
        "['mcp_sync.client.core.SamplingProvider | None', 'mcp_sync.client.core.RootsProvider | None', "
        "\"typing.Union[mcp_sync.client.core.ElicitationProvider, typing.Literal['auto'], NoneType]\"]",
        "mcp_sync.server.core.SamplingProvider | None",
        "False",
    ]
