"""Runs the code examples of the documentation (docs/**/*.rst) with Sybil; ``docs/conftest.py`` collects them.

The conventions (docs/contributing.rst, "Writing docs", says them for writers):

- ``.. code-block:: python`` and ``.. invisible-code-block: python`` blocks run in order, one namespace per
  page, with the repository's root as working directory, not as ``__main__``;
- ``.. code-block:: console``: each ``$ `` line runs (``mcp-sync`` and ``python`` are this interpreter's) and
  must exit 0; the lines under it, if any, must each be a line of its output (``...`` stands for any lines);
  ``$ pip install`` lines are shown, not run;
- every page's namespace holds ``docs_stack`` (an ``ExitStack`` closed when the page ends), ``docs_tmp`` (a
  directory of its own), ``start_redis()`` (a real Redis; its ``.url``) and ``start_authorization_server(
  resource)`` (the suite's OAuth authorization server, a peer: a page using it is an interop test);
- when a page ends, every thread mcp_sync started for it has ended.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.parsers.rest import CodeBlockParser, PythonCodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 120.0
THREADS_END_WITHIN = 5.0
PROMPT = "$ "
INTEROP_HINT = "start_authorization_server("
"""A page whose text has this uses a peer, so its examples are marked ``interop``."""


def command_argv(command: str) -> list[str] | None:
    """The argv a shown command runs as, or None for one that is only shown (``pip install``)."""
    argv = shlex.split(command)
    if argv[:2] == ["pip", "install"]:
        return None
    # "python ..." inside an argument is a server's command line: run by this interpreter too.
    argv = [arg.replace("python ", f"{sys.executable} ", 1) if arg.startswith("python ") else arg for arg in argv]
    if argv[0] == "mcp-sync":
        return [sys.executable, "-m", "mcp_sync", *argv[1:]]
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    raise AssertionError(f"a console example runs mcp-sync, python or pip install, not {argv[0]!r}: {command}")


def this_interpreter_first(path: str) -> str:
    return f"{Path(sys.executable).parent}{os.pathsep}{path}"


def shown_output_is_printed(shown: list[str], printed: str) -> None:
    """Each shown line, in order, is a line of what was printed; ``...`` stands for any number of lines."""
    lines = [line.strip() for line in printed.splitlines()]
    at = 0
    for want in shown:
        if want.strip() == "...":
            continue
        try:
            at = lines.index(want.strip(), at) + 1
        except ValueError:
            raise AssertionError(f"{want!r} is shown but not printed; printed:\n{printed}") from None


def evaluate_console(example: Example) -> None:
    """Runs each ``$ `` command of a console block; the command must exit 0 and print what is shown under it."""
    steps: list[tuple[str, list[str]]] = []
    for line in str(example.parsed).splitlines():
        if line.startswith(PROMPT):
            steps.append((line[len(PROMPT) :], []))
        elif steps and line.strip():
            steps[-1][1].append(line)
    assert steps, "a console block shows at least one $ command"
    env = {**os.environ, "PATH": this_interpreter_first(os.environ.get("PATH", ""))}
    for command, shown in steps:
        argv = command_argv(command)
        if argv is None:
            continue
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert result.returncode == 0, f"$ {command}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}"
        shown_output_is_printed(shown, result.stdout)


def mcp_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("mcp-sync")}


def setup(namespace: dict[str, Any]) -> None:
    """A page's namespace: the peers' starters, a stack closed at its end, its own directory; cwd the repo root."""
    stack = contextlib.ExitStack()
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-sync-docs-")))
    stack.callback(os.chdir, os.getcwd())
    os.chdir(ROOT)
    # "python" in a page's server command lines is this interpreter, as in an activated virtualenv.
    stack.callback(os.environ.__setitem__, "PATH", os.environ.get("PATH", ""))
    os.environ["PATH"] = this_interpreter_first(os.environ.get("PATH", ""))

    def start_redis() -> Any:
        from redisserver import running_redis

        return stack.enter_context(running_redis(directory / "redis.log"))

    def start_authorization_server(resource: str, **options: Any) -> Any:
        from authserver import running_authorization_server

        return stack.enter_context(running_authorization_server(resource, **options))

    namespace.update(
        __name__="docs_page",
        docs_stack=stack,
        docs_tmp=directory,
        start_redis=start_redis,
        start_authorization_server=start_authorization_server,
        docs_threads_before=mcp_threads(),
    )


def teardown(namespace: dict[str, Any]) -> None:
    """Closes what the page opened, then checks that mcp_sync left no thread of the page running."""
    namespace["docs_stack"].close()
    deadline = time.monotonic() + THREADS_END_WITHIN
    left = mcp_threads() - namespace["docs_threads_before"]
    while left and time.monotonic() < deadline:
        time.sleep(0.01)  # threads end on their own after close(): polled with a deadline
        left = {thread for thread in left if thread.is_alive()}
    assert not left, f"threads left running after the page: {sorted(thread.name for thread in left)}"


def collector() -> Any:
    """The pytest collection hook of ``docs/conftest.py``."""
    return Sybil(
        parsers=[PythonCodeBlockParser(), CodeBlockParser(language="console", evaluator=evaluate_console)],
        path=str(ROOT / "docs"),
        patterns=["*.rst"],
        excludes=["_build/*"],
        setup=setup,
        teardown=teardown,
    ).pytest()
