"""Elicitation forms in process: the schema read into fields, typed answers checked, the dialogs and widgets.

The same code runs for a person in ``tests/test_terminal_forms.py`` (a real
pseudo-terminal) and ``tests/test_notebook_forms.py`` (a live kernel); here
each branch is driven directly: a pty opened in this process for the
terminal modes, ipywidgets without a kernel for the widget form.
"""

from __future__ import annotations

import io
import os
import sys
import types
from typing import Any

import pytest

from mcp_sync.client import forms
from mcp_sync.client import widget_form as widgets
from mcp_sync.client.forms import OMITTED, Field, InvalidAnswer, PromptDialog, TerminalForm, form_fields
from mcp_sync.display import ipython
from mcp_sync.display.progress import ProgressBar, _load_tqdm
from mcp_sync.types import (
    ElicitRequestedSchema,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    LoggingMessageNotificationParams,
)

SCHEMA = ElicitRequestedSchema.model_validate(
    {
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "in full", "minLength": 2, "maxLength": 5},
            "plain": {"type": "string"},
            "site": {"type": "string", "format": "uri"},
            "born": {"type": "string", "format": "date", "default": "2000-01-01"},
            "at": {"type": "string", "format": "date-time"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "ratio": {"type": "number", "default": 0.5},
            "count": {"type": "number", "default": 3},
            "ok": {"type": "boolean", "default": False},
            "yes": {"type": "boolean", "default": True},
            "pick": {"type": "string", "enum": ["x", "y"]},
            "titled": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}], "default": "r"},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha"]},
            "many": {
                "type": "array",
                "items": {"type": "string", "enum": ["p", "q", "s"]},
                "minItems": 1,
                "maxItems": 2,
            },
            "labelled": {
                "type": "array",
                "items": {"anyOf": [{"const": "u", "title": "Up"}, {"const": "d", "title": "Down"}]},
                "default": ["u", "d"],
                "minItems": 1,
            },
        },
        "required": ["name", "plain", "age", "pick", "many"],
    }
)
FIELDS = {field.name: field for field in form_fields(SCHEMA)}


def fails(field: str, raw: str) -> str:
    with pytest.raises(InvalidAnswer) as caught:
        FIELDS[field].parse(raw)
    return str(caught.value)


# ------------------------------------------------------------------ fields


def test_fields_read_from_every_schema_shape() -> None:
    kinds = {name: field.kind for name, field in FIELDS.items()}
    assert kinds == {
        "name": "string",
        "plain": "string",
        "site": "string",
        "born": "string",
        "at": "string",
        "age": "integer",
        "ratio": "number",
        "count": "number",
        "ok": "boolean",
        "yes": "boolean",
        "pick": "choice",
        "titled": "choice",
        "legacy": "choice",
        "many": "choices",
        "labelled": "choices",
    }
    assert FIELDS["legacy"].options == (("a", "Alpha"), ("b", "b"))  # a label missing: the value stands in
    assert FIELDS["labelled"].options == (("u", "Up"), ("d", "Down"))
    assert FIELDS["name"].required and not FIELDS["site"].required
    assert FIELDS["name"].label == "Name" and FIELDS["plain"].label == "plain"
    assert FIELDS["titled"].option_label("r") == "Red" and FIELDS["titled"].option_label("zz") == "zz"


def test_prompts_hints_and_introductions() -> None:
    prompts = {name: field.prompt() for name, field in FIELDS.items()}
    assert prompts == {
        "name": "Name (at least 2 characters, at most 5 characters): ",
        "plain": "plain: ",
        "site": "site (uri, optional): ",
        "born": "born (date) [2000-01-01]: ",
        "at": "at (date-time, optional): ",
        "age": "age (integer, at least 0, at most 150): ",
        "ratio": "ratio (number) [0.5]: ",
        "count": "count (number) [3]: ",
        "ok": "ok (y/n) [n]: ",
        "yes": "yes (y/n) [y]: ",
        "pick": "pick (1-2): ",
        "titled": "titled (1-1) [Red]: ",
        "legacy": "legacy (1-2, optional): ",
        "many": "many (numbers separated by commas, at least 1 choice, at most 2 choices): ",
        "labelled": "labelled (numbers separated by commas, at least 1 choice) [Up, Down]: ",
    }
    assert FIELDS["name"].introduction() == ["  in full"]
    assert FIELDS["pick"].introduction() == ["  1. x", "  2. y"]
    assert FIELDS["plain"].introduction() == [] and FIELDS["plain"].default_text() is None
    one = Field("n", "string", min_length=1, max_length=1)
    assert one.hint() == "at least 1 character, at most 1 character, optional"


