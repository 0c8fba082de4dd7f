"""The skills extension (SEP-2640) in the official conformance suite: our server and our client.

Harness 0.2.0-alpha.12 (:data:`conformance.HARNESS_2026`, see
``tests/conformance.py``) has three server scenarios for the extension,
run here against ``examples/conformance_server.py`` (which serves
``examples/skills`` with :meth:`MCPServer.add_skills`):

- ``sep-2640-skills-enumeration``: the capability, ``skills/list`` (pages,
  entries, each file's ``{uri, digest, size}``), ``skills/get`` (and its
  ``-32602``), the SKILL.md read back with frontmatter equal to the entry's;
- ``sep-2640-skills-manifest``: the SKILL.md resource's MIME type, name and
  description, and the URI's last segment equal to the skill's name;
- ``sep-2640-skills-directory``: ``resources/directory/read`` (optional;
  this server declares ``directoryRead``): the declaration, the direct
  children of a skill's directory, a subdirectory marked
  ``inode/directory``, ``-32602`` for a file's URI, and pagination.

and four client scenarios, run against ``examples/conformance_client.py``:
``sep-2640-client-no-prefetch`` (listing reads no file) and
``sep-2640-client-verify-digest``/``-size``/``-frontmatter`` (the mock
serves a tampered SKILL.md: the client must refuse it, reading no other
file of the skill, and says why on stderr, exiting 1, which the scenarios
allow).

Extension scenarios are on no revision's timeline, so each runs forced at
each revision's wire (2026-07-28 and 2025-11-25). A scenario passes when
the harness exits 0 with no FAILURE and no WARNING. Without npm these tests
skip, unless ``MCP_SYNC_REQUIRE_INTEROP=1`` makes them fail.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import conformance
import pytest
from conformance import Harness

pytestmark = pytest.mark.timeout(600)  # the first run installs the harness and a Node 22

CLIENT = conformance.EXAMPLE_CLIENT
REVISIONS = ["2026-07-28", "2025-11-25"]
SERVER_SCENARIOS = ["sep-2640-skills-directory", "sep-2640-skills-enumeration", "sep-2640-skills-manifest"]
"""The skills server scenarios of harness 0.2.0-alpha.12."""
CLIENT_SCENARIOS = {
    "sep-2640-client-no-prefetch": None,
    "sep-2640-client-verify-digest": "digest mismatch",
    "sep-2640-client-verify-size": "size mismatch",
    "sep-2640-client-verify-frontmatter": "frontmatter differs from the skill's entry in description",
}
"""The skills client scenarios, and what the client must say when it refuses the tampered skill."""


@pytest.fixture(scope="module")
def harness() -> Harness:
    return conformance.harness(conformance.HARNESS_2026)


@pytest.fixture(scope="module")
def server_url(harness: Harness, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``examples/conformance_server.py`` on a free port, for the module."""
    with conformance.example_server(tmp_path_factory.mktemp("skills-server") / "server.log") as url:
        yield url


def test_the_harness_lists_the_skills_scenarios(harness: Harness) -> None:
    """A harness that renames or adds a skills scenario is noticed here, not by silently testing less."""
    assert [name for name in harness.list_server_scenarios() if name.startswith("sep-2640")] == SERVER_SCENARIOS
    assert [name for name in harness.list_client_scenarios() if name.startswith("sep-2640")] == list(CLIENT_SCENARIOS)


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_server_scenario(harness: Harness, server_url: str, scenario: str, revision: str, tmp_path: Path) -> None:
    run = harness.server_scenario(server_url, scenario, tmp_path, spec_version=revision)
    assert run.passed, run.report()
    statuses = {check["id"]: check["status"] for check in run.checks if check["id"].startswith("sep-2640-")}
    skipped = {name for name, status in statuses.items() if status == "SKIPPED"}
    cache_checks = {"sep-2640-skills-list-cache-attributes", "sep-2640-skills-get-cache-attributes"}
    expected = cache_checks if revision == "2025-11-25" and scenario.endswith("enumeration") else set()
    assert skipped == expected, statuses
    if scenario == "sep-2640-skills-directory":  # every check of the optional method ran
        assert len(statuses) == 6 and set(statuses.values()) == {"SUCCESS"}, statuses


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("scenario", list(CLIENT_SCENARIOS))
def test_client_scenario(harness: Harness, scenario: str, revision: str, tmp_path: Path) -> None:
    run = harness.client_scenario(
        [sys.executable, str(CLIENT)],
        scenario,
        tmp_path,
        env=conformance.CHILD_ENV,
        spec_version=revision,
        force=True,
    )
    assert run.passed, run.report()
    assert [check["status"] for check in run.checks if check["status"] != "INFO"] == ["SUCCESS"], run.report()
    refusal = CLIENT_SCENARIOS[scenario]
    stderr = run.files["stderr.txt"]
    if refusal is None:
        assert "skills: ['pdf-processing']" in stderr, stderr
    else:
        assert refusal in stderr, stderr
