"""The tasks extension (SEP-2663) in the official conformance suite, against our server.

Harness 0.2.0-alpha.12 (:data:`conformance.HARNESS_2026`, see
``tests/conformance.py``) has ten server scenarios for the extension, run
here against ``examples/conformance_server.py`` (its ``greet``,
``slow_compute``, ``failing_job``, ``protocol_error_job``,
``confirm_delete``, ``multi_input`` and ``test_tool_with_task`` tools), at
2026-07-28. A scenario passes when the harness exits 0 with no FAILURE and
no WARNING.

``tasks-status-notifications`` is a placeholder in this harness: it reports
one SKIPPED check (its own message says it awaits a rewrite onto
``subscriptions/listen``) and exercises nothing, which the test asserts;
``tests/server/test_tasks.py`` tests the notifications themselves.

The harness can also force these scenarios onto the 2025-11-25 wire, but
SEP-2663 belongs to the 2026 revision: under earlier protocol versions a
server must not answer with a ``CreateTaskResult``, so ours offers the
2025-11-25 core form there instead. One run at that wire checks just that:
the extension is neither advertised nor honoured.

Without npm these tests skip, unless ``MCP_SYNC_REQUIRE_INTEROP=1`` makes
them fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import conformance
import pytest
from conformance import Harness

pytestmark = pytest.mark.timeout(600)

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


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_server_scenario(harness: Harness, server_url: str, scenario: str, tmp_path: Path) -> None:
    run = harness.server_scenario(server_url, scenario, tmp_path, spec_version="2026-07-28")
    if scenario == PLACEHOLDER:
        assert run.passed, run.report()
        assert [(check["id"], check["status"]) for check in run.checks] == [(PLACEHOLDER, "SKIPPED")]
        return
    failed = [check for check in run.checks if check["status"] not in ("SUCCESS", "INFO")]
    assert run.passed and run.checks and not failed, run.report()


def test_the_extension_is_not_offered_at_2025_11_25(harness: Harness, server_url: str, tmp_path: Path) -> None:
    """At the 2025-11-25 wire the server neither advertises the extension nor answers its opt-in with a task."""
    run = harness.server_scenario(server_url, "tasks-capability-negotiation", tmp_path, spec_version="2025-11-25")
    failed = {check["id"]: check for check in run.checks if check["status"] == "FAILURE"}
    assert failed["tasks-extension-advertised"]["details"]["hasTasksExtension"] is False, run.report()
    assert "tasks-per-request-meta-opt-in" in failed, run.report()
