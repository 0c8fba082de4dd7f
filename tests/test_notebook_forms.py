"""A person answers the server from a live notebook: widget forms, ``input()`` boxes, logs and progress.

Each test runs cells in a real ipykernel through nbclient, with a real
MCPServer (served in the kernel over the in-memory transport) whose tool
asks the user (``ctx.elicit``), in both eras. The person is played by the
test's side of the kernel connection: it answers the widget form with the
messages a browser sends (``comm_msg`` updates and button clicks on the
shell channel), and the ``input()`` boxes with ``input_reply`` messages on
the stdin channel. Every wait is bounded by nbclient's cell timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import kernel_spec

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
pytest.importorskip("ipywidgets")

ROOT = Path(__file__).parent.parent
SERVERS = ROOT / "tests" / "servers"
CELL_TIMEOUT = 60
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec for this Python's ipykernel, in a directory of its own."""
    name = "mcp-sync-forms"
    for variable, value in kernel_spec(tmp_path, name, [str(ROOT), str(SERVERS)]).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("MCP_SYNC_INTERACTIVE", raising=False)
    return name


class Person(nbclient.NotebookClient):  # type: ignore[misc]
    """Runs the cells and plays the person: types ``replies`` into ``input()`` boxes, fills widget forms.

    ``answers`` are the widget form's rounds, each a dict of (widget model,
    description) -> the state a browser sends, and the button to click. The
    first round is played when the form is shown; each next one when the
    form's error line says something. The browser is a second client of the
    kernel (as a second browser tab would be): it sees every message the
    widgets publish, not only those of the running cell.
    """

    def __init__(self, *args: Any, replies: Sequence[str] = (), answers: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.answers = list(answers)
        self.models: dict[str, tuple[str, dict[str, Any]]] = {}
        self.errors: list[str] = []
        self.browser: Any = None

    async def async_start_new_kernel_client(self) -> Any:
        client = await super().async_start_new_kernel_client()
        client.allow_stdin = True
        return client

    async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
        typing = asyncio.ensure_future(self._type_replies())
        try:
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        finally:
            typing.cancel()
            if self.browser is not None:
                self.browser.stop_channels()
                self.browser = None

    async def _type_replies(self) -> None:
        while True:
            message = await self.kc.get_stdin_msg()  # cancelled when the cell ends (which nbclient bounds)
            self.prompts.append(message["content"]["prompt"])
            self.kc.input(self.replies.pop(0))

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        content = msg["content"]
        if msg["msg_type"] == "comm_open":
            state = content["data"]["state"]
            self.models[content["comm_id"]] = (state.get("_model_name", ""), state)
        elif msg["msg_type"] == "display_data" and WIDGET in content["data"] and self.answers:
            shown = self.models.get(content["data"][WIDGET]["model_id"], ("", {}))[0]
            if shown == "VBoxModel":  # the form (a progress bar is an HBox)
                self._fill_in()
        return super().process_message(msg, cell, cell_index)

    def _fill_in(self) -> None:
        """Play every round: after each but the last, wait (bounded) for the form's error line to change."""
        self.browser = self.km.blocking_client()
        self.browser.start_channels()
        while self.answers:
            fields, button = self.answers.pop(0)
            for (model, description), state in fields.items():
                self._send(self._comm(model, description), {"method": "update", "state": state, "buffer_paths": []})
            self._send(self._comm("ButtonModel", button), {"method": "custom", "content": {"event": "click"}})
            if self.answers:
                self.errors.append(self._next_error())

    def _next_error(self) -> str:
        while True:
            msg = self.browser.get_iopub_msg(timeout=CELL_TIMEOUT)  # raises queue.Empty past it
            state = msg["content"].get("data", {}).get("state", {}) if msg["msg_type"] == "comm_msg" else {}
            if "color" in str(state.get("value", "")):
                return str(state["value"])

    def _comm(self, model: str, description: str) -> str:
        [comm] = [
            key
            for key, (name, state) in self.models.items()
            if (name, state.get("description")) == (model, description)
        ]
        return comm

    def _send(self, comm: str, data: dict[str, Any]) -> None:
        session = self.browser.session
        session.send(self.browser.shell_channel.socket, session.msg("comm_msg", {"comm_id": comm, "data": data}))


def run(kernel: str, source: str, **person: Any) -> tuple[Person, Any]:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    runner = Person(notebook, kernel_name=kernel, timeout=CELL_TIMEOUT, **person)
    runner.execute()
    return runner, notebook.cells[0]


def streams(cell: Any, name: str = "stdout") -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream" and out.name == name)


def call(era: str, tool: str, before: str = "") -> str:
    return (
        f"{before}import mcp_sync\n"
        "from asking import server\n"
        f"with mcp_sync.connect(server, era={era!r}) as client:\n"
        "    print(type(client.elicitation_provider).__name__, client.negotiated_era)\n"
        f"    print(client.call_tool({tool!r}).text)\n"
    )


FILLED = {
    ("TextModel", "Your name *"): {"value": "Ada"},
    ("TextModel", "Age *"): {"value": "abc"},  # not a whole number: the form says so and waits
    ("TextModel", "Height in metres"): {"value": "1.8"},
    ("CheckboxModel", "Subscribe"): {"value": False},
    ("DropdownModel", "Colour *"): {"index": 2},  # after the empty choice: Green
    ("SelectMultipleModel", "Tags *"): {"index": [0, 2]},
}
FIXED = {("TextModel", "Age *"): {"value": "36"}}


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_widget_form_in_the_cell_answers_the_server(kernel: str, era: str) -> None:
    person, cell = run(kernel, call(era, "profile"), answers=[(FILLED, "Accept"), (FIXED, "Accept")])
    assert not [out for out in cell.outputs if out.output_type == "error"], cell.outputs
    first, result = streams(cell).splitlines()
    assert first == f"WidgetForm {era}"
    assert json.loads(result) == {
        "action": "accept",
        "content": {"name": "Ada", "age": 36, "height": 1.8, "subscribe": False, "colour": "g", "tags": ["a", "c"]},
    }
    assert len(person.errors) == 1 and "Age: must be a whole number" in person.errors[0]
    assert person.answers == []


@pytest.mark.parametrize(("era", "button"), [("handshake", "Decline"), ("stateless", "Cancel")])
def test_a_widget_form_declined_or_cancelled(kernel: str, era: str, button: str) -> None:
    _, cell = run(kernel, call(era, "profile"), answers=[({}, button)])
    result = json.loads(streams(cell).splitlines()[1])
    assert result == {"action": button.lower(), "content": None}


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_url_elicitation_shows_a_link_and_done_accepts(kernel: str, era: str) -> None:
    _, cell = run(kernel, call(era, "visit"), answers=[({}, "Done")])
    assert json.loads(streams(cell).splitlines()[1]) == {"action": "accept"}


WITHOUT_WIDGETS = "import sys\nsys.modules['ipywidgets'] = None  # as if ipywidgets were not installed\n"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_input_boxes_answer_the_server_without_ipywidgets(kernel: str, era: str) -> None:
    replies = ["", "A", "Ada", "200", "36", "", "n", "green", "1, 3", "ada@example"]
    replies += ["ada@example.com"]
    person, cell = run(kernel, call(era, "profile", WITHOUT_WIDGETS), replies=replies)
    assert not [out for out in cell.outputs if out.output_type == "error"], cell.outputs
    out = streams(cell)
    assert out.splitlines()[0] == f"NotebookForm {era}"
    assert json.loads(out.splitlines()[-1]) == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "age": 36,
            "height": 1.7,
            "subscribe": False,
            "colour": "g",
            "tags": ["a", "c"],
            "email": "ada@example.com",
        },
    }
    assert person.prompts[0] == "Answer? [Y]es / [n]o, decline / [c]ancel: "
    assert person.prompts[1:3] == ["Your name (at least 2 characters): "] * 2
    assert "must be at least 2 characters long; try again." in out and "must be at most 150" in out
    assert "Height in metres (number) [1.7]: " in person.prompts and "Subscribe (y/n) [y]: " in person.prompts
    assert "  1. Red\n  2. Green\n" in out and "must be an email address" in out
    assert person.replies == []


