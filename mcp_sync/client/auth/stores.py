"""Where tokens, registrations and pending sign-ins are kept: in memory, in files, or anywhere you like.

A store maps a string key to a JSON object. The flow uses three kinds of
key: ``tokens <server URL>``, ``client <issuer>`` and ``pending <state>``.
Write your own for a database or a Django model: any object with ``load``
and ``save`` will do::

    class DjangoStore:
        def load(self, key: str) -> dict | None:
            row = OAuthEntry.objects.filter(key=key).first()
            return row.value if row else None

        def save(self, key: str, value: dict | None) -> None:
            if value is None:
                OAuthEntry.objects.filter(key=key).delete()
            else:
                OAuthEntry.objects.update_or_create(key=key, defaults={"value": value})
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "default_store_directory"]


class TokenStore(Protocol):
    """Keeps JSON objects under string keys; ``save(key, None)`` forgets one."""

    def load(self, key: str) -> dict[str, Any] | None:
        """The object saved under ``key``, or ``None``."""
        ...

    def save(self, key: str, value: dict[str, Any] | None) -> None:
        """Keep ``value`` under ``key`` (``None``: forget it)."""
        ...


class MemoryTokenStore:
    """A store for one process, forgotten when it ends (the default).

    >>> store = MemoryTokenStore()
    >>> store.save("tokens https://x/mcp", {"access_token": "..."})
    >>> sorted(store.load("tokens https://x/mcp"))
    ['access_token']
    """

    def __init__(self) -> None:
        self._values: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._values.get(key)
            return json.loads(json.dumps(value)) if value is not None else None  # a copy the caller may change

    def save(self, key: str, value: dict[str, Any] | None) -> None:
        with self._lock:
            if value is None:
                self._values.pop(key, None)
            else:
                self._values[key] = json.loads(json.dumps(value))


def default_store_directory() -> Path:
    """``$MCP_SYNC_OAUTH_DIR``, else ``$XDG_STATE_HOME/mcp-sync/oauth``, else ``~/.local/state/mcp-sync/oauth``."""
    configured = os.environ.get("MCP_SYNC_OAUTH_DIR")
    if configured:
        return Path(configured)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "mcp-sync" / "oauth"


class FileTokenStore:
    """One file per key in ``directory`` (mode 0600, in a 0700 directory), shared safely by processes.

    Each write goes to a temporary file that replaces the old one at once
    (``os.replace``), so a reader never sees half a file; the last writer
    wins. File names are a hash of the key: they say nothing of the server.

    >>> import tempfile
    >>> store = FileTokenStore(tempfile.mkdtemp())
    >>> store.save("client https://auth.example", {"client_id": "abc"})
    >>> store.load("client https://auth.example")
    {'client_id': 'abc'}
    >>> store.save("client https://auth.example", None)
    >>> store.load("client https://auth.example") is None
    True
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_store_directory()

    def _path(self, key: str) -> Path:
        return self.directory / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            text = self._path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            document = json.loads(text)
        except ValueError:
            return None  # not ours, or from another version: as if absent
        if not isinstance(document, dict) or document.get("key") != key or not isinstance(document.get("value"), dict):
            return None
        value: dict[str, Any] = document["value"]
        return value

    def save(self, key: str, value: dict[str, Any] | None) -> None:
        path = self._path(key)
        if value is None:
            path.unlink(missing_ok=True)
            return
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:  # mkstemp made it 0600
                json.dump({"key": key, "value": value}, file)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
