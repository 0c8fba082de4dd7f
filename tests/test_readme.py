"""The README's two commands (the first does the main job, the second is what CI runs), its examples of each side,
its docs command, and the first server of the getting-started page, run as a script."""

from __future__ import annotations

import re
import runpy
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mcp_sync
from mcp_sync.types import ElicitRequestFormParams, ElicitResult

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


def test_the_python_versions_claimed_agree() -> None:
    setup = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    required = re.search(r"^python_requires = >=(3\.\d+)$", setup, re.MULTILINE)
    assert required is not None
    found = re.findall(r"Programming Language :: Python :: (3\.\d+)$", setup, re.MULTILINE)
    classified = sorted(found, key=lambda version: [int(part) for part in version.split(".")])
    # .ci/run proves the oldest and the newest classifier; python_requires and the README name the oldest.
    assert classified and classified[0] == required.group(1)
    assert f"with Python {required.group(1)} or newer" in (ROOT / "README.rst").read_text(encoding="utf-8")


def literal_blocks(text: str) -> list[str]:
    """The README's ``::`` literal blocks, dedented, in order."""
    return [textwrap.dedent(block) for block in re.findall(r"::\n\n((?:    .*\n|\n)+?)(?=\S)", text)]


def test_the_readme_examples_of_each_side_run(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, server_example, client_example, _ = literal_blocks((ROOT / "README.rst").read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(server_example, namespace)  # not as __main__: the server is defined, not served
    with mcp_sync.connect(namespace["server"]) as client:  # type: ignore[arg-type]
        assert client.call_tool("forecast", {"city": "Oslo", "days": 2}).structured_content == {
            "celsius": 21.5,
            "days": 2,
        }
        assert client.read_resource("cities://oslo/population").contents[0].text == "42000"  # type: ignore[union-attr]
    # The client's command line starts "python": this interpreter, as in an activated virtualenv.
    exec(client_example.replace('"python ', f'"{sys.executable} '), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['search', 'borrow', 'reindex']"
    assert "Python Tricks" in printed[1] and "Donald Knuth" in printed[2]
    assert printed[3] == "MCP.INVALID_PARAMS"


def test_the_docs_command_is_the_one_documented_and_tested() -> None:
    docs_command = literal_blocks((ROOT / "README.rst").read_text(encoding="utf-8"))[4].strip()
    install, build = docs_command.split(" && ")
    assert install == 'pip install -e ".[docs]"'
    assert build in (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    assert docs_command in (ROOT / "docs" / "contributing.rst").read_text(encoding="utf-8")


def server_snippet() -> str:
    """The first python code block of the getting-started page's "Your first server" section, as a script."""
    text = (ROOT / "docs" / "getting-started.rst").read_text(encoding="utf-8")
    section = text.split("Your first server\n-----------------\n", 1)[1]
    block = re.search(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+?)(?=\S)", section)
    assert block is not None
    return textwrap.dedent(block.group(1))


@pytest.mark.parametrize("era", ["stateless", "handshake"])
def test_the_first_server_snippet_runs_as_shown(era: str, tmp_path: Path) -> None:
    script = tmp_path / "weather.py"
    script.write_text(server_snippet(), encoding="utf-8")
    namespace = runpy.run_path(str(script))  # not as __main__: its imports and definitions only
    assert namespace["serve_http"] is mcp_sync.serve_http
    command = [sys.executable, str(script)]
    # A script's client: nobody to ask, so the report is kept rather than the call failing.
    with mcp_sync.connect(command, era=era, elicitation_provider=None) as client:
        assert client.call_tool("slow_report", {"cities": ["Oslo", "Lima"]}).text == "kept"
        assert client.call_tool("forecast", {"city": "Oslo"}).structured_content == {"city": "Oslo", "celsius": 21.5}

    def answer(params: ElicitRequestFormParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"to": "ada@example.org"})

    with mcp_sync.connect(command, era=era, elicitation_provider=answer) as client:
        assert client.call_tool("slow_report", {"cities": ["Oslo"]}).text == "sent to ada@example.org"


def extra(name: str) -> set[str]:
    """The requirements of one extra of setup.cfg."""
    text = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    block = re.search(rf"^{name} =\n((?:    .+\n)+)", text, re.MULTILINE)
    assert block is not None, f"no extra {name!r} in setup.cfg"
    return {line.strip() for line in block.group(1).splitlines()}


def test_the_test_extra_installs_what_the_docs_build_needs() -> None:
    # The suite builds the docs: the README's test command installs only the test extra, and so does .ci/run.
    assert extra("docs") <= extra("test")
    install = commands()[1].split(" && ", 1)[0]
    assert install == 'pip install -e ".[test]"'
    assert f"python -m {install}" in (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("--quiet ", "")