@pytest.mark.parametrize(("era", "reply", "action"), [("handshake", "n", "decline"), ("stateless", "c", "cancel")])
def test_input_boxes_decline_or_cancel(kernel: str, era: str, reply: str, action: str) -> None:
    _, cell = run(kernel, call(era, "profile", WITHOUT_WIDGETS), replies=[reply])
    assert json.loads(streams(cell).splitlines()[-1]) == {"action": action, "content": None}


def test_a_url_elicitation_with_input_boxes_shows_a_link(kernel: str) -> None:
    person, cell = run(kernel, call("handshake", "visit", WITHOUT_WIDGETS), replies=["x", ""])
    assert json.loads(streams(cell).splitlines()[-1]) == {"action": "accept"}
    links = [out.data["text/html"] for out in cell.outputs if out.output_type == "display_data"]
    assert links == [
        '<p>Open this address to go on: <a href="https://example.com/sign" target="_blank" '
        'rel="noopener">https://example.com/sign</a></p>'
    ]
    assert len(person.prompts) == 2 and "Type one of the letters in brackets." in streams(cell)


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_logs_and_progress_show_in_the_cell_that_made_the_call(kernel: str, era: str) -> None:
    source = (
        "import mcp_sync\n"
        "from asking import server\n"
        f"client = mcp_sync.connect(server, era={era!r}, log_level='info')\n"
    )
    calling = "print(client.call_tool('chatty', progress=True).text)\nclient.close()\n"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source), nbformat.v4.new_code_cell(calling)])
    Person(notebook, kernel_name=kernel, timeout=CELL_TIMEOUT).execute()
    connecting, called = notebook.cells
    assert connecting.outputs == []
    assert streams(called) == "done\n"
    assert streams(called, "stderr") == '[warning] store: {"disk": "almost full"}\n'  # the debug one is below info
    bars = [out for out in called.outputs if out.output_type == "display_data"]
    assert bars and all("application/vnd.jupyter.widget-view+json" in out.data for out in bars)
