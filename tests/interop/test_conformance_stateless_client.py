"""The official conformance suite's client scenarios, at 2026-07-28 and at 2025-11-25, against our client.

Harness ``@modelcontextprotocol/conformance@0.2.0-alpha.12`` (see
``tests/conformance.py``) starts a mock server per scenario and runs
``examples/conformance_client.py`` against it. Each scenario runs alone at
its revision's wire (``--spec-version R --force``: what ``--requirements R``
does for the whole set), and passes when the harness exits 0 and reports no
FAILURE and no WARNING. The scored sets are those ``conformance list
--requirements`` prints, authorization scenarios included (the client's
OAuth, :mod:`mcp_sync.client.auth`); ``json-schema-2020-12-preservation`` is
run as well though the harness does not score it yet.

Without npm these tests skip, unless ``MCP_SYNC_REQUIRE_INTEROP=1`` makes
them fail.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import conformance
import pytest
from conformance import Harness, ScenarioRun

pytestmark = pytest.mark.timeout(600)  # the first run installs the harness and a Node 22

CLIENT = conformance.EXAMPLE_CLIENT
CHILD_ENV = conformance.CHILD_ENV

AUTH_2025 = conformance.AUTH_SCENARIOS_2025
"""The authorization scenarios scored for 2025-11-25 (and again, at its wire, for 2026-07-28)."""
AUTH_2026 = [
    *AUTH_2025,
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
"""The authorization scenarios scored for 2026-07-28."""
SCORED_2026 = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    *AUTH_2026,
]
"""The client scenarios scored for 2026-07-28 (32)."""
ALSO_2026 = ["json-schema-2020-12-preservation"]
"""Run at 2026-07-28 and reported, but not scored (added after the release)."""
SCORED_2025 = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry", *AUTH_2025]
"""The client scenarios scored for 2025-11-25 (18)."""


@pytest.fixture(scope="module")
def harness() -> Harness:
    return conformance.harness(conformance.HARNESS_2026)


def required_client_scenarios(harness: Harness, revision: str) -> list[str]:
    """The client leg of ``conformance list --requirements REVISION``."""
    done = harness.run("list", "--requirements", revision, timeout=60)
    assert done.returncode == 0, done.stderr
    leg = done.stdout.split("Client scenarios", 1)[1].split("Run and reported", 1)[0]
    return re.findall(r"^\s+- (\S+)", leg, re.MULTILINE)


def run_client(harness: Harness, scenario: str, revision: str, out_dir: Path) -> ScenarioRun:
    command = " ".join([sys.executable, str(CLIENT)])
    done = harness.run(
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--spec-version",
        revision,
        "--force",
        "--timeout",
        "30000",
        "-o",
        str(out_dir),
        timeout=120,
        env=CHILD_ENV,
    )
    return ScenarioRun.read(scenario, done, out_dir)


def test_the_scored_client_sets_are_the_expected_ones(harness: Harness) -> None:
    """A harness with other scenarios is noticed here, not by silently testing less."""
    assert sorted(required_client_scenarios(harness, "2026-07-28")) == sorted(SCORED_2026)
    assert sorted(required_client_scenarios(harness, "2025-11-25")) == sorted(SCORED_2025)
    assert (len(SCORED_2026), len(SCORED_2025)) == (32, 18)


@pytest.mark.parametrize("scenario", SCORED_2026 + ALSO_2026)
def test_client_scenario_2026(harness: Harness, scenario: str, tmp_path: Path) -> None:
    run = run_client(harness, scenario, "2026-07-28", tmp_path)
    assert run.passed, run.report()


@pytest.mark.parametrize("scenario", SCORED_2025)
def test_client_scenario_2025(harness: Harness, scenario: str, tmp_path: Path) -> None:
    run = run_client(harness, scenario, "2025-11-25", tmp_path)
    assert run.passed, run.report()
