"""Real third-party MCP peers for the interoperability tests, installed once and cached.

The peers live under ``$MCP_SYNC_PEERS_DIR`` (default
``$XDG_CACHE_HOME/mcp-sync-peers``, that is ``~/.cache/mcp-sync-peers`` when
``XDG_CACHE_HOME`` is unset), outside the project's own environment:

- a virtualenv with the official Python SDK and the reference time server
  (:func:`peer_python`), so that their dependencies never meet ours;
- an npm prefix holding the reference "everything" server
  (:func:`npm_package_dir`).

Each is installed on first use under an exclusive file lock, so parallel
pytest processes wait for one another instead of racing, and a marker file
written last makes later runs find it at once. Every subprocess is bounded
by a timeout.

When a tool is missing or an install fails, the test asking for it is
skipped with the reason; with ``MCP_SYNC_REQUIRE_INTEROP=1`` it fails
instead, so that a machine meant to run these tests cannot pass by skipping.

Only tests marked ``interop`` may use a peer (``conftest.py`` marks all of
``tests/interop`` and sets :data:`installs_allowed` for each test), so
``pytest -m "not interop"`` downloads nothing; an unmarked test that asks for
a peer fails and says to mark it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NoReturn

import pytest

MCP_VERSION = "2.3.0"
"""The official Python SDK (PyPI ``mcp``)."""
TIME_SERVER_VERSION = "2026.10.19"
"""PyPI ``mcp-server-time``: the newest release, which resolves together with ``mcp`` 2.3.0."""
EVERYTHING_SERVER = "@modelcontextprotocol/server-everything@2026.8.31"
"""The reference server that exercises the whole protocol (the newest release)."""
NODE_MIN_MAJOR = 18
"""The oldest node that release runs on (the ``engines`` of its SDK dependency)."""

REQUIRE_ENV = "MCP_SYNC_REQUIRE_INTEROP"
DIR_ENV = "MCP_SYNC_PEERS_DIR"
MARK = "interop"
"""The marker of the tests that use peers; ``pytest -m "not interop"`` leaves them out."""

installs_allowed = True
"""Whether a peer may be installed or used now; ``conftest.py`` sets it before each test from its marker."""

INSTALL_TIMEOUT = 600.0
"""The longest one install command may take (seconds)."""
LOCK_TIMEOUT = 900.0
"""The longest a process waits for another one's install to finish (seconds)."""
CHECK_TIMEOUT = 60.0
"""The longest a quick check (a version query, an import) may take (seconds)."""

# Variables that would make a peer's python or pip see this project's packages.
_FOREIGN_PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV")

_failures: dict[str, str] = {}


class PeerUnavailable(Exception):
    """A peer could not be found or installed; the message says why."""


def required() -> bool:
    """Whether a missing peer fails the tests instead of skipping them: with ``MCP_SYNC_REQUIRE_INTEROP=1``, or in CI.

    ``conftest.py`` then fails every other skip too.
    """
    return os.environ.get(REQUIRE_ENV, "") == "1" or os.environ.get("CI", "").lower() not in ("", "0", "false")


def unavailable(reason: str) -> NoReturn:
    """Skip the current test for ``reason``, or fail it when interop is required."""
    if required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1)", pytrace=False)
    pytest.skip(reason)


def chromium() -> str:
    """The machine's Chromium (Debian's package, not a download); skips, or fails where nothing may, without one."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path is not None:
            return path
    unavailable("Chromium is not installed (apt-get install chromium)")


def chromium_flags() -> list[str]:
    """What every test's Chromium runs with: no sandbox as root (CI containers), no traffic of its own."""
    flags = ["--no-sandbox"] if os.geteuid() == 0 else []
    return [*flags, "--disable-background-networking", "--disable-component-update", "--no-first-run"]


def cache_dir() -> Path:
    """Where the peers are installed."""
    configured = os.environ.get(DIR_ENV)
    # The XDG base directory rule: an empty or relative XDG_CACHE_HOME is ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    root = Path(configured) if configured else cache / "mcp-sync-peers"
    root.mkdir(parents=True, exist_ok=True)
    return root


def peer_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would leak our packages into a peer's python."""
    env = {name: value for name, value in os.environ.items() if name not in _FOREIGN_PYTHON_ENV}
    env.update(extra or {})
    return env


def require(tool: str) -> str:
    """The path of the executable ``tool``; skips (or fails) the test when it is missing."""
    path = shutil.which(tool)
    if path is None:
        unavailable(f"`{tool}` is not installed")
    return path


