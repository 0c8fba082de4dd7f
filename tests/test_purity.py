"""``import mcp_sync`` stays light, and its lazy names resolve (the layer rules are in test_architecture.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mcp_sync


def test_import_mcp_sync_is_light() -> None:
    code = (
        "import sys, mcp_sync\n"
        "heavy = [m for m in ('requests', 'sseclient', 'opentelemetry', 'mcp_sync.client', 'mcp_sync.server',"
        " 'mcp_sync.display') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""


def test_lazy_exports_resolve_and_unknown_names_fail() -> None:
    assert mcp_sync.MCPServer.__name__ == "MCPServer"
    assert "MCPClient" in dir(mcp_sync)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = mcp_sync.Nope  # type: ignore[attr-defined]


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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == ["False", "True", "True"]
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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    lines = out.stdout.splitlines()
    assert lines == ["", "False", "mcp_sync.protocol.messages mcp_sync.protocol.types"]


def test_the_public_types_module_finds_the_envelopes_and_refuses_unknown_names() -> None:
    import mcp_sync.types as public

    assert public.ServerResult is public.ServerResult  # looked up once, then kept
    assert public.JSONRPCError is public.JSONRPCErrorResponse
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = public.Nope  # type: ignore[attr-defined]
