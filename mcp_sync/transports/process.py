"""Starting a server process: what a stdio connection does before it needs any of the client.

This module imports only the standard library, so :func:`mcp_sync.connect`
can start the server first and load the client (pydantic and the protocol's
models, most of a one-off call's time) while the server starts up: on a
machine with two cores or more the two take their time at once.

>>> import sys
>>> process = start_server(server_argv([sys.executable, "-c", "pass"]))
>>> process.wait(10)
0
>>> process.stdin.close(); process.stdout.close(); process.stderr.close()
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "command_line",
    "default_environment",
    "end_server",
    "server_argv",
    "signal_group",
    "start_server",
    "started_early",
]

DEFAULT_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
"""Variables a server process inherits by default; everything else must be passed."""

_REAP_TIMEOUT = 5.0
"""Seconds :func:`end_server` waits for a killed server to be gone (one stuck in the kernel is left behind)."""


def default_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A safe environment for a server process: a few inherited variables plus ``extra``."""
    env = {name: os.environ[name] for name in DEFAULT_INHERITED_ENV if name in os.environ}
    env.update(extra or {})
    return env


def server_argv(command: str | Sequence[str], args: Sequence[str] = ()) -> list[str]:
    """The argument list of a server's command line (a string is split as a POSIX shell would) and ``args``."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    return [*argv, *args]


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one line a POSIX shell would split back into it, for messages: ``python 'my server.py'``."""
    return shlex.join(argv)


def start_server(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with pipes for stdin, stdout and stderr, in a process group of its own.

    Its environment is :func:`default_environment` (or this process's whole
    environment with ``inherit_env``) plus ``env``. A command that cannot be
    started raises ``OSError`` (or ``ValueError`` for an argument list that
    cannot be one).
    """
    environment = dict(os.environ) if inherit_env else default_environment()
    environment.update(env or {})
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        cwd=cwd,
        bufsize=0,
        start_new_session=True,  # its own group: ending it ends what it started, too
    )


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to the process group of ``process`` (started by :func:`start_server`), if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def end_server(process: subprocess.Popen[bytes]) -> None:
    """End a server that no connection took over: kill its group, wait for it, close its pipes."""
    signal_group(process, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # (SIGKILL cannot be ignored: it ends at once, as a rule)
        process.wait(_REAP_TIMEOUT)
    assert process.stdin and process.stdout and process.stderr  # (start_server gives it all three pipes)
    for stream in (process.stdin, process.stdout, process.stderr):
        stream.close()


@contextlib.contextmanager
def started_early(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> Iterator[subprocess.Popen[bytes] | None]:
    """Start the server now, while the caller gets its client ready; ended if the block fails.

    The block receives the process to hand to a transport, or ``None`` when
    it could not be started: the transport then tries again itself and says
    what failed, as it always does. A server's start-up (its interpreter, its
    imports) and the client's (its imports, its first models) are about as
    long, and run at once on two cores.

    >>> import sys
    >>> with started_early([sys.executable, "-c", "pass"]) as process:
    ...     pass  # (the client is made here)
    >>> process.wait(10)
    0
    >>> process.stdin.close(); process.stdout.close(); process.stderr.close()
    """
    try:
        process = start_server(argv, env=env, inherit_env=inherit_env, cwd=cwd)
    except (OSError, ValueError):
        process = None
    try:
        yield process
    except BaseException:
        if process is not None:
            end_server(process)
        raise