def run(argv: list[str], *, timeout: float, env: Mapping[str, str] | None = None) -> str:
    """Run ``argv`` to completion within ``timeout``; its stdout, or PeerUnavailable saying what went wrong."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env) if env is not None else peer_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PeerUnavailable(f"`{' '.join(argv)}` took more than {timeout:.0f}s") from exc
    except OSError as exc:
        raise PeerUnavailable(f"`{' '.join(argv)}` could not start: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise PeerUnavailable(f"`{' '.join(argv)}` exited with code {done.returncode}:\n{tail}")
    return done.stdout


@contextlib.contextmanager
def _locked(name: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive lock on ``<cache>/<name>.lock``, waiting at most ``timeout`` for it."""
    path = cache_dir() / f"{name}.lock"
    with open(path, "a+b") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PeerUnavailable(f"another process held {path} for more than {timeout:.0f}s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _installed(key: str, marker: Path, product: Path, install: Callable[[], None]) -> None:
    """Run ``install()`` once per cache, under the lock, unless ``marker`` and ``product`` exist.

    The marker is written only after a complete install, so an interrupted
    one is redone. A failure is remembered for the rest of this process.
    """
    if not installs_allowed:
        pytest.fail(f"this test uses the peer {key}: mark it @pytest.mark.{MARK}", pytrace=False)
    if key in _failures:
        unavailable(_failures[key])

    def ready() -> bool:
        return marker.exists() and product.exists()

    if ready():
        return
    try:
        with _locked(key):
            if not ready():
                marker.unlink(missing_ok=True)
                install()
                marker.write_text(json.dumps({"installed": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    except PeerUnavailable as exc:
        _failures[key] = f"could not install {key}: {exc}"
        unavailable(_failures[key])


# ------------------------------------------------------------------ python


def python_venv() -> Path:
    """The virtualenv directory of the Python peers (named after their versions)."""
    return cache_dir() / f"venv-mcp{MCP_VERSION}-time{TIME_SERVER_VERSION}"


def peer_python() -> str:
    """The python of a virtualenv holding ``mcp`` and ``mcp-server-time``, created on first use."""
    venv = python_venv()
    python = venv / "bin" / "python"

    def install() -> None:
        if venv.exists():  # left half-made by an interrupted run
            shutil.rmtree(venv)
        run([sys.executable, "-m", "venv", str(venv)], timeout=INSTALL_TIMEOUT)
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"mcp=={MCP_VERSION}",
                f"mcp-server-time=={TIME_SERVER_VERSION}",
            ],
            timeout=INSTALL_TIMEOUT,
        )
        check = "import importlib.metadata as m, mcp.client.stdio, mcp_server_time; print(m.version('mcp'))"
        version = run([str(python), "-c", check], timeout=CHECK_TIMEOUT).strip()
        if version != MCP_VERSION:
            raise PeerUnavailable(f"the virtualenv has mcp {version}, not {MCP_VERSION}")

    _installed(venv.name, venv / ".complete", python, install)
    return str(python)


FASTMCP_TASKS_VERSION = "4.1.4"
"""PyPI ``fastmcp-tasks``: fastmcp's SEP-2663 tasks extension (it brings fastmcp and ``mcp`` 2.3.0 along)."""


def fastmcp_tasks_python() -> str:
    """The python of a virtualenv holding ``fastmcp-tasks`` (a third-party SEP-2663 server), created on first use."""
    venv = cache_dir() / f"venv-fastmcp-tasks{FASTMCP_TASKS_VERSION}"
    python = venv / "bin" / "python"

    def install() -> None:
        if venv.exists():  # left half-made by an interrupted run
            shutil.rmtree(venv)
        run([sys.executable, "-m", "venv", str(venv)], timeout=INSTALL_TIMEOUT)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        run([*pip, f"fastmcp-tasks=={FASTMCP_TASKS_VERSION}"], timeout=INSTALL_TIMEOUT)
        check = "import importlib.metadata as m, fastmcp_tasks; print(m.version('fastmcp-tasks'))"
        version = run([str(python), "-c", check], timeout=CHECK_TIMEOUT).strip()
        if version != FASTMCP_TASKS_VERSION:
            raise PeerUnavailable(f"the virtualenv has fastmcp-tasks {version}, not {FASTMCP_TASKS_VERSION}")

    _installed(venv.name, venv / ".complete", python, install)
    return str(python)


FASTMCP_VERSION = "4.1.4"
"""fastmcp itself (its ``fastmcp-slim`` distribution, which ``fastmcp-tasks`` pins): client and server."""


def fastmcp_python() -> str:
    """The python of a virtualenv holding fastmcp :data:`FASTMCP_VERSION`: the ``fastmcp-tasks`` one, reused.

    That virtualenv already holds fastmcp's client and server (and uvicorn for
    its HTTP transport); a second install of the same release would only cost
    time and disk. The version is checked, so a change of pins fails loudly.
    """
    python = fastmcp_tasks_python()
    check = "import importlib.metadata as m; print(m.version('fastmcp-slim'))"
    try:
        version = run([python, "-c", check], timeout=CHECK_TIMEOUT).strip()
    except PeerUnavailable as exc:
        unavailable(f"fastmcp is not in {python}: {exc}")
    if version != FASTMCP_VERSION:
        unavailable(f"the fastmcp virtualenv has fastmcp {version}, not {FASTMCP_VERSION}")
    return python


# --------------------------------------------------------------------- npm


def _check_node(node: str) -> None:
    """Skip (or fail) unless ``node`` runs and is at least :data:`NODE_MIN_MAJOR`."""
    try:
        reported = run([node, "--version"], timeout=CHECK_TIMEOUT).strip()
    except PeerUnavailable as exc:
        unavailable(str(exc))
    try:
        major = int(reported.lstrip("v").split(".")[0])
    except ValueError:
        unavailable(f"`node --version` said {reported!r}")
    if major < NODE_MIN_MAJOR:
        unavailable(f"node {reported} is older than {NODE_MIN_MAJOR}, which {EVERYTHING_SERVER} needs")


def _split_spec(spec: str) -> tuple[str, str]:
    """``"@scope/name@1.2.3"`` -> ``("@scope/name", "1.2.3")``; the version must be exact."""
    name, at, version = spec[1:].rpartition("@")
    if not at or not version or not version[0].isdigit():
        raise ValueError(f"pin an exact version: {spec!r}")
    return spec[0] + name, version


def npm_package_dir(spec: str = EVERYTHING_SERVER) -> Path:
    """The directory of the npm package ``spec`` (``name@exact-version``), installed on first use."""
    name, version = _split_spec(spec)
    node = require("node")
    npm = require("npm")
    _check_node(node)
    prefix = cache_dir() / "npm"
    package = prefix / "node_modules" / name
    marker = prefix / f".complete-{name.replace('/', '+')}@{version}"

    def install() -> None:
        prefix.mkdir(parents=True, exist_ok=True)
        run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact", spec],
            timeout=INSTALL_TIMEOUT,
        )
        found = json.loads((package / "package.json").read_text()).get("version")
        if found != version:
            raise PeerUnavailable(f"npm installed {name} {found}, not {version}")

    _installed(f"npm-{name.replace('/', '+')}@{version}", marker, package / "package.json", install)
    return package


def node_entry(package: Path) -> Path:
    """The script an npm package runs as its command (the first of its ``bin`` entries)."""
    manifest = json.loads((package / "package.json").read_text())
    bin_entry = manifest.get("bin")
    script = bin_entry if isinstance(bin_entry, str) else next(iter(bin_entry.values()))
    return package / script


TYPESCRIPT_SDK_VERSION = "1.32.2"
"""npm ``@modelcontextprotocol/sdk``, as :data:`EVERYTHING_SERVER` brings it along (its exact dependency)."""


def typescript_sdk_modules() -> Path:
    """The ``node_modules`` holding the TypeScript SDK :data:`TYPESCRIPT_SDK_VERSION` (to set as ``NODE_PATH``).

    The SDK comes with :data:`EVERYTHING_SERVER`, installed on first use; its
    version is checked, so a new release of that server fails loudly here.
    """
    modules = npm_package_dir(EVERYTHING_SERVER).parent.parent
    manifest = modules / "@modelcontextprotocol" / "sdk" / "package.json"
    try:
        found = json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError) as exc:
        unavailable(f"no TypeScript SDK beside {EVERYTHING_SERVER}: {exc}")
    if found != TYPESCRIPT_SDK_VERSION:
        unavailable(f"{EVERYTHING_SERVER} brought the TypeScript SDK {found}, not {TYPESCRIPT_SDK_VERSION}")
    return modules


