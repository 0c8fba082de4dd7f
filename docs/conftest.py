"""Every code example of these pages runs in the suite: the runner is tests/docs/doc_snippets.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "docs")]  # the peers' fixtures (redisserver, authserver) and the runner

import doc_snippets  # noqa: E402
import peers  # noqa: E402

# Not doctest modules: Sphinx's configuration and extensions, and this file (its name is tests/conftest.py's).
collect_ignore = ["conf.py", "_ext", "_build", "conftest.py"]
pytest_collect_file = doc_snippets.collector()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The examples of a page that starts the authorization server (a peer) are interop tests."""
    for item in items:
        here = item.path.is_relative_to(Path(__file__).parent) and item.path.suffix == ".rst"
        if here and doc_snippets.INTEROP_HINT in item.path.read_text(encoding="utf-8"):
            item.add_marker(peers.MARK)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """As in tests/conftest.py: only an interop example may use a peer."""
    peers.installs_allowed = item.get_closest_marker(peers.MARK) is not None
