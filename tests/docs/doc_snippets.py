"""Runs the code examples of the documentation (docs/**/*.rst) with Sybil; ``docs/conftest.py`` collects them.

The conventions (docs/contributing.rst, "Writing docs", says them for writers):

- ``.. code-block:: python`` and ``.. invisible-code-block: python`` blocks run in order, one namespace per
  page, with the repository's root as working directory, not as ``__main__``;
- ``.. code-block:: console``: each ``$ `` line runs (``mcp-sync``, ``python`` and ``gunicorn`` are this
  interpreter's) and must exit 0; the lines under it, if any, must each be a line of its output (``...`` stands
  for any lines); ``$ pip install`` lines are shown, not run;
- a console block right after the comment ``.. serves: URL`` holds one command that serves until stopped: it
  starts in the background on a free port of 127.0.0.1 in place of the URL's port,
  the page goes on once that port accepts connections (``port`` and ``served_log``, its output, in the
  namespace), and the command gets Ctrl-C (SIGINT) when the page ends;
- a python block right after the comment ``.. own-process`` runs in a fresh interpreter (for what can be done
  once per process, like setting OpenTelemetry's global providers): it must exit 0, and ``printed`` in the
  namespace is what it printed;
- every page's namespace holds ``docs_stack`` (an ``ExitStack`` closed when the page ends), ``docs_tmp`` (a
  directory of its own), ``start_redis()`` (a real Redis; its ``.url``), ``start_llm_stub()`` (a loopback
  stand-in for OpenAI's and Anthropic's APIs that their SDKs reach through ``OPENAI_BASE_URL`` and
  ``ANTHROPIC_BASE_URL``, set with dummy keys until the page ends) and ``start_authorization_server(
  resource)`` (the suite's OAuth authorization server, a peer: a page using it is an interop test);
- when a page ends, every thread mcp_sync started for it has ended.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from redisserver import free_port  # tests/ is on the path (docs/conftest.py)
from sybil import Document, Example, Sybil
from sybil.parsers.rest import CodeBlockParser, PythonCodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 120.0
LISTEN_WITHIN = 30.0
"""The longest a served command may take to accept connections (seconds)."""
STOP_WITHIN = 15.0
"""The longest a served command may take to exit after Ctrl-C (seconds), before it is killed."""
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
    if argv[0] == "gunicorn":
        return [sys.executable, "-m", "gunicorn", *argv[1:]]
    raise AssertionError(
        f"a console example runs mcp-sync, python, gunicorn or pip install, not {argv[0]!r}: {command}"
    )


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


def console_steps(block: str) -> list[tuple[str, list[str]]]:
    """Each ``$ `` command of a console block with the lines shown under it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith(PROMPT):
            steps.append((line[len(PROMPT) :], []))
        elif steps and line.strip():
            steps[-1][1].append(line)
    assert steps, "a console block shows at least one $ command"
    return steps


def evaluate_console(example: Example) -> None:
    """Runs each ``$ `` command of a console block; the command must exit 0 and print what is shown under it."""
    env = {**os.environ, "PATH": this_interpreter_first(os.environ.get("PATH", ""))}
    for command, shown in console_steps(str(example.parsed)):
        argv = command_argv(command)
        if argv is None:
            continue
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert result.returncode == 0, f"$ {command}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}"
        shown_output_is_printed(shown, result.stdout)


def on_port(argv: list[str], shown: int, port: int) -> list[str]:
    """``argv`` serving on 127.0.0.1:``port`` where it shows ``shown`` (``--port 8000``, ``-b 0.0.0.0:8000``)."""
    address = re.compile(rf"^(?:[\w.-]+:)?{shown}$")
    return [
        f"127.0.0.1:{port}" if ":" in arg and address.match(arg) else str(port) if arg == str(shown) else arg
        for arg in argv
    ]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C to the command's own process; killed (with all it started) if not ended in :data:`STOP_WITHIN`.

    Not to its whole process group, as a terminal sends it: gunicorn's gthread workers then get SIGINT and, a moment
    later, their master's SIGQUIT; the second quit handler re-enters the thread pool's shutdown that the first holds
    the lock of, and the worker hangs until the master kills it after its graceful timeout (30 s; 2 stops in 30).
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGINT)
    try:
        process.wait(STOP_WITHIN)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # its own group: nothing it started outlives the page
        process.wait(STOP_WITHIN)


def evaluate_served(url: str) -> Any:
    """The evaluator of a ``.. serves: URL`` console block: its command runs in the background until the page ends."""

    def evaluate(example: Example) -> None:
        ((command, shown),) = console_steps(str(example.parsed))
        assert not shown, f"a served command shows no output: {command}"
        argv = command_argv(command)
        assert argv is not None, f"a served command runs: {command}"
        namespace = example.namespace
        port = free_port()
        log = namespace["docs_tmp"] / f"served-{port}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                on_port(argv, urlsplit(url).port or 80, port),
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        namespace["docs_stack"].callback(stop, process)
        namespace.update(port=port, served_log=log)
        deadline = time.monotonic() + LISTEN_WITHIN
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                failed = process.poll() is not None or time.monotonic() > deadline
                assert not failed, f"$ {command}\ndid not listen on {port}:\n{log.read_text()}"
                time.sleep(0.05)  # nothing to wait on but the port

    return evaluate


def evaluate_own_process(example: Example) -> None:
    """The evaluator of a ``.. own-process`` python block: a fresh interpreter runs it and must exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", str(example.parsed)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    example.namespace["printed"] = result.stdout


MARKER = re.compile(r"^\.\. (?P<name>serves|own-process)(?::\s*(?P<value>\S+))?\s*$")


def marked(parser: Any, evaluators: dict[str, Any]) -> Any:
    """``parser``'s regions, each evaluated by ``evaluators[name]`` when the comment ``.. name`` comes before it.

    ``evaluators`` maps a marker to an evaluator, or (for a marker with a value, ``.. serves: URL``) to a
    function of the value giving one.
    """

    def parse(document: Document) -> Any:
        for region in parser(document):
            before = document.text[: region.start].rstrip().rpartition("\n")[2]
            found = MARKER.match(before)
            if found and found["name"] in evaluators:
                make = evaluators[found["name"]]
                region.evaluator = make(found["value"]) if found["value"] else make
            yield region

    return parse


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

    def start_llm_stub() -> Any:
        from servers.llm_stub import LLMStub

        stub = stack.enter_context(LLMStub())
        # The SDKs' own variables: the page's openai.OpenAI() and anthropic.Anthropic() reach the stub.
        for name, value in {
            "OPENAI_BASE_URL": f"{stub.url}/v1",
            "OPENAI_API_KEY": "sk-docs",
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": "sk-ant-docs",
        }.items():
            stack.callback(restore_variable, name, os.environ.get(name))
            os.environ[name] = value
        return stub

    namespace.update(
        __name__="docs_page",
        docs_stack=stack,
        docs_tmp=directory,
        start_redis=start_redis,
        start_authorization_server=start_authorization_server,
        start_llm_stub=start_llm_stub,
        docs_threads_before=mcp_threads(),
    )


def restore_variable(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


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
        parsers=[
            marked(PythonCodeBlockParser(), {"own-process": evaluate_own_process}),
            marked(CodeBlockParser(language="console", evaluator=evaluate_console), {"serves": evaluate_served}),
        ],
        path=str(ROOT / "docs"),
        patterns=["*.rst"],
        excludes=["_build/*"],
        setup=setup,
        teardown=teardown,
    ).pytest()