def test_typed_answers_read_as_the_schema_says() -> None:
    parse = {name: field.parse for name, field in FIELDS.items()}
    assert parse["name"]("  Ada \n") == "Ada" and parse["plain"]("x") == "x"
    assert parse["site"]("https://example.com") == "https://example.com"
    assert parse["born"]("") == "2000-01-01" and parse["born"]("2026-07-28") == "2026-07-28"
    assert parse["at"]("2026-07-28T09:30:00") == "2026-07-28T09:30:00" and parse["at"]("") is OMITTED
    assert parse["age"]("36") == 36 and parse["ratio"]("1.25") == 1.25 and parse["ratio"]("2") == 2
    assert parse["ratio"]("") == 0.5
    assert [parse["ok"](word) for word in ("y", "YES", "true", "1", "on", "n", "No", "false", "0", "off")] == [
        True,
    ] * 5 + [False] * 5
    assert parse["ok"]("") is False and parse["yes"]("") is True
    assert parse["pick"]("2") == "y" and parse["pick"]("X") == "x"
    assert parse["titled"]("red") == "r" and parse["titled"]("") == "r"
    assert parse["legacy"]("alpha") == "a"
    assert parse["many"]("1, s, 1") == ["p", "s"]
    default = parse["labelled"]("")
    assert default == ["u", "d"] and default is not FIELDS["labelled"].default  # a copy


def test_wrong_answers_say_why() -> None:
    assert fails("name", "") == "an answer is required"
    assert fails("name", "A") == "must be at least 2 characters long"
    assert fails("name", "Adalovelace") == "must be at most 5 characters long"
    assert fails("site", "example") == "must be a URI, like https://example.com"
    assert fails("born", "28/07/2026") == "must be a date, like 2026-07-28"
    assert fails("at", "soon") == "must be a date and time, like 2026-07-28T09:30:00"
    assert fails("age", "1.5") == "must be a whole number"
    assert fails("age", "-1") == "must be at least 0"
    assert fails("age", "151") == "must be at most 150"
    assert fails("ratio", "half") == "must be a number"
    assert fails("ratio", "inf") == "must be a finite number"
    assert fails("ok", "maybe") == "answer y or n"
    assert fails("pick", "3") == "choose a number from 1 to 2"
    assert fails("pick", "0") == "choose a number from 1 to 2"
    assert fails("many", ",") == "choose at least 1"
    assert fails("many", "1,2,3") == "choose at most 2"
    email = Field("email", "string", format="email")
    assert email.parse("ada@example.com") == "ada@example.com"
    with pytest.raises(InvalidAnswer, match="must be an email address"):
        email.parse("ada@example")


def test_widget_values_checked() -> None:
    assert FIELDS["pick"].check("x") == "x" and FIELDS["ok"].check(False) is False
    assert FIELDS["legacy"].check(None) is OMITTED
    with pytest.raises(InvalidAnswer, match="an answer is required"):
        FIELDS["pick"].check(None)
    assert FIELDS["many"].check(("p", "q")) == ["p", "q"]
    with pytest.raises(InvalidAnswer, match="an answer is required"):
        FIELDS["many"].check(())
    with pytest.raises(InvalidAnswer, match="choose at least 1"):
        FIELDS["labelled"].check(())  # it has a default, so the count decides
    assert Field("tags", "choices").check(()) is OMITTED


# ------------------------------------------------------------------ dialogs


def params(**properties: Any) -> ElicitRequestFormParams:
    schema = {"properties": properties, "required": [name for name in properties if name.startswith("r")]}
    return ElicitRequestFormParams(message="Tell me", requested_schema=ElicitRequestedSchema.model_validate(schema))


URL = ElicitRequestURLParams(message="Sign", url="https://example.com/sign")


