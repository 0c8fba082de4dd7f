"""``mcp_sync.testing``: a pytest plugin for testing MCP servers; every client and server it starts ends with the test.

Installing mcp_sync registers it with pytest (the ``pytest11`` entry point
``mcp_sync.testing``), so its fixtures are there in every test, with no import
and no ``conftest.py``:

- ``mcp_connect(target, **options)``: a connected :class:`~mcp_sync.client.MCPClient`, with
  ``target`` as :func:`mcp_sync.connect` takes it: an :class:`~mcp_sync.server.MCPServer` object
  (in memory), a command line (a subprocess over stdio) or an ``http(s)://`` URL;
- ``mcp_http(server, **options)``: ``server`` served over HTTP on a free port of 127.0.0.1,
  and a client connected to it;
- ``mcp_serve_http(server, **options)``: the server alone, as :func:`mcp_sync.start_http` serves it
  (its ``url`` to connect to; ``options`` such as ``stateless=True`` go to the WSGI app).

A test uses them like this (``server`` being the MCPServer of your code)::

    def test_add(mcp_connect):
        client = mcp_connect(server)                                  # or [sys.executable, "server.py"], a URL
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}

    def test_add_over_http(mcp_http):
        assert mcp_http(server, protocol_version="2025-11-25").tools.add(a=1, b=2).text == "3"

After the test, passed or failed, every client the fixtures made is closed
(a stdio server process ends with its client) and every HTTP server is
stopped. ``options`` go to :func:`mcp_sync.connect`, with one default of
their own: ``elicitation_provider=None``, so a server's question never waits
for a person at a terminal. The protocol revision, and so the era, is the
client's ``protocol_version`` option: ``"2026-07-28"`` for the stateless era,
an earlier one (``"2025-11-25"``) for the ``initialize`` handshake. To run a
whole suite in one era, give a default on the command line
(``pytest --mcp-protocol-version 2025-11-25``) or in the ini file
(``mcp_protocol_version = 2025-11-25``); an option given in the test wins.

``pytest -p no:mcp_sync.testing`` turns the plugin off. Loading it costs
next to nothing: the client, server and transport modules are imported only
when a fixture is used.

PYTEST_DONT_REWRITE: pytest has no assert to rewrite here, and so does not warn when this module was imported first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .client.core import MCPClient
    from .server.core import MCPServer
    from .server.http.embedded import RunningHTTPServer

__all__ = ["Connections", "mcp_connect", "mcp_http", "mcp_serve_http"]

_VERSION_OPTION = "mcp_protocol_version"
_VERSION_HELP = "the protocol_version the mcp_connect and mcp_http fixtures' clients offer when the test names none"


class Connections:
    """The clients and HTTP servers that one test's fixtures made; :meth:`close` ends them all.

    The ``mcp_connect`` fixture is one of these (calling it is :meth:`connect`);
    ``mcp_http`` and ``mcp_serve_http`` are its :meth:`http` and :meth:`serve_http`.
    Outside pytest it works the same::

        >>> import mcp_sync
        >>> from mcp_sync.testing import Connections
        >>> server = mcp_sync.MCPServer("demo")
        >>> _ = server.register_tool("hello", lambda args, ctx: "hi " + args["name"])
        >>> connections = Connections(protocol_version="2025-11-25")
        >>> client = connections.http(server)
        >>> client.tools.hello(name="Ada").text, client.protocol_version
        ('hi Ada', '2025-11-25')
        >>> connections.close()
        >>> client.initialized
        False
    """

    def __init__(self, protocol_version: str | None = None) -> None:
        self.protocol_version = protocol_version
        """The client option ``protocol_version`` when a call gives none (``None``: the client's own default)."""
        self._stack = ExitStack()

    def connect(self, target: str | Sequence[str] | MCPServer, **options: Any) -> MCPClient:
        """A client connected to ``target`` by :func:`mcp_sync.connect` (given ``options``); :meth:`close` closes it."""
        from .connect import connect

        if self.protocol_version is not None:
            options.setdefault("protocol_version", self.protocol_version)
        # A test never waits for someone to answer a server's question (pytest -s in a terminal would prompt).
        options.setdefault("elicitation_provider", None)
        client = connect(target, **options)
        self._stack.callback(client.close)
        return client

    __call__ = connect

    def serve_http(self, server: MCPServer, **options: Any) -> RunningHTTPServer:
        """``server`` served by :func:`mcp_sync.start_http` (a free port of 127.0.0.1 unless ``options`` say
        otherwise; the others go to :class:`~mcp_sync.StreamableHTTPApp`), stopped by :meth:`close`."""
        from .server.http.embedded import start_http

        running = start_http(server, **options)
        self._stack.callback(running.close)
        return running

    def http(self, server: MCPServer, **options: Any) -> MCPClient:
        """A client connected over HTTP to ``server``, served by :meth:`serve_http`; ``options`` go to the client."""
        return self.connect(self.serve_http(server).url, **options)

    def close(self) -> None:
        """Close every client and stop every server, the newest first (a client before the server it talks to)."""
        self._stack.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--mcp-protocol-version`` and the ini option ``mcp_protocol_version``: the fixtures' default revision."""
    parser.addini(_VERSION_OPTION, _VERSION_HELP)
    group = parser.getgroup("mcp_sync", "MCP server testing (mcp_sync.testing)")
    group.addoption("--mcp-protocol-version", dest=_VERSION_OPTION, metavar="REVISION", help=_VERSION_HELP)


@pytest.fixture
def mcp_connect(request: pytest.FixtureRequest) -> Iterator[Connections]:
    """Connect to an MCP server: ``mcp_connect(target, **options)``, as :func:`mcp_sync.connect`.

    ``target`` is an MCPServer object, a command line or a URL; every client made is closed after the test::

        def test_echo(mcp_connect):
            client = mcp_connect([sys.executable, "examples/echo_server.py"])
            assert client.tools.echo(text="hi").text == "hi"
    """
    config = request.config
    version = config.getoption(_VERSION_OPTION) or config.getini(_VERSION_OPTION) or None
    connections = Connections(protocol_version=version)
    yield connections
    connections.close()


@pytest.fixture
def mcp_http(mcp_connect: Connections) -> Callable[..., MCPClient]:
    """Serve a server over HTTP on a free port of 127.0.0.1 and connect: ``mcp_http(server, **options)``.

    ``options`` go to the client; the client is closed and the server stopped after the test::

        def test_over_http(mcp_http):
            assert mcp_http(server).tools.echo(text="hi").text == "hi"
    """
    return mcp_connect.http


@pytest.fixture
def mcp_serve_http(mcp_connect: Connections) -> Callable[..., RunningHTTPServer]:
    """Serve a server over HTTP on a free port of 127.0.0.1: ``mcp_serve_http(server, **options)``.

    ``options`` go to :func:`mcp_sync.start_http`; the server is stopped after the test::

        def test_stateless_app(mcp_serve_http, mcp_connect):
            running = mcp_serve_http(server, stateless=True)
            assert mcp_connect(running.url).tools.echo(text="hi").text == "hi"
    """
    return mcp_connect.serve_http
