"""``mcp_sync.connect``: one call from a server's address to a connected client.

>>> import mcp_sync
>>> server = mcp_sync.MCPServer("demo")
>>> _ = server.register_tool("hello", lambda args, ctx: "hi " + args["name"])
>>> with mcp_sync.connect(server) as client:
...     client.tools.hello(name="Ada").text
'hi Ada'

This module imports nothing heavy: ``import mcp_sync`` binds :func:`connect`
at once (so that the function, not this module, is ``mcp_sync.connect``), and
the client and transports load when it is first called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .client.core import ElicitationProvider, LogHandler, MCPClient, RootsProvider, SamplingProvider
    from .server.core import MCPServer
    from .transports.stdio import StderrTarget

__all__ = ["connect"]


def is_url(target: str) -> bool:
    """Whether a target is an HTTP(S) URL rather than a command line (the one test, for ``connect`` and the CLI)."""
    return target[:8].lower().startswith(("http://", "https://"))


_HTTP_OPTIONS = ("headers", "auth", "http_transport", "session")
_STDIO_OPTIONS = ("env", "cwd", "stderr", "inherit_env")


def connect(
    target: str | Sequence[str] | MCPServer,
    *,
    timeout: float | None = 60.0,
    connect_timeout: float | None = 30.0,
    headers: Mapping[str, str] | None = None,
    auth: Any = None,
    http_transport: Literal["auto", "streamable", "sse"] | None = None,
    session: Any = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrTarget = None,
    inherit_env: bool | None = None,
    sampling_provider: SamplingProvider | None = None,
    elicitation_provider: ElicitationProvider | Literal["auto"] | None = "auto",
    roots_provider: RootsProvider | None = None,
    log_handler: LogHandler | None = None,
    **client_options: Any,
) -> MCPClient:
    """Connect to an MCP server and return the connected :class:`~mcp_sync.client.MCPClient`.

    ``target`` says where the server is:

    - an ``http://`` or ``https://`` URL: Streamable HTTP, falling back to
      the older HTTP+SSE transport (``http_transport`` picks one; ``headers``,
      ``auth`` and a ``requests`` ``session`` apply);
    - a command line, as a string (``"python server.py"``) or a list
      (``["npx", "-y", "pkg"]``): the server is started and spoken to over
      stdio (``env`` adds to a safe default environment, or to all of this
      process's with ``inherit_env=True``; ``cwd``; ``stderr`` takes the
      server's stderr);
    - an :class:`~mcp_sync.server.MCPServer`: it is served in this process
      over an in-memory connection, which ends when the client closes.

    ``timeout`` is the default limit of each call, ``connect_timeout`` that
    of the handshake (seconds; ``None``: no limit). The providers answer the
    server's sampling, elicitation and roots requests (the elicitation one
    is ``"auto"``: a form in a notebook, prompts in a terminal, none where
    nobody can answer; ``None`` turns it off); ``log_handler``
    receives its log messages. Other options go to
    :class:`~mcp_sync.client.MCPClient`: ``era`` (``"auto"``, the default,
    speaks 2026-07-28 with servers that answer ``server/discover`` and the
    ``initialize`` handshake with the others; ``"stateless"`` or ``"handshake"``
    forces one),
    ``cache``, ``max_input_rounds``, and so on. An option that does not
    apply to the kind of target raises ``TypeError``.

    Use the client in a ``with`` block, or call ``close()``. Inside IPython
    or Jupyter, results then display richly (see
    :func:`mcp_sync.display.ipython.enable_rich_display`).
    """
    given = {
        "headers": headers,
        "auth": auth,
        "http_transport": http_transport,
        "session": session,
        "env": env,
        "cwd": cwd,
        "stderr": stderr,
        "inherit_env": inherit_env,
    }
    options = {
        "timeout": timeout,
        "sampling_provider": sampling_provider,
        "elicitation_provider": elicitation_provider,
        "roots_provider": roots_provider,
        "log_handler": log_handler,
        **client_options,
    }
    if isinstance(target, str) and is_url(target):
        _refuse(given, _STDIO_OPTIONS, "an HTTP server")
        client = _connect_http(target, given, connect_timeout, options)
    elif isinstance(target, (str, Sequence)):
        _refuse(given, _HTTP_OPTIONS, "a server started as a command")
        client = _connect_stdio(target, given, connect_timeout, options)
    else:
        _refuse(given, (*_HTTP_OPTIONS, *_STDIO_OPTIONS), "an MCPServer object")
        client = _connect_in_memory(target, connect_timeout, options)
    from .display.ipython import enable_rich_display

    enable_rich_display()
    return client


def _refuse(given: Mapping[str, Any], names: Sequence[str], kind: str) -> None:
    wrong = [name for name in names if given[name] is not None]
    if wrong:
        raise TypeError(f"connect(): {', '.join(wrong)} cannot be used with {kind}")


def _connect_http(
    url: str, given: Mapping[str, Any], connect_timeout: float | None, options: dict[str, Any]
) -> MCPClient:
    from .client import http_client

    return http_client(
        url,
        transport=given["http_transport"] or "auto",
        session=given["session"],
        headers=given["headers"],
        auth=given["auth"],
        connect_timeout=connect_timeout,
        **options,
    )


def _connect_stdio(
    command: str | Sequence[str], given: Mapping[str, Any], connect_timeout: float | None, options: dict[str, Any]
) -> MCPClient:
    from .runtime.imports import import_unwalked
    from .transports.process import server_argv, started_early

    argv = server_argv(command)
    env, inherit_env, cwd = given["env"], bool(given["inherit_env"]), given["cwd"]
    # Started before the client is imported: the server starts up while the client's modules load.
    with started_early(argv, env=env, inherit_env=inherit_env, cwd=cwd) as process:
        import_unwalked("mcp_sync.client")  # (the first import of the client: see import_unwalked)
        from .client.core import MCPClient
        from .client.factories import open_process
        from .transports.stdio import ProcessTransport

        client = MCPClient(**options)
        transport = ProcessTransport(
            argv, env=env, inherit_env=inherit_env, cwd=cwd, stderr=given["stderr"], process=process
        )
    return open_process(client, transport, connect_timeout=connect_timeout)


def _connect_in_memory(server: object, connect_timeout: float | None, options: dict[str, Any]) -> MCPClient:
    from .client.core import MCPClient
    from .server.core import MCPServer
    from .transports.memory import InMemoryTransport

    if not isinstance(server, MCPServer):
        raise TypeError(
            f"connect() takes a URL, a command line or an MCPServer, not {type(server).__name__}",
        )
    client_end, server_end = InMemoryTransport.pair()
    session = server.start(server_end)
    # Whoever ends the connection, the server's side of it is closed too.
    client_end.on_close(lambda reason: session.close())
    client = MCPClient(**options)
    client.connect(client_end, timeout=connect_timeout)
    return client