class Scripted:
    """A person answering ``replies`` in turn (an exception in the list is raised instead)."""

    def __init__(self, *replies: str | BaseException) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.said: list[str] = []

    def ask(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def dialog(self, **options: Any) -> PromptDialog:
        return PromptDialog(self.ask, self.said.append, **options)


def test_a_dialog_asks_each_field_until_it_fits() -> None:
    person = Scripted("\n", "", "Ada\n", "x\n", "", "\n")
    form = params(rname={"type": "string", "description": "in full"}, age={"type": "integer"}, note={"type": "string"})
    assert person.dialog()(form) == ElicitResult(action="accept", content={"rname": "Ada"})
    assert person.said == [
        "The server asks: Tell me",
        "  in full",
        "  an answer is required; try again.",
        "  must be a whole number; try again.",
    ]
    assert person.prompts[0] == "Answer? [Y]es / [n]o, decline / [c]ancel: "


@pytest.mark.parametrize(
    ("replies", "action", "said"),
    [
        (["what", "no"], "decline", "Declined."),
        (["c"], "cancel", "Cancelled."),
        ([KeyboardInterrupt()], "cancel", "Cancelled."),
        ([EOFError()], "cancel", "Cancelled."),
        (["y", "Ad\x03"], "cancel", "Cancelled."),
    ],
)
def test_a_dialog_declined_or_cancelled(replies: list[Any], action: str, said: str) -> None:
    person = Scripted(*replies)
    assert person.dialog()(params(rname={"type": "string"})) == ElicitResult(action=action)
    assert person.said[-1] == said


def test_a_url_is_shown_and_opened_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    person = Scripted("o", "", "")
    assert person.dialog(open_url=opened.append)(URL) == ElicitResult(action="accept")
    assert opened == ["https://example.com/sign"]
    assert person.said == ["The server asks: Sign", "Open this address to go on: https://example.com/sign"]

    shown: list[str] = []
    refused = Scripted("n")
    assert refused.dialog(show_url=shown.append)(URL) == ElicitResult(action="decline")
    assert shown == ["https://example.com/sign"] and refused.said == ["The server asks: Sign"]

    import webbrowser

    results = iter([False, True])
    monkeypatch.setattr(webbrowser, "open", lambda url: next(results))
    browser = Scripted("o", "o", "c")
    assert browser.dialog()(URL) == ElicitResult(action="cancel")
    assert "  No browser could be opened; open the address by hand: https://example.com/sign" in browser.said
    assert len([line for line in browser.said if "No browser" in line]) == 1


class Typist(io.StringIO):
    """The output of a terminal form: when a prompt is written, the person types the next reply into the pty."""

    def __init__(self, master: int, replies: list[str]) -> None:
        super().__init__()
        self.master = master
        self.replies = replies

    def write(self, text: str) -> int:
        if text.endswith(": ") and self.replies:
            os.write(self.master, self.replies.pop(0).encode())
        return super().write(text)


@pytest.fixture
def terminal() -> Any:
    """A pseudo-terminal opened in this process: (the person's end, the program's stdin)."""
    master, follower = os.openpty()
    stdin = open(follower, encoding="utf-8")  # noqa: SIM115 - closed below
    yield master, stdin
    stdin.close()
    os.close(master)


def test_a_terminal_form_reads_lines_and_ctrl_c_from_the_terminal(terminal: Any) -> None:
    import termios

    master, stdin = terminal
    before = termios.tcgetattr(stdin.fileno())
    output = Typist(master, ["\n", "Ada\n", "4\x03"])
    form = TerminalForm(stdin, output)
    assert form(params(rname={"type": "string"}, age={"type": "integer"})) == ElicitResult(action="cancel")
    assert termios.tcgetattr(stdin.fileno()) == before  # the modes are put back
    assert output.getvalue().endswith("age (integer, optional): \nCancelled.\n")

    long = "A" * 1500  # longer than one read: it comes in parts
    output = Typist(master, ["\n", long + "\n"])
    assert TerminalForm(stdin, output)(params(rname={"type": "string"})).content == {"rname": long}

    eof = Typist(master, ["\x04"])  # Ctrl-D at the start of a line: the end of input
    assert TerminalForm(stdin, eof)(params(rname={"type": "string"})) == ElicitResult(action="cancel")


def test_a_terminal_form_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    output = io.StringIO()
    form = TerminalForm(io.StringIO("y\nAda\n"), output)
    assert form(params(rname={"type": "string"})).content == {"rname": "Ada"}
    assert TerminalForm(io.StringIO(""), output)(params(rname={"type": "string"})).action == "cancel"
    read, write = os.pipe()  # a real descriptor that is no terminal
    os.write(write, b"n\n")
    os.close(write)
    with open(read, encoding="utf-8") as pipe:
        assert TerminalForm(pipe, output)(params(rname={"type": "string"})).action == "decline"
    monkeypatch.setitem(sys.modules, "termios", None)  # as on Windows
    assert TerminalForm(io.StringIO("c\n"), output)(params(rname={"type": "string"})).action == "cancel"
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    monkeypatch.setattr(sys, "stderr", output)
    default = TerminalForm()
    assert default.stdin is sys.stdin and default.output is output
    assert default(params(rname={"type": "string"})).action == "decline"


# ------------------------------------------------------------------ notebooks


class ZMQInteractiveShell:
    """Named as Jupyter's kernel shell."""


class KernelShell(ZMQInteractiveShell):
    """A subclass, as Colab's shell is."""


def test_where_a_notebook_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ipython.in_notebook(KernelShell()) and ipython.in_notebook(ZMQInteractiveShell())
    assert not ipython.in_notebook(object())
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert ipython.running_shell() is None and not ipython.in_notebook()
    shell = KernelShell()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert ipython.running_shell() is shell and ipython.in_notebook()


def test_notebook_displays_links_and_log_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    ipython.show_link("https://example.com/?a=<b>")
    [link] = shown
    assert repr(link) == "Open this address to go on: https://example.com/?a=<b>"
    assert link._repr_html_() == (  # type: ignore[attr-defined]
        '<p>Open this address to go on: <a href="https://example.com/?a=&lt;b&gt;" target="_blank" '
        'rel="noopener">https://example.com/?a=&lt;b&gt;</a></p>'
    )
    ipython.show_log(LoggingMessageNotificationParams(level="warning", data={"disk": "full"}, logger="store"))
    ipython.show_log(LoggingMessageNotificationParams(level="info", data="plain"))
    assert capsys.readouterr().err == '[warning] store: {"disk": "full"}\n[info] plain\n'


def test_a_notebook_form_uses_input_boxes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    replies = iter(["", "Ada", ""])
    monkeypatch.setattr("builtins.input", lambda prompt: next(replies))
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    form = forms.NotebookForm()
    assert form(params(rname={"type": "string"})).content == {"rname": "Ada"}
    assert form(URL).action == "accept"
    assert [repr(item) for item in shown] == ["Open this address to go on: https://example.com/sign"]
    assert "The server asks: Tell me" in capsys.readouterr().out


def test_progress_uses_the_notebook_widget_when_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm
    import tqdm.notebook

    assert _load_tqdm(notebook=True) is tqdm.notebook.tqdm
    assert _load_tqdm() is tqdm.tqdm
    assert ProgressBar("x", notebook=False)._tqdm is tqdm.tqdm
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    assert _load_tqdm(notebook=True) is tqdm.tqdm  # the notebook bar needs ipywidgets
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert _load_tqdm(notebook=True) is None


# ------------------------------------------------------------------ widgets

ipywidgets = pytest.importorskip("ipywidgets")


def by_description(view: widgets.FormView) -> dict[str, Any]:
    return {widget.description: widget for _, widget in view.fields}


def test_a_widget_form_checks_and_answers() -> None:
    form = params(
        rname={"type": "string", "title": "Name", "description": "in full"},
        age={"type": "integer"},
        ok={"type": "boolean", "default": True},
        rpick={"type": "string", "enum": ["x", "y"]},
        colour={"type": "string", "enum": ["r", "g"], "default": "g"},
        rmany={"type": "array", "items": {"type": "string", "enum": ["p", "q"]}, "default": ["q"]},
    )
    view = widgets.FormView(form)
    shown = by_description(view)
    assert list(shown) == ["Name *", "age", "ok", "rpick *", "colour", "rmany *"]
    assert shown["ok"].value is True and shown["colour"].value == "g" and shown["rmany *"].value == ("q",)
    assert shown["rpick *"].options == (("", None), ("x", "x"), ("y", "y"))
    assert shown["colour"].options == (("r", "r"), ("g", "g"))  # a default: no empty choice
    assert shown["age"].placeholder == "integer, optional"
    assert "<small>in full</small>" in [getattr(widget, "value", None) for widget in view.box.children]
    view.settle("accept")
    assert "Name: an answer is required" in view.error.value and not view.result.done()
    shown["Name *"].value = "Ada"
    shown["age"].value = "x"
    view.buttons["accept"].click()
    assert "age: must be a whole number" in view.error.value
    shown["age"].value = ""
    shown["rpick *"].value = "y"
    view.buttons["accept"].click()
    answer = {"rname": "Ada", "ok": True, "rpick": "y", "colour": "g", "rmany": ["q"]}
    assert view.result.result(0) == ElicitResult(action="accept", content=answer)
    view.settle("cancel")  # the first answer counts
    assert view.result.result(0).action == "accept"
    view.close(view.result.result(0))
    assert view.error.value == "<i>Answered.</i>" and all(button.disabled for button in view.buttons.values())
    assert shown["Name *"].disabled


def test_a_widget_form_shown_and_answered_in_place() -> None:
    def decline(box: Any) -> None:
        [buttons] = [child for child in box.children if isinstance(child, ipywidgets.HBox)]
        buttons.children[1].click()

    form = widgets.WidgetForm(show=decline)
    assert form(params(rname={"type": "string"})) == ElicitResult(action="decline")
    link_box: list[Any] = []
    assert widgets.WidgetForm(show=link_box.append, timeout=0)(URL) == ElicitResult(action="cancel")  # nobody came
    assert "https://example.com/sign" in link_box[0].children[1].value

    view = widgets.FormView(URL)
    assert view.buttons["accept"].description == "Done"
    view.buttons["accept"].click()
    assert view.result.result(0) == ElicitResult(action="accept")
    view.close(ElicitResult(action="decline"))
    assert view.error.value == "<i>Declined.</i>"


class FakeLoop:
    """The shell channel thread's loop: runs what it is given at once."""

    def add_callback(self, work: Any) -> None:
        work()


class FakeManager:
    def __init__(self) -> None:
        self.live: list[str] = []

    def _create_subshell(self) -> str:
        self.live.append("sub-1")
        return "sub-1"

    def _delete_subshell(self, subshell: str) -> None:
        self.live.remove(subshell)


def fake_kernel() -> Any:
    return types.SimpleNamespace(shell_channel_thread=types.SimpleNamespace(io_loop=FakeLoop(), manager=FakeManager()))


def test_widget_messages_are_routed_to_a_subshell_while_the_form_waits() -> None:
    kernel = fake_kernel()
    manager = kernel.shell_channel_thread.manager
    seen: list[Any] = []

    def accept(box: Any) -> None:
        comm = box.comm
        seen.append((comm._reply_subshell_for({}, None), list(manager.live)))
        [buttons] = [child for child in box.children if isinstance(child, ipywidgets.HBox)]
        buttons.children[0].click()

    assert widgets.WidgetForm(kernel, show=accept)(URL).action == "accept"
    assert seen == [("sub-1", ["sub-1"])] and manager.live == []

    closed = ipywidgets.Text()
    closed.close()  # a widget without a comm is left alone
    with widgets._routed(kernel, [closed]):
        assert manager.live == ["sub-1"]
    with widgets._routed(None, [closed]):
        assert manager.live == []

    def fail() -> None:
        raise RuntimeError("no subshells here")

    with pytest.raises(RuntimeError, match="no subshells here"):
        widgets._on_channel_thread(kernel, fail)


def test_the_notebook_form_is_chosen_from_what_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = fake_kernel()
    shell = types.SimpleNamespace(kernel=kernel)
    assert widgets.routing_kernel(shell) is kernel
    assert widgets.routing_kernel(types.SimpleNamespace()) is None
    assert (
        widgets.routing_kernel(types.SimpleNamespace(kernel=types.SimpleNamespace(shell_channel_thread=None))) is None
    )
    form = widgets.notebook_form(shell)
    assert isinstance(form, widgets.WidgetForm) and form.kernel is kernel and form.url_mode
    assert isinstance(widgets.notebook_form(types.SimpleNamespace()), forms.NotebookForm)  # ipykernel 6: no routing
    import ipykernel.comm.comm

    monkeypatch.delattr(ipykernel.comm.comm.BaseComm, "_reply_subshell_for")
    assert widgets.routing_kernel(shell) is None
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    assert isinstance(widgets.notebook_form(shell), forms.NotebookForm)
    assert forms.PromptDialog.url_mode
