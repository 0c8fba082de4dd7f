"""The ``mcp-sync`` command: serve an MCPServer, or use any MCP server from the shell.

Serve a server defined in a file or module (over stdio unless told)::

    mcp-sync run server.py
    mcp-sync run mypackage.server:app --transport http --port 8000

Serve any MCP server on another transport (a bridge; see :mod:`mcp_sync.compose`)::

    mcp-sync proxy https://mcp.example.com/mcp
    mcp-sync proxy "npx -y @modelcontextprotocol/server-everything" --transport http --port 8000
    mcp-sync proxy https://mcp.example.com/mcp --transport sse --scope files:read --no-browser

Use a server, given as a URL, a command line, or a Python file that
``mcp-sync run`` can serve::

    mcp-sync list "python server.py"
    mcp-sync call server.py add a=2 b=3
    mcp-sync call http://127.0.0.1:8000/mcp search --json '{"query": "python"}'
    mcp-sync read server.py notes://readme
    mcp-sync prompt server.py greet name=Ada
    mcp-sync call @github search_issues query=bug --config ~/.config/app/mcp.json

Show a tool's MCP App in the browser (a page on 127.0.0.1, until Ctrl-C or the page closes)::

    mcp-sync app server.py get-time
    mcp-sync app "npx @modelcontextprotocol/server-basic-vanillajs --stdio" get-time --no-browser

A long-running tool the server runs as a task can be left and come back to::

    mcp-sync call server.py build_index --detach      # prints the task id
    mcp-sync task server.py TASK_ID [--wait | --cancel]

A URL that asks for OAuth is signed in to on first use (in a terminal, the
browser opens) and its tokens are kept in ``~/.local/state/mcp-sync/oauth``
(``$MCP_SYNC_OAUTH_DIR``); ``login`` and ``logout`` do it explicitly::

    mcp-sync login https://mcp.example.com/mcp --scope files:read
    mcp-sync logout https://mcp.example.com/mcp

A tool that asks the user something (elicitation) prompts for each field
on the terminal; ``--no-input`` (or no terminal at all) refuses such
questions instead, as the protocol says.

Failures print one line on stderr and exit with code 1 (``--debug`` shows
the traceback and the server's stderr); bad usage exits with code 2.
``python -m mcp_sync`` is the same command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import re
import shlex
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .connect import connect, is_url

if TYPE_CHECKING:
    from .client.auth import OAuth
    from .client.core import MCPClient
    from .protocol.types import CallToolResult, Prompt, Resource
    from .server.core import MCPServer

__all__ = ["CommandError", "load_server", "main", "parse_arguments", "parse_value"]

_OBJECT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
DEFAULT_TIMEOUT = 30.0
"""Seconds allowed for connecting and for each request, unless ``--timeout`` says otherwise."""


class CommandError(Exception):
    """A failure the command reports as one line on stderr, exiting with code 1."""


# ------------------------------------------------------------------ parsing


_NO = object()


def _as_integer(raw: str) -> Any:
    try:
        return int(raw)
    except ValueError:
        return _NO


def _as_number(raw: str) -> Any:
    value = _as_integer(raw)
    if value is not _NO:
        return value
    try:
        number = float(raw)
    except ValueError:
        return _NO
    return number if math.isfinite(number) else _NO


_BOOLEANS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _as_boolean(raw: str) -> Any:
    return _BOOLEANS.get(raw.lower(), _NO)


def _as_null(raw: str) -> Any:
    return None if raw == "null" else _NO


def _as_json(kind: type[Any]) -> Callable[[str], Any]:
    def parse(raw: str) -> Any:
        try:
            value = json.loads(raw)
        except ValueError:
            return _NO
        return value if isinstance(value, kind) else _NO

    return parse


_PARSERS: list[tuple[str, Callable[[str], Any]]] = [
    ("integer", _as_integer),
    ("number", _as_number),
    ("boolean", _as_boolean),
    ("null", _as_null),
    ("array", _as_json(list)),
    ("object", _as_json(dict)),
]


def parse_value(name: str, raw: str, schema: Any) -> Any:
    """The value of argument ``name`` typed as ``raw``, read as its schema says.

    Numbers, booleans (``true``/``false``, ``yes``/``no``, ``1``/``0``) and
    ``null`` are read as such, arrays and objects as JSON, strings as they
    are. Without a type in the schema, a value that is valid JSON is read as
    JSON, anything else as a string.

    >>> parse_value("n", "3", {"type": "number"}), parse_value("on", "yes", {"type": "boolean"})
    (3, True)
    >>> parse_value("tags", '["a"]', {"type": "array"}), parse_value("s", "3", {"type": "string"})
    (['a'], '3')
    >>> parse_value("x", "{bad", {})
    '{bad'
    """
    from .protocol.schema import json_kinds  # (here: `mcp-sync call` starts its server before loading more)

    kinds = json_kinds(schema)
    if not kinds:
        with contextlib.suppress(ValueError):
            return json.loads(raw)
        return raw
    for kind, parse in _PARSERS:
        if kind in kinds:
            value = parse(raw)
            if value is not _NO:
                return value
    if "string" in kinds:
        return raw
    raise CommandError(f"argument {name}: {raw!r} is not {' or '.join(sorted(kinds))}")


def parse_arguments(items: Sequence[str], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``NAME=VALUE`` items as tool arguments, each read against its property in the input ``schema``.

    >>> parse_arguments(["a=1", "b=x"], {"properties": {"a": {"type": "integer"}}})
    {'a': 1, 'b': 'x'}
    """
    properties = (schema or {}).get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    arguments: dict[str, Any] = {}
    for name, raw in _pairs(items, "="):
        arguments[name] = parse_value(name, raw, properties.get(name))
    return arguments


