"""The suite's own rules: in CI nothing skips silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import peers

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
