"""The README's two commands: the first does the main job, the second is what CI runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def commands() -> list[str]:
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"::\n\n    (.+?)\n\n", text)][:2]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = commands()[1].split(" && ", 1)[1]
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_first_command_lists_the_library_tools_and_calls_one() -> None:
    install, *steps = commands()[0].split(" && ")
    assert install == "pip install ."
    outputs = []
    for step in steps:
        argv = shlex.split(step)
        assert argv[0] == "mcp-sync"
        # the same command, run by this interpreter (the console script is this package's cli)
        argv = [sys.executable, "-m", "mcp_sync", *(a.replace("python ", f"{sys.executable} ", 1) for a in argv[1:])]
        outputs.append(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True, cwd=ROOT).stdout)
    listing, called = outputs
    assert "search(query: string, only_available: boolean = false)" in listing
    assert '"title": "Python Tricks"' in called