def _pairs(items: Sequence[str] | None, separator: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items or ():
        name, found, value = item.partition(separator)
        if not found or not name.strip():
            raise CommandError(f"{item!r} is not NAME{separator}VALUE")
        pairs.append((name.strip(), value))
    return pairs


# ------------------------------------------------------------------ serving


def _import(location: str) -> Any:
    """Import the file or module ``location``, with anything it prints sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        if location.endswith(".py"):
            path = Path(location).resolve()
            if not path.is_file():
                raise CommandError(f"no such file: {location}")
            sys.path.insert(0, str(path.parent))
            spec = importlib.util.spec_from_file_location(path.stem, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                raise CommandError(f"loading {location} failed: {type(exc).__name__}: {exc}") from exc
            return module
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            return importlib.import_module(location)
        except Exception as exc:
            raise CommandError(f"importing {location} failed: {type(exc).__name__}: {exc}") from exc


def load_server(spec: str) -> MCPServer:
    """The MCPServer named by ``FILE.py[:OBJ]`` or ``MODULE[:OBJ]``.

    Without ``OBJ``, the file or module must define exactly one MCPServer
    at its top level. The file is imported under its own name, not as
    ``__main__``, so an ``if __name__ == "__main__":`` block does not run.
    """
    from .server.core import MCPServer

    location, colon, name = spec.rpartition(":")
    if not colon or not _OBJECT.fullmatch(name):
        location, name = spec, ""
    module = _import(location)
    if name:
        value = module
        for part in name.split("."):
            if not hasattr(value, part):
                raise CommandError(f"{location} has no {name!r}")
            value = getattr(value, part)
        if not isinstance(value, MCPServer):
            raise CommandError(f"{location}:{name} is a {type(value).__name__}, not an MCPServer")
        return value
    found: dict[int, tuple[MCPServer, list[str]]] = {}
    for attribute, value in vars(module).items():
        if isinstance(value, MCPServer):
            found.setdefault(id(value), (value, []))[1].append(attribute)
    if len(found) != 1:
        names = ", ".join(name for _, names in found.values() for name in names)
        problem = f"defines several MCPServers ({names})" if found else "defines no MCPServer"
        raise CommandError(f"{location} {problem}; name one as {location}:NAME")
    return next(iter(found.values()))[0]


def _run(args: argparse.Namespace) -> int:
    if args.transport == "stdio" and (args.host is not None or args.port is not None or args.stateless):
        raise CommandError("--host, --port and --stateless apply to --transport http or sse")
    if args.transport == "sse" and args.stateless:
        raise CommandError("--stateless applies to --transport http: the HTTP+SSE transport keeps sessions")
    server = load_server(args.server)
    if args.transport == "stdio":
        server.serve_stdio()
        return 0
    return _serve_http(server, args)


def _proxy(args: argparse.Namespace) -> int:
    if args.transport == "stdio" and (args.host is not None or args.port is not None):
        raise CommandError("--host and --port apply to --transport http or sse")
    from .compose import proxy

    target, options = _target(args)
    if args.auth is not None and "auth" not in options:
        raise CommandError("--auth applies to URLs, not to servers started as a command")
    if args.auth == "none":
        options["auth"] = None
    # On stdio there is one client: its own connection would be a second one to the target, for nothing.
    with proxy(target, shared=args.shared or args.transport == "stdio", **options) as server:
        if args.transport == "stdio":
            server.serve_stdio()
            return 0
        return _serve_http(server, args)


def _serve_http(server: MCPServer, args: argparse.Namespace) -> int:
    """Serve ``server`` over HTTP (or HTTP+SSE, ``--transport sse``) until Ctrl-C."""
    from .server.http.embedded import start_http

    port = 8000 if args.port is None else args.port
    stateless = getattr(args, "stateless", False)
    with start_http(server, args.host or "127.0.0.1", port, stateless=stateless) as running:
        url = running.url
        if args.transport == "sse":
            url = url.removesuffix(running.app.path) + running.app.sse_path
        print(f"mcp-sync: serving {server.info.name} on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


# ------------------------------------------------------------------ clients


def _server_command(target: str) -> list[str]:
    """The command line that starts the server ``target``; a Python file is served with ``mcp-sync run``."""
    location, colon, name = target.rpartition(":")
    if not colon or not _OBJECT.fullmatch(name):
        location = target
    if location.endswith(".py") and Path(location).is_file():
        return [sys.executable, "-m", "mcp_sync", "run", target]
    argv = shlex.split(target)
    if not argv:
        raise CommandError("the server command is empty")
    return argv


def _discard(line: str) -> None:
    """Where a server's stderr goes unless ``--debug``."""


def _oauth(args: argparse.Namespace) -> OAuth:
    """The sign-in of a URL target: tokens in the file store; in a terminal, the browser (``--no-browser``: a link)."""
    from .client.auth import FileTokenStore, LoopbackInteraction, OAuth, default_interaction

    no_browser = getattr(args, "no_browser", False)
    interaction = LoopbackInteraction(open_browser=False) if no_browser else default_interaction()
    return OAuth(
        scopes=getattr(args, "scope", None),
        client_id=getattr(args, "client_id", None),
        token_store=FileTokenStore(),
        interaction=interaction,
    )


def _client(args: argparse.Namespace, **extra: Any) -> MCPClient:
    target, options = _target(args)
    # "auto": prompts in a terminal
    return connect(target, elicitation_provider=None if args.no_input else "auto", **options, **extra)


def _target(args: argparse.Namespace) -> tuple[str | list[str], dict[str, Any]]:
    """What ``connect()`` takes for ``args.target``: the URL or command line, and its options."""
    options: dict[str, Any] = {"timeout": args.timeout, "connect_timeout": args.timeout}
    headers = {name: value.strip() for name, value in _pairs(args.header, ":")}
    environment = dict(_pairs(args.env, "="))
    target: str | list[str] = args.target
    if args.target.startswith("@"):
        target, headers, environment = _configured(args, headers, environment)
    if isinstance(target, str) and is_url(target):
        if environment:
            raise CommandError("--env applies to servers started as a command, not to URLs")
        # A token given by hand wins; otherwise a server that asks for OAuth gets it.
        given = any(name.lower() == "authorization" for name in headers)
        return target, {**options, "headers": headers or None, "auth": None if given else _oauth(args)}
    if headers:
        raise CommandError("--header applies to URLs, not to servers started as a command")
    stderr = None if args.debug else _discard
    command = _server_command(target) if isinstance(target, str) else target
    return command, {**options, "env": environment, "inherit_env": True, "stderr": stderr}


def _configured(
    args: argparse.Namespace, headers: dict[str, str], environment: dict[str, str]
) -> tuple[str | list[str], dict[str, str], dict[str, str]]:
    """``@NAME``: the server of that name in ``--config FILE`` (its headers or env, then those given here)."""
    from .compose import configured_servers, server_target

    if args.config is None:
        raise CommandError(f"{args.target} names a server of a configuration file: give it with --config FILE")
    name = args.target[1:]
    try:
        servers = configured_servers(args.config)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"cannot read the mcpServers of {args.config}: {exc}") from exc
    if name not in servers:
        known = ", ".join(f"@{known}" for known in servers) or "none"
        raise CommandError(f"{args.config} has no server {name!r} (it has {known})")
    target, options = server_target(name, servers[name])
    return target, {**(options.get("headers") or {}), **headers}, {**(options.get("env") or {}), **environment}


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _table(rows: Sequence[tuple[str, str]], indent: str = "  ") -> list[str]:
    """Two aligned columns; a first column too wide pushes the second onto the next line."""
    width = min(max(len(first) for first, _ in rows), 60)
    lines = []
    for first, second in rows:
        if not second:
            lines.append(f"{indent}{first}")
        elif len(first) > width:
            lines += [f"{indent}{first}", f"{indent}    {second}"]
        else:
            lines.append(f"{indent}{first:<{width}}  {second}")
    return lines


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _list(args: argparse.Namespace) -> int:
    from .protocol.schema import tool_summary

    with _client(args) as client:
        capabilities = client.server_capabilities
        info, version = client.server_info, client.protocol_version
        tools, resources = client.tools(), client.resources()
        templates, prompts = client.resource_templates(), client.prompts()
    if args.json:
        _print_json(
            {
                "server": {**info.to_wire(), "protocolVersion": version},
                "tools": [tool.to_wire() for tool in tools],
                "resources": [resource.to_wire() for resource in resources],
                "resourceTemplates": [template.to_wire() for template in templates],
                "prompts": [prompt.to_wire() for prompt in prompts],
            }
        )
        return 0
    lines = [f"{info.name} {info.version} (protocol {version})"]
    sections: list[tuple[str, bool, list[tuple[str, str]]]] = [
        ("Tools", capabilities.tools is not None, [(tool_summary(t), _first_line(t.description)) for t in tools]),
        ("Resources", capabilities.resources is not None, [(r.uri, _resource_note(r)) for r in resources]),
        ("Resource templates", capabilities.resources is not None, [(t.uri_template, t.name) for t in templates]),
        (
            "Prompts",
            capabilities.prompts is not None,
            [_prompt_row(p) for p in prompts],
        ),
    ]
    for title, offered, rows in sections:
        if offered:
            lines += ["", f"{title} ({len(rows)})", *(_table(rows) if rows else ["  (none)"])]
    print("\n".join(lines))
    return 0


