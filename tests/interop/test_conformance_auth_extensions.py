"""The conformance suite's authorization extensions, against our client: grants without a person, and DPoP.

The scenarios (see ``tests/conformance.py`` for the harness) and what
``examples/conformance_client.py`` builds for each:

- ``auth/client-credentials-basic`` and ``auth/client-credentials-jwt``
  (``io.modelcontextprotocol/oauth-client-credentials``):
  :class:`~mcp_sync.client.auth.ClientCredentials` with a secret, and with a
  private key (``private_key_jwt``);
- ``auth/enterprise-managed-authorization`` (SEP-990; 0.1.16 names it
  ``auth/cross-app-access-complete-flow``):
  :class:`~mcp_sync.client.auth.EnterpriseAuthorization`;
- ``auth/dpop`` and ``auth/dpop-nonce`` (SEP-1932): the authorization-code
  flow with ``dpop=True``;
- ``auth/wif-jwt-bearer`` (SEP-1933): :class:`~mcp_sync.client.auth.WorkloadIdentity`,
  with the scenario's valid JWT, and with the JWTs and scopes it refuses, to
  see each refusal surface without a retry or another grant.

Extension scenarios are on no revision's timeline: harness 0.2.0-alpha.12
runs one at a revision's wire only with ``--force``, as here, at 2026-07-28
and at 2025-11-25. Harness 0.1.16 runs its three as it runs every scenario.
A scenario passes when the harness exits 0 with no FAILURE and no WARNING;
and no run may show a JWT or a private key in the client's output.

Without npm these tests skip, unless ``MCP_SYNC_REQUIRE_INTEROP=1`` makes
them fail.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import conformance
import pytest
from conformance import Harness, ScenarioRun

pytestmark = pytest.mark.timeout(600)  # the first run installs the harness and a Node 22

CLIENT = conformance.EXAMPLE_CLIENT
CHILD_ENV = conformance.CHILD_ENV

EXTENSIONS_2026 = [
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
]
"""The authorization extension scenarios of harness 0.2.0-alpha.12, in its order."""
EXTENSIONS_0_1 = ["auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow"]
"""Those of harness 0.1.16."""
REVISIONS = ["2026-07-28", "2025-11-25"]

WIF_REFUSALS = [
    ({"MCP_SYNC_WIF_ASSERTION": "expired_jwt"}, "wif-assertion-expired", "invalid_grant"),
    ({"MCP_SYNC_WIF_ASSERTION": "wrong_audience_jwt"}, "wif-assertion-audience", "invalid_grant"),
    ({"MCP_SYNC_WIF_SCOPE": "wif.rejected"}, None, "invalid_scope"),
    ({"MCP_SYNC_WIF_SCOPE": "wif.trigger-unauthorized"}, None, "unauthorized_client"),
]
"""What the client is made to send, the harness's failing check (if any), and the OAuth error it must show."""
RETRIES = {"wif-no-retry", "wif-grant-fallback"}
"""The harness's warnings for a client that tries again after a refusal, or falls back to another grant."""


@pytest.fixture(scope="module")
def harness() -> Harness:
    return conformance.harness()


@pytest.fixture(scope="module")
def harness_2026() -> Harness:
    return conformance.harness(conformance.HARNESS_2026)


def run_client(
    harness: Harness,
    scenario: str,
    out_dir: Path,
    revision: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ScenarioRun:
    """Run the example client in ``scenario`` (at ``revision``'s wire, forced, when given)."""
    run = harness.client_scenario(
        [sys.executable, str(CLIENT)],
        scenario,
        out_dir,
        env={**CHILD_ENV, **(env or {})},
        spec_version=revision,
        force=revision is not None,
    )
    shown = "".join(run.files.values())
    assert "eyJ" not in shown and "PRIVATE KEY" not in shown, "the client showed a JWT or a key:\n" + shown
    return run


def test_the_harnesses_list_the_expected_extension_scenarios(harness: Harness, harness_2026: Harness) -> None:
    """A harness that renames or adds an extension scenario is noticed here, not by silently testing less."""
    listed = [name for name in harness_2026.list_client_scenarios() if name in EXTENSIONS_2026]
    assert listed == EXTENSIONS_2026
    assert harness.list_client_scenarios()[-len(EXTENSIONS_0_1) :] == EXTENSIONS_0_1


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("scenario", EXTENSIONS_2026)
def test_extension_scenario(harness_2026: Harness, scenario: str, revision: str, tmp_path: Path) -> None:
    run = run_client(harness_2026, scenario, tmp_path, revision)
    assert run.passed, run.report()


@pytest.mark.parametrize("scenario", EXTENSIONS_0_1)
def test_extension_scenario_0_1(harness: Harness, scenario: str, tmp_path: Path) -> None:
    run = harness.client_scenario([sys.executable, str(CLIENT)], scenario, tmp_path, env=CHILD_ENV)
    assert run.passed, run.report()


@pytest.mark.parametrize(("env", "failing", "error"), WIF_REFUSALS)
def test_workload_identity_refusals_surface_without_a_retry(
    harness_2026: Harness, env: dict[str, str], failing: str | None, error: str, tmp_path: Path
) -> None:
    run = run_client(harness_2026, "auth/wif-jwt-bearer", tmp_path, "2026-07-28", env)
    assert not run.passed
    assert run.returncode != 0  # the client said it failed
    ids = [check.get("id") for check in run.checks]
    assert ids.count("token-request") == 1, run.report()
    assert not RETRIES.intersection(ids), run.report()
    assert [check["id"] for check in run.failing] == ([failing] if failing else []), run.report()
    assert f"refused: 400 {error}" in run.files["stderr.txt"], run.report()
