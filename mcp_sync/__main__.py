"""``python -m mcp_sync``: the ``mcp-sync`` command (see :mod:`mcp_sync.cli`)."""

from .cli import main

raise SystemExit(main())