# ----------------------------------------------------------- oidc-provider

OIDC_PROVIDER = "oidc-provider@9.13.3"
"""panva's OAuth 2.1 / OpenID Connect authorization server, run by ``tests/servers/oidc_server.mjs``."""
OIDC_PROVIDER_DEPENDENCIES = ("jose@6.2.18", "koa@3.3.0")
"""Its direct dependencies (it asks for ``^6.2.13`` and ``^3.2.1``), pinned exactly beside it so that runs
are repeatable; the script imports ``jose`` itself too."""


def oidc_provider() -> tuple[str, Path]:
    """A node to run :data:`OIDC_PROVIDER` on, and the ``node_modules`` directory holding it, installed on first use.

    Run ``tests/servers/oidc_server.mjs`` with that node and ``NODE_PATH`` set to
    the directory. The package gets its own npm prefix in the cache, with
    :data:`OIDC_PROVIDER_DEPENDENCIES` installed beside it (the conformance
    harness's pattern, whose installer this reuses). oidc-provider 9 supports
    Node 22 LTS and newer (it warns "Unsupported runtime" on older ones), so
    the node is the harness's too: the machine's own when it is at least 22,
    else one installed from the npm registry.
    """
    import conformance  # imports this module: a module-level import would be circular

    package = conformance.npm_install(OIDC_PROVIDER, *OIDC_PROVIDER_DEPENDENCIES)
    if not (package / "lib" / "index.js").exists():
        unavailable(f"{OIDC_PROVIDER} has no {package / 'lib' / 'index.js'}")
    return conformance.node22(), package.parent
