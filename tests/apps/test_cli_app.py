"""``mcp-sync app``: what it refuses, how it opens the browser, a call the server refuses, and Ctrl-C with no page."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from browsing import WAIT, until

from mcp_sync.cli import main

SERVER = str(Path(__file__).parents[1] / "servers" / "app_server.py")


def test_a_tool_that_is_missing_or_has_no_app_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["app", SERVER, "nowhere", "--no-browser"]) == 1
    assert "the server has no tool 'nowhere'" in capsys.readouterr().err
    assert main(["app", SERVER, "plain", "--no-browser"]) == 1
    assert "tool 'plain' has no app" in capsys.readouterr().err


def start(tmp_path: Path, *arguments: str, browser: bool) -> tuple[subprocess.Popen[str], str]:
    """The command as a process; the URL it printed. Its browser is $BROWSER: a script that writes down the URL."""
    opened = tmp_path / "opened"
    script = tmp_path / "browser.py"
    script.write_text(f"import sys, pathlib\npathlib.Path({str(opened)!r}).write_text(sys.argv[1])\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {script} %s"}
    argv = [sys.executable, "-m", "mcp_sync", "app", SERVER, *arguments, *([] if browser else ["--no-browser"])]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    return process, url


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0, stderr
    return stderr


def test_the_browser_is_opened_at_the_page_and_ctrl_c_without_a_page_ends_it(tmp_path: Path) -> None:
    process, url = start(tmp_path, "show", "n=2", browser=True)
    try:
        assert url.startswith("http://127.0.0.1:") and "/view/" in url and "token=" in url
        opened = until(lambda: (tmp_path / "opened").exists() and (tmp_path / "opened").read_text(), "the browser")
        assert opened == url
        assert process.stderr is not None
        assert "showing show's app" in process.stderr.readline()  # the result delivered: now waiting
        stderr = stop(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=WAIT)
    assert "closed (no answer from the app)" in stderr  # no page ever initialized it: nothing was asked


def test_a_call_the_server_refuses_is_reported_and_the_page_stays(tmp_path: Path) -> None:
    process, url = start(tmp_path, "show", browser=False)  # without its required argument
    try:
        assert url.startswith("http://127.0.0.1:")
        assert not (tmp_path / "opened").exists()  # --no-browser
        assert process.stderr is not None
        assert "tool 'show' failed: Invalid arguments for tool show: n: Field required" in process.stderr.readline()
        assert "showing show's app" in process.stderr.readline()
        stop(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=WAIT)
