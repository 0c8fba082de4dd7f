"""The tasks extension (SEP-2663) in the official conformance suite, against our server.

Harness 0.2.0-alpha.12 (:data:`conformance.HARNESS_2026`, see
``tests/conformance.py``) has ten server scenarios for the extension, run
here against ``examples/conformance_server.py`` (its ``greet``,
``slow_compute``, ``failing_job``, ``protocol_error_job``,
``confirm_delete``, ``multi_input`` and ``test_tool_with_task`` tools). The
extension is on no revision's timeline, so each scenario runs forced at
each revision's wire (2026-07-28 and 2025-11-25). A scenario passes when
the harness exits 0 with no FAILURE and no WARNING.

``tasks-status-notifications`` is a placeholder in this harness: it reports
one SKIPPED check (its own message says it awaits a rewrite onto
``subscriptions/listen``) and exercises nothing, which the test asserts;
``tests/server/test_tasks.py`` tests the notifications themselves.

At 2026-07-28 every scenario passes outright. At the 2025-11-25 wire three
things cannot pass, whatever the server does, and each is asserted to be
the only failure, for the reason given:

- the extension's ``tasks/cancel`` answers an empty ack (``{resultType:
  "complete"}``, which the scenarios require), but 2025-11-25 has a core
  ``tasks/cancel`` whose result is a whole Task, and the harness validates
  every ``tasks/cancel`` answer against that schema (``wire-schema-valid``);
- ``tasks-request-headers`` sets per-request headers, which the harness's
  handshake-era client refuses to do ("extraHeaders is unsupported on the
  stateful wire"): none of its checks runs;
- ``tasks-mrtr-composition`` needs a first round answered with an
  ``InputRequiredResult``, which exists only from 2026-07-28: in the
  handshake era the server asks the client directly (``elicitation/create``),
  which the harness's client answers ``-32601``.

Without npm these tests skip, unless ``MCP_SYNC_REQUIRE_INTEROP=1`` makes
them fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import conformance
import pytest
from conformance import Harness

pytestmark = pytest.mark.timeout(600)

REVISIONS = ["2026-07-28", "2025-11-25"]
SCENARIOS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
]
"""The tasks server scenarios of harness 0.2.0-alpha.12."""
PLACEHOLDER = "tasks-status-notifications"
NO_HEADERS = "extraHeaders is unsupported on the stateful wire"


def _explained_at_handshake(scenario: str, check: dict[str, Any]) -> bool:
    """Whether a FAILURE at 2025-11-25 is one of those the module's description explains."""
    if check["id"] == "wire-schema-valid":
        violations = check["details"]["violations"]
        return bool(violations) and all(
            violation["context"] == "stateful response to 'tasks/cancel'"
            and violation["message"]["result"] == {"resultType": "complete"}
            for violation in violations
        )
    if scenario == "tasks-request-headers":
        return NO_HEADERS in check.get("errorMessage", "")
    if scenario == "tasks-mrtr-composition":
        return check.get("errorMessage") == "Method not found"
    return False


@pytest.fixture(scope="module")
def harness() -> Harness:
    return conformance.harness(conformance.HARNESS_2026)


@pytest.fixture(scope="module")
def server_url(harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``examples/conformance_server.py`` on a free port, for the module."""
    with conformance.example_server(tmp_path_factory.mktemp("tasks-server") / "server.log") as url:
        yield url


def test_the_harness_lists_the_tasks_scenarios(harness: Harness) -> None:
    """A harness that renames or adds a tasks scenario is noticed here, not by silently testing less."""
    assert sorted(name for name in harness.list_server_scenarios() if name.startswith("tasks-")) == sorted(SCENARIOS)


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_server_scenario(harness: Harness, server_url: str, scenario: str, revision: str, tmp_path: Path) -> None:
    run = harness.server_scenario(server_url, scenario, tmp_path, spec_version=revision)
    if scenario == PLACEHOLDER:
        assert run.passed, run.report()
        assert [(check["id"], check["status"]) for check in run.checks] == [(PLACEHOLDER, "SKIPPED")]
        return
    failed = [check for check in run.checks if check["status"] not in ("SUCCESS", "INFO")]
    if revision == "2026-07-28":
        assert run.passed and run.checks and not failed, run.report()
    else:
        assert all(check["status"] == "FAILURE" for check in failed), run.report()
        assert all(_explained_at_handshake(scenario, check) for check in failed), run.report()
        passed = [check for check in run.checks if check["status"] == "SUCCESS"]
        assert passed or scenario in ("tasks-request-headers", "tasks-mrtr-composition"), run.report()
