"""A task started in one notebook cell and collected in a later one, in a real kernel (nbclient).

The kernel serves ``tests/servers/task_server.py`` in memory; the first cell
starts a tool that waits for a file and shows the task (its status, as HTML
updated in place), the second opens the file and prints the result. nbclient
bounds every cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import kernel_spec

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).parent.parent
SERVERS = ROOT / "tests" / "servers"
CELL_TIMEOUT = 60
HTML = "text/html"


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "mcp-sync-tasks"
    for variable, value in kernel_spec(tmp_path, name, [str(ROOT), str(SERVERS)]).items():
        monkeypatch.setenv(variable, value)
    return name


def test_start_a_task_in_one_cell_and_collect_it_in_a_later_one(kernel: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    cells = [
        "from mcp_sync import connect\n"
        "from task_server import server\n"
        "client = connect(server, timeout=30)\n"
        f"task = client.start_tool('slow', {{'text': 'built', 'gate': {str(gate)!r}}})\n"
        "task",
        f"open({str(gate)!r}, 'w').close()\nprint(task.result(timeout=30).text)",
        "client.close()\nprint(task.status)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name=kernel).execute()
    shown, printed, closed = (cell.outputs for cell in notebook.cells)
    [status] = [output for output in shown if HTML in output.get("data", {})]
    assert "<b>slow</b>" in status["data"][HTML]
    # Shown as working, then updated in place by the poller as the task ended.
    assert ": completed" in status["data"][HTML]
    assert printed_text(printed) == "built\n"
    assert printed_text(closed) == "completed\n"


def printed_text(outputs: list[Any]) -> str:
    """What a cell printed: its outputs are all stdout streams, joined (the kernel may send one print in pieces)."""
    assert [output.get("output_type") for output in outputs] == ["stream"] * len(outputs), outputs
    assert {output.get("name") for output in outputs} == {"stdout"}, outputs
    return "".join(output["text"] for output in outputs)
