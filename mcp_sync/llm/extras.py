"""The provider SDKs, each an optional extra, imported only when a feature that needs it is used.

>>> load("json", "none").dumps([1])
'[1]'
>>> try:
...     load("no_such_sdk_here", "openai")
... except ImportError as exc:
...     print(exc)
no_such_sdk_here is not installed: pip install "mcp-sync-py[openai]"
"""

from __future__ import annotations

import importlib
from types import ModuleType


def load(module: str, extra: str) -> ModuleType:
    """Import ``module``; when it is missing, raise ``ImportError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = ImportError(f'{module} is not installed: pip install "mcp-sync-py[{extra}]"')
        missing.name = module
        raise missing from exc
