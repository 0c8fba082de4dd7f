"""The official MCP conformance suite against our server and our client, over Streamable HTTP.

``examples/conformance_server.py`` runs once for the module, in a subprocess
on a free port, and the harness (``@modelcontextprotocol/conformance``, see
``tests/conformance.py``) runs each of its active server scenarios against
it; the harness also runs ``examples/conformance_client.py`` against its
mock servers for the core client scenarios. Each scenario is one test: it
passes when the harness exits 0 and reports no FAILURE and no WARNING, and
a failure lists the failing checks with the harness's messages.

The harness is installed on first use; without npm these tests skip, unless
``MCP_SYNC_REQUIRE_INTEROP=1`` makes them fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import conformance
import pytest
from conformance import Harness

pytestmark = pytest.mark.timeout(600)  # the first run installs the harness and a Node 22

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "examples" / "conformance_server.py"
CLIENT = ROOT / "examples" / "conformance_client.py"

SERVER_SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]
"""The active (default) server suite of harness 0.1.16."""
PENDING_SERVER_SCENARIOS = ["json-schema-2020-12", "server-sse-polling"]
"""Server scenarios the harness knows but does not score by default."""
CLIENT_SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
"""The client scenarios of the core suite that need no authorization."""

# Our processes need mcp_sync, and inherit the environment (which carries
# coverage's settings for subprocesses).
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="module")
def harness() -> Harness:
    return conformance.harness()


@pytest.fixture(scope="module")
def server_url(harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of ``examples/conformance_server.py``, started once for the module."""
    port = conformance.free_port()
    log_path = tmp_path_factory.mktemp("conformance-server") / "server.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=CHILD_ENV,
            cwd=ROOT,
        )
    try:
        conformance.wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)
        if process.returncode not in (0, -signal.SIGINT):
            print(f"conformance server exited with {process.returncode}:\n{log_path.read_text()[-6000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Interrupt the server so it exits normally (and coverage is saved); kill it if it lingers."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def test_harness_lists_the_expected_scenarios(harness: Harness) -> None:
    """A new harness version with other scenarios is noticed here, not by silently testing less."""
    active = harness.server_suite("active")
    assert len(active) == 30
    assert active == SERVER_SCENARIOS
    assert sorted(harness.list_server_scenarios()) == sorted(SERVER_SCENARIOS + PENDING_SERVER_SCENARIOS)
    assert harness.server_suite("pending") == PENDING_SERVER_SCENARIOS
    clients = harness.list_client_scenarios()
    assert clients[: len(CLIENT_SCENARIOS)] == CLIENT_SCENARIOS
    assert all(name.startswith("auth/") for name in clients[len(CLIENT_SCENARIOS) :])


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_server_scenario(harness: Harness, server_url: str, scenario: str, tmp_path: Path) -> None:
    run = harness.server_scenario(server_url, scenario, tmp_path)
    assert run.passed, run.report()


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_client_scenario(harness: Harness, scenario: str, tmp_path: Path) -> None:
    run = harness.client_scenario([sys.executable, str(CLIENT)], scenario, tmp_path, env=CHILD_ENV)
    assert run.passed, run.report()