def _resource_note(resource: Resource) -> str:
    return f"{resource.name} ({resource.mime_type})" if resource.mime_type else resource.name


def _prompt_row(prompt: Prompt) -> tuple[str, str]:
    arguments = [f"{a.name}{'' if a.required else '?'}" for a in prompt.arguments or []]
    return f"{prompt.name}({', '.join(arguments)})", _first_line(prompt.description)


def _call(args: argparse.Namespace) -> int:
    with _client(args) as client:
        tool = {tool.name: tool for tool in client.tools()}.get(args.tool)
        arguments: dict[str, Any] = {}
        if args.json_arguments is not None:
            try:
                arguments = json.loads(args.json_arguments)
            except ValueError as exc:
                raise CommandError(f"--json is not valid JSON: {exc}") from None
            if not isinstance(arguments, dict):
                raise CommandError("--json must be a JSON object")
        arguments.update(parse_arguments(args.arguments, tool.input_schema if tool is not None else None))
        if args.detach:
            task = client.start_tool(args.tool, arguments)
            if task.task_id is not None:
                print(task.task_id)
                return 0
            print("the server answered at once (no task to detach)", file=sys.stderr)
            result = task.result(0)
        else:
            result = client.call_tool(args.tool, arguments, progress=True)
        return _print_result(args, args.tool, result)  # shown before the server is ended: that takes a moment


