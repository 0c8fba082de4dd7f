"""A person answers the server at a terminal: real processes on a pseudo-terminal, in both eras.

Each test starts a real program on a pty (a client of the asking server in
``tests/servers``, or the ``mcp-sync`` command), waits for each prompt and
types the answer, as a person would; ``^C`` is typed as the terminal would
send it. Every wait is bounded (``TIMEOUT``); each process is waited for.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pty = pytest.importorskip("pty")

ROOT = Path(__file__).parent.parent
SERVERS = ROOT / "tests" / "servers"
TIMEOUT = 30.0


class Terminal:
    """A program running on a pseudo-terminal: ``expect`` what it shows, ``type`` what a person types."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SERVERS)]), **(env or {})}
        environment.pop("MCP_SYNC_INTERACTIVE", None)
        self.master, follower = pty.openpty()
        self.process = subprocess.Popen(
            argv, stdin=follower, stdout=follower, stderr=follower, cwd=ROOT, env=environment, close_fds=True
        )
        os.close(follower)
        self.shown = ""
        self.position = 0

    def _read(self, deadline: float) -> bool:
        """Read what the program showed next; ``False`` at its end."""
        ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"nothing more within {TIMEOUT:g} s; shown so far:\n{self.shown}")
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # the program ended and closed the terminal
            return False
        self.shown += chunk.decode(errors="replace").replace("\r\n", "\n")
        return bool(chunk)

    def expect(self, text: str) -> None:
        """Wait until ``text`` is shown (after what was expected before)."""
        deadline = time.monotonic() + TIMEOUT
        while text not in self.shown[self.position :]:
            if not self._read(deadline):
                raise AssertionError(f"the program ended without showing {text!r}:\n{self.shown}")
        self.position = self.shown.index(text, self.position) + len(text)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode())

    def finish(self) -> tuple[int, str]:
        """Read what is left, wait for the program's end; its exit code and what it showed."""
        deadline = time.monotonic() + TIMEOUT
        while self._read(deadline):
            pass
        code = self.process.wait(TIMEOUT)
        self.close()
        return code, self.shown

    def close(self) -> None:
        """End the program if it still runs, and the terminal."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


@pytest.fixture
def terminals() -> list[Terminal]:
    started: list[Terminal] = []
    yield started
    for terminal in started:
        terminal.close()


def client(terminals: list[Terminal], era: str, tool: str = "profile", **env: str) -> Terminal:
    terminal = Terminal(sys.executable, str(SERVERS / "ask_client.py"), era, tool, env=env)
    terminals.append(terminal)
    return terminal


PROFILE = {"name": "Ada", "age": 36, "height": 1.7, "subscribe": False, "colour": "g", "tags": ["a", "c"]}


def fill_in_the_profile(terminal: Terminal) -> None:
    """Every field type, a default taken, and a wrong answer for each kind of check, put right."""
    terminal.expect("The server asks: Tell us about yourself\n")
    terminal.expect("Answer? [Y]es / [n]o, decline / [c]ancel: ")
    terminal.type("maybe\n")
    terminal.expect("  Type one of the letters in brackets.\n")
    terminal.expect("Answer? [Y]es / [n]o, decline / [c]ancel: ")
    terminal.type("y\n")
    terminal.expect("  as it should be printed\nYour name (at least 2 characters): ")
    terminal.type("\n")
    terminal.expect("  an answer is required; try again.\nYour name (at least 2 characters): ")
    terminal.type("A\n")
    terminal.expect("  must be at least 2 characters long; try again.\nYour name (at least 2 characters): ")
    terminal.type("Ada\n")
    terminal.expect("Age (integer, at least 0, at most 150): ")
    terminal.type("thirty\n")
    terminal.expect("  must be a whole number; try again.\nAge (integer, at least 0, at most 150): ")
    terminal.type("-1\n")
    terminal.expect("  must be at least 0; try again.\nAge (integer, at least 0, at most 150): ")
    terminal.type("36\n")
    terminal.expect("Height in metres (number) [1.7]: ")
    terminal.type("\n")
    terminal.expect("Subscribe (y/n) [y]: ")
    terminal.type("perhaps\n")
    terminal.expect("  answer y or n; try again.\nSubscribe (y/n) [y]: ")
    terminal.type("no\n")
    terminal.expect("  1. Red\n  2. Green\nColour (1-2): ")
    terminal.type("3\n")
    terminal.expect("  choose a number from 1 to 2; try again.\nColour (1-2): ")
    terminal.type("green\n")
    terminal.expect("  1. a\n  2. b\n  3. c\nTags (numbers separated by commas, at least 1 choice): ")
    terminal.type(" , \n")
    terminal.expect("  choose at least 1; try again.\nTags (numbers separated by commas, at least 1 choice): ")
    terminal.type("1, c, 1\n")
    terminal.expect("email (email, optional): ")


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_person_fills_in_the_form_at_a_terminal(terminals: list[Terminal], era: str) -> None:
    terminal = client(terminals, era)
    terminal.expect(f"TerminalForm {era} {{'form': {{}}, 'url': {{}}}}\n")
    fill_in_the_profile(terminal)
    terminal.type("ada(at)example\n")
    terminal.expect("  must be an email address; try again.\nemail (email, optional): ")
    terminal.type("\n")  # optional: left out
    code, shown = terminal.finish()
    assert code == 0, shown
    result, restored = shown[terminal.position :].strip().splitlines()[-2:]
    assert json.loads(result) == {"action": "accept", "content": PROFILE}
    assert restored == "interrupt signal on: True"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize(("reply", "action"), [("n\n", "decline"), ("c\n", "cancel"), ("\x03", "cancel")])
def test_a_person_declines_or_cancels_before_answering(
    terminals: list[Terminal], era: str, reply: str, action: str
) -> None:
    terminal = client(terminals, era)
    terminal.expect("Answer? [Y]es / [n]o, decline / [c]ancel: ")
    terminal.type(reply)
    code, shown = terminal.finish()
    assert code == 0, shown
    assert json.loads(shown.strip().splitlines()[-2]) == {"action": action, "content": None}
    assert ("Declined." if action == "decline" else "Cancelled.") in shown


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_ctrl_c_in_the_middle_of_the_form_cancels_it(terminals: list[Terminal], era: str) -> None:
    terminal = client(terminals, era)
    terminal.expect("Answer? [Y]es / [n]o, decline / [c]ancel: ")
    terminal.type("\n")
    terminal.expect("Your name (at least 2 characters): ")
    terminal.type("Ada\n")
    terminal.expect("Age (integer, at least 0, at most 150): ")
    terminal.type("3\x03")  # what was typed on the line does not matter
    terminal.expect("Cancelled.\n")
    code, shown = terminal.finish()
    assert code == 0, shown
    assert shown.strip().splitlines()[-2:] == ['{"action": "cancel", "content": null}', "interrupt signal on: True"]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_url_is_shown_and_opened_only_when_asked(terminals: list[Terminal], era: str, tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2])\" {opened} %s"
    terminal = client(terminals, era, "visit", BROWSER=browser)
    terminal.expect("The server asks: Sign the form\nOpen this address to go on: https://example.com/sign\n")
    prompt = "Press Enter when done, [o]pen it in the browser, [n]o, decline, [c]ancel: "
    terminal.expect(prompt)
    assert not opened.exists()
    terminal.type("o\n")
    terminal.expect(prompt)
    assert opened.read_text() == "https://example.com/sign"
    terminal.type("\n")
    code, shown = terminal.finish()
    assert code == 0, shown
    assert json.loads(shown.strip().splitlines()[-2]) == {"action": "accept"}


def mcp_sync_call(terminals: list[Terminal], *options: str) -> Terminal:
    terminal = Terminal(sys.executable, "-m", "mcp_sync", "call", "tests/servers/asking.py", "profile", *options)
    terminals.append(terminal)
    return terminal


def test_mcp_sync_call_prompts_the_person(terminals: list[Terminal]) -> None:
    terminal = mcp_sync_call(terminals)
    fill_in_the_profile(terminal)
    terminal.type("ada@example.com\n")
    code, shown = terminal.finish()
    assert code == 0, shown
    assert json.loads(shown.strip().splitlines()[-1]) == {
        "action": "accept",
        "content": {**PROFILE, "email": "ada@example.com"},
    }


def test_mcp_sync_call_with_no_input_refuses(terminals: list[Terminal]) -> None:
    code, shown = mcp_sync_call(terminals, "--no-input").finish()
    assert code == 1
    assert shown.strip() == "mcp-sync: error: this request needs the client capability 'elicitation'"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_without_a_terminal_nobody_is_asked(era: str) -> None:
    """A script without a terminal declares no elicitation, as before: the server gets the protocol's answer."""
    done = subprocess.run(
        [sys.executable, str(SERVERS / "ask_client.py"), era, "profile"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
        env={
            **{name: value for name, value in os.environ.items() if name != "MCP_SYNC_INTERACTIVE"},
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(SERVERS)]),
        },
        check=False,
    )
    assert done.stdout.splitlines()[0] == f"NoneType {era} None"
    if era == "handshake":  # the tool reports the refusal as its error
        assert done.returncode == 0 and "the client does not support form elicitation" in done.stdout
    else:
        assert done.returncode == 1 and "this request needs the client capability 'elicitation'" in done.stderr
