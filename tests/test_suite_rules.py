"""The suite's own rules: in CI nothing skips silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import peers
import pytest

HERE = Path(__file__).resolve().parent
# A test that skips whenever it runs alone: it needs the whole suite.
ALONE = "tests/test_error_codes_are_raised.py::test_every_registered_code_is_reachable_from_a_real_call_site"


def run_alone(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", peers.REQUIRE_ENV, "PYTEST_ADDOPTS")}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", ALONE]
    return subprocess.run(command, cwd=HERE.parent, env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_a_skip_is_counted_and_allowed_outside_ci() -> None:
    result = run_alone()
    assert result.returncode == 0, result.stdout
    assert "mcp_sync: 1 skipped (allowed outside CI)" in result.stdout
    assert "1 skipped" in result.stdout.splitlines()[-1]


def test_in_ci_a_skip_fails_the_run_and_says_why() -> None:
    result = run_alone(CI="true")
    assert result.returncode == 1, result.stdout
    assert "skipped where nothing may skip" in result.stdout
    assert "needs the whole suite" in result.stdout
    assert "mcp_sync: 1 skipped, each a failure here" in result.stdout
    assert "1 failed" in result.stdout.splitlines()[-1]


def test_the_peers_cache_follows_xdg_cache_home_unless_a_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(peers.DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert peers.cache_dir() == tmp_path / "xdg" / "mcp-sync-peers"
    assert peers.cache_dir().is_dir()
    monkeypatch.setenv(peers.DIR_ENV, str(tmp_path / "named"))
    assert peers.cache_dir() == tmp_path / "named"


def test_a_test_not_marked_interop_cannot_use_a_peer() -> None:
    # This test is not marked: asking for a peer fails before anything is looked up or downloaded.
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.interop"):
        peers.peer_python()


def test_not_interop_selects_nothing_in_tests_interop() -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", peers.REQUIRE_ENV, "PYTEST_ADDOPTS")}
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not interop"]
    result = subprocess.run(
        [*command, "tests/interop"], cwd=HERE.parent, env=clean, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 5, result.stdout  # no test collected
    assert "deselected" in result.stdout.splitlines()[-1]