def _print_result(args: argparse.Namespace, tool: str, result: CallToolResult) -> int:
    from .display.render import content_text

    if args.raw:
        _print_json(result.to_wire())
    elif not result.is_error:
        if result.structured_content is not None:
            _print_json(result.structured_content)
        else:
            for block in result.content:
                print(content_text(block))
    if result.is_error:
        reason = _first_line(result.text) or "no reason given"
        raise CommandError(f"tool {tool!r} failed: {reason}")
    return 0


def _app(args: argparse.Namespace) -> int:
    """Show the app of a tool's call in the browser, until the page closes or Ctrl-C (which tears it down)."""
    import webbrowser

    from .apps import AppHost
    from .protocol.apps import tool_ui
    from .protocol.errors import MCPError
    from .server.http.wsgi import WSGIServer

    with _client(args, host_apps=True) as client, contextlib.ExitStack() as stack:
        tool = client.tools.find(args.tool)
        if tool is None:
            raise CommandError(f"the server has no tool {args.tool!r}")
        if tool_ui(tool) is None:
            raise CommandError(f"tool {args.tool!r} has no app (its _meta.ui names no ui:// resource)")
        arguments = parse_arguments(args.arguments, tool.input_schema)
        # Two ports of 127.0.0.1, two origins: the page on one, the sandbox (the app) on the other. Each
        # server's application is set once both are bound, since the host must know both origins.
        unbound: Any = None  # each server's application, set before it starts
        page = stack.enter_context(contextlib.closing(WSGIServer(unbound, "127.0.0.1", args.port or 0)))
        sandbox = stack.enter_context(contextlib.closing(WSGIServer(unbound, "127.0.0.1", 0)))
        host = AppHost(page.url, sandbox.url)
        for server in (page, sandbox):
            server.app = host
            server.on_close(host.close)  # wakes the page's pending poll, so the server's threads end
            server.start()
        view = host.show(client, tool, arguments, timeout=args.timeout)
        print(view.url, flush=True)
        if not args.no_browser:
            webbrowser.open(view.url)
        try:
            view.bridge.deliver_result(client.call_tool(tool.name, arguments))
        except MCPError as exc:
            view.bridge.cancel(exc.message)
            print(f"mcp-sync: tool {tool.name!r} failed: {_one_line(exc)}", file=sys.stderr, flush=True)
        try:  # the banner inside: a Ctrl-C right after it (the moment it says Ctrl-C stops) is caught here
            print(f"mcp-sync: showing {tool.name}'s app (Ctrl-C stops)", file=sys.stderr, flush=True)
            view.wait_closed()
            print("mcp-sync: the page closed", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            answered = view.teardown("the host is closing")
            print(f"mcp-sync: closed ({'the app' if answered else 'no answer from the app'})", file=sys.stderr)
    return 0


def _task(args: argparse.Namespace) -> int:
    with _client(args) as client:
        task = client.task(args.task_id)
        if args.cancel:
            task.cancel()
            print(f"{args.task_id}: cancel sent")
            return 0
        if not args.wait:
            message = f": {task.progress}" if task.progress else ""
            print(f"{args.task_id}: {task.status}{message}")
            return 0
        import concurrent.futures

        try:
            result = task.result(timeout=args.timeout)
        except concurrent.futures.TimeoutError:
            raise CommandError(f"task {args.task_id} did not end within {args.timeout}s") from None
        except concurrent.futures.CancelledError:
            raise CommandError(f"task {args.task_id} was cancelled") from None
        return _print_result(args, args.task_id, result)


def _login(args: argparse.Namespace) -> int:
    if not is_url(args.target):
        raise CommandError("login applies to URLs")
    tokens = _oauth(args).login(args.target)
    if tokens is None:
        print(f"{args.target} asks for no sign-in")
    else:
        print(f"signed in to {args.target}" + (f" (scopes: {tokens.scope})" if tokens.scope else ""))
    return 0


def _logout(args: argparse.Namespace) -> int:
    if not is_url(args.target):
        raise CommandError("logout applies to URLs")
    _oauth(args).logout(args.target)
    print(f"signed out of {args.target}")
    return 0


def _read(args: argparse.Namespace) -> int:
    from .display.render import read_resource_result_text

    with _client(args) as client:
        result = client.read_resource(args.uri)
        if args.raw:
            _print_json(result.to_wire())
        else:
            print(read_resource_result_text(result))
    return 0


def _prompt(args: argparse.Namespace) -> int:
    from .display.render import get_prompt_result_text

    arguments = dict(_pairs(args.arguments, "="))
    with _client(args) as client:
        result = client.get_prompt(args.name, arguments)
        if args.raw:
            _print_json(result.to_wire())
        else:
            print(get_prompt_result_text(result))
    return 0


# --------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="Serve an MCP server, or use one from the shell.",
        epilog='TARGET is a URL (http:// or https://), a command line (quote it: "python server.py"), '
        "a Python file (FILE.py[:OBJ]) that mcp-sync run can serve, or @NAME of an mcpServers file (--config FILE).",
    )
    parser.add_argument("--version", action="version", version=f"mcp-sync {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks (and the server's stderr)")
    reaching = argparse.ArgumentParser(add_help=False, parents=[common])
    reaching.add_argument("target", metavar="TARGET", help="URL, command line or FILE.py[:OBJ] of the server")
    reaching.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="limit per request")
    reaching.add_argument("-H", "--header", action="append", metavar="'NAME: VALUE'", help="HTTP header (repeatable)")
    reaching.add_argument("-e", "--env", action="append", metavar="NAME=VALUE", help="server environment (repeatable)")
    reaching.add_argument("--config", metavar="FILE", help="an mcpServers JSON file, for a TARGET given as @NAME")
    client = argparse.ArgumentParser(add_help=False, parents=[reaching])
    client.add_argument(
        "--no-input", action="store_true", help="never prompt: refuse the server's questions (elicitation)"
    )

    run = commands.add_parser("run", parents=[common], help="serve an MCPServer from a file or module")
    run.add_argument("server", metavar="FILE.py[:OBJ]|MODULE[:OBJ]")
    run.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    run.add_argument("--host", help="address to listen on (http, sse; default 127.0.0.1)")
    run.add_argument("--port", type=int, help="port to listen on (http, sse; default 8000)")
    run.add_argument("--stateless", action="store_true", help="serve Streamable HTTP without sessions")
    run.set_defaults(handler=_run)

    bridge = commands.add_parser(
        "proxy", parents=[reaching], help="serve any MCP server (URL or command line) on stdio, HTTP or HTTP+SSE"
    )
    bridge.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    bridge.add_argument("--host", help="address to listen on (http, sse; default 127.0.0.1)")
    bridge.add_argument("--port", type=int, help="port to listen on (http, sse; default 8000)")
    bridge.add_argument(
        "--shared",
        action="store_true",
        help="one connection to TARGET for every client (default over http and sse: one per client)",
    )
    bridge.add_argument(
        "--auth",
        choices=["oauth", "none"],
        help="a URL TARGET's sign-in: oauth (the default: when the server asks; tokens kept as by login) or none",
    )
    bridge.add_argument("--scope", action="append", metavar="SCOPE", help="an OAuth scope to ask for (repeatable)")
    bridge.add_argument("--client-id", metavar="ID", help="a client registered beforehand with the server's OAuth")
    bridge.add_argument("--no-browser", action="store_true", help="print the sign-in link instead of opening it")
    bridge.set_defaults(handler=_proxy)

    listing = commands.add_parser("list", parents=[client], help="list tools, resources, templates and prompts")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)

    call = commands.add_parser("call", parents=[client], help="call a tool")
    call.add_argument("tool", metavar="TOOL")
    # A default keeps argparse from listing the optional NAME=VALUE among the missing arguments when TOOL is.
    call.add_argument(
        "arguments", nargs="*", default=[], metavar="NAME=VALUE", help="arguments, read as the tool's schema says"
    )
    call.add_argument("--json", dest="json_arguments", metavar="OBJECT", help="arguments as a JSON object")
    call.add_argument("--raw", action="store_true", help="print the whole result as JSON")
    call.add_argument("--detach", action="store_true", help="start the call as a task and print its id")
    call.set_defaults(handler=_call)

    showing = commands.add_parser("app", parents=[client], help="show a tool's MCP App in the browser")
    showing.add_argument("tool", metavar="TOOL")
    showing.add_argument("arguments", nargs="*", default=[], metavar="NAME=VALUE", help="the tool's arguments")
    showing.add_argument("--port", type=int, help="the page's port on 127.0.0.1 (default: any free one)")
    showing.add_argument("--no-browser", action="store_true", help="print the page's URL without opening it")
    showing.set_defaults(handler=_app)

    following = commands.add_parser("task", parents=[client], help="show, wait for or cancel a task")
    following.add_argument("task_id", metavar="ID", help="the task's id (as call --detach printed it)")
    doing = following.add_mutually_exclusive_group()
    doing.add_argument("--wait", action="store_true", help="wait (up to --timeout) and print the result")
    doing.add_argument("--cancel", action="store_true", help="ask the server to cancel the task")
    following.add_argument("--raw", action="store_true", help="print the whole result as JSON")
    following.set_defaults(handler=_task)

    login = commands.add_parser("login", parents=[common], help="sign in to a server that asks for OAuth")
    login.add_argument("target", metavar="URL")
    login.add_argument("--scope", action="append", metavar="SCOPE", help="a scope to ask for (repeatable)")
    login.add_argument("--client-id", metavar="ID", help="a client registered beforehand with the server's OAuth")
    login.add_argument("--no-browser", action="store_true", help="print the sign-in link instead of opening it")
    login.set_defaults(handler=_login)

    logout = commands.add_parser("logout", parents=[common], help="forget the tokens kept for a server")
    logout.add_argument("target", metavar="URL")
    logout.set_defaults(handler=_logout)

    read = commands.add_parser("read", parents=[client], help="read a resource")
    read.add_argument("uri", metavar="URI")
    read.add_argument("--raw", action="store_true", help="print the whole result as JSON")
    read.set_defaults(handler=_read)

    prompt = commands.add_parser("prompt", parents=[client], help="render a prompt")
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("arguments", nargs="*", default=[], metavar="NAME=VALUE")  # optional, as for call
    prompt.add_argument("--raw", action="store_true", help="print the whole result as JSON")
    prompt.set_defaults(handler=_prompt)
    return parser


def _one_line(exc: BaseException) -> str:
    """What went wrong, on one line: the message's first line, plus the server's last stderr line."""
    from .protocol.errors import MCPError

    if isinstance(exc, MCPError):
        line = _first_line(exc.message).split("; stderr:")[0] or exc.code
        said = str(exc.context.get("stderr") or "").strip().splitlines()
        return f"{line} (server said: {said[-1].strip()})" if said else line
    if isinstance(exc, CommandError):
        return str(exc)
    return f"{type(exc).__name__}: {_first_line(str(exc))}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcp-sync`` command with ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    # argparse ends a nargs="*" positional at the first option: NAME=VALUE
    # items after ``--json ...`` or ``--raw`` come back unparsed, and belong there.
    if extra:
        if not hasattr(args, "arguments") or any(item.startswith("-") for item in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.arguments = [*args.arguments, *extra]
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("mcp-sync: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (``mcp-sync list ... | head``): stop
        # quietly, and keep Python from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        print(f"mcp-sync: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    return code
