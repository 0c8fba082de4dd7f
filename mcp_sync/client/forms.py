"""Elicitation forms answered by a person: the requested schema read into fields, and the prompts that fill them.

:func:`form_fields` is the one place that reads an elicitation's requested
schema; :meth:`Field.parse` turns what a person typed into the value the
schema asks for, or raises :class:`InvalidAnswer` saying what is wrong.
:class:`PromptDialog` asks for a form one field at a time through two
callables (``ask(prompt) -> line`` and ``say(text)``), so that a terminal
(:class:`TerminalForm`) and a notebook's ``input()`` (:class:`NotebookForm`)
share it. The notebook's widget form is in :mod:`mcp_sync.client.widget_form`.

>>> from mcp_sync.types import ElicitRequestedSchema, NumberSchema
>>> [age] = form_fields(ElicitRequestedSchema(properties={"age": NumberSchema(type="integer", minimum=0)}))
>>> age.parse("42"), age.prompt()
(42, 'age (integer, at least 0, optional): ')
>>> try:
...     age.parse("-1")
... except InvalidAnswer as exc:
...     print(exc)
must be at least 0
"""

from __future__ import annotations

import contextlib
import datetime
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TextIO, cast
from urllib.parse import urlsplit

from ..display.ipython import show_link
from ..protocol.types import (
    BooleanSchema,
    ElicitRequestedSchema,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    LegacyTitledEnumSchema,
    NumberSchema,
    PrimitiveSchemaDefinition,
    StringSchema,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
)

__all__ = [
    "OMITTED",
    "Field",
    "FieldKind",
    "InvalidAnswer",
    "NotebookForm",
    "PromptDialog",
    "TerminalForm",
    "form_fields",
]

FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
"""What a field asks for: text, a number, a whole number, yes/no, one option, or several options."""

OMITTED: Any = type("Omitted", (), {"__repr__": lambda self: "OMITTED"})()
"""What :meth:`Field.parse` returns for an optional field left empty with no default: it is left out of the answer."""

Action = Literal["accept", "decline", "cancel"]

CANCEL = "\x03"
"""Ctrl-C read as a character (the terminal prompts turn the interrupt signal off while they read)."""


class InvalidAnswer(ValueError):
    """What a person typed does not fit the field; the message says why, to show before asking again."""


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_YES = {"y", "yes", "true", "1", "on"}
_NO = {"n", "no", "false", "0", "off"}


@dataclass(frozen=True)
class Field:
    """One field of an elicitation form, read from its schema."""

    name: str
    kind: FieldKind
    title: str | None = None
    description: str | None = None
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()
    """The choices of an enum field: (value, label) pairs."""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        """What the person sees the field called: its title, else its name."""
        return self.title or self.name

    def option_label(self, value: str) -> str:
        """The label shown for one of the field's option values."""
        return dict(self.options).get(value, value)

    # ------------------------------------------------------------ describing

    def hint(self) -> str:
        """What to type, in a few words: ``integer, at least 0``, ``y/n``, ``1-3``..."""
        parts: list[str] = []
        if self.kind == "boolean":
            parts.append("y/n")
        elif self.kind == "choice":
            parts.append(f"1-{len(self.options)}")
        elif self.kind == "choices":
            parts.append("numbers separated by commas")
            parts += self._bounds(self.min_items, self.max_items, "choice")
        elif self.kind in ("number", "integer"):
            parts.append(self.kind)
            parts += [f"at least {self.minimum:g}"] if self.minimum is not None else []
            parts += [f"at most {self.maximum:g}"] if self.maximum is not None else []
        else:
            parts += [self.format] if self.format else []
            parts += self._bounds(self.min_length, self.max_length, "character")
        if not self.required and self.default is None:
            parts.append("optional")
        return ", ".join(parts)

    @staticmethod
    def _bounds(low: int | None, high: int | None, unit: str) -> list[str]:
        bounds = [f"at least {low} {unit}{'s' * (low != 1)}"] if low is not None else []
        return bounds + ([f"at most {high} {unit}{'s' * (high != 1)}"] if high is not None else [])

    def default_text(self) -> str | None:
        """The default as the person would type it (``None`` without one)."""
        if self.default is None:
            return None
        if self.kind == "boolean":
            return "y" if self.default else "n"
        if self.kind == "choice":
            return self.option_label(str(self.default))
        if self.kind == "choices":
            return ", ".join(self.option_label(str(value)) for value in self.default)
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    def prompt(self) -> str:
        """The prompt of the field: ``label (hint) [default]: ``."""
        default = self.default_text()
        text = self.label + (f" ({self.hint()})" if self.hint() else "")
        return text + (f" [{default}]" if default is not None else "") + ": "

    def introduction(self) -> list[str]:
        """The lines shown before the prompt: the description, then the numbered options of an enum."""
        lines = [f"  {self.description}"] if self.description else []
        lines += [f"  {number}. {label}" for number, (_, label) in enumerate(self.options, 1)]
        return lines

    # --------------------------------------------------------------- reading

    def parse(self, raw: str) -> Any:
        """The value ``raw`` stands for; the default (or :data:`OMITTED`) when empty; :class:`InvalidAnswer` else."""
        text = raw.strip()
        if not text:
            if self.default is not None:
                return list(self.default) if isinstance(self.default, list) else self.default
            if self.required:
                raise InvalidAnswer("an answer is required")
            return OMITTED
        if self.kind == "boolean":
            return self._boolean(text)
        if self.kind in ("number", "integer"):
            return self._number(text)
        if self.kind == "choice":
            return self._choice(text)
        if self.kind == "choices":
            return self._choices(text)
        return self._string(text)

    def _boolean(self, text: str) -> bool:
        if text.lower() in _YES:
            return True
        if text.lower() in _NO:
            return False
        raise InvalidAnswer("answer y or n")

    def _number(self, text: str) -> int | float:
        value: int | float
        try:
            value = int(text)
        except ValueError:
            if self.kind == "integer":
                raise InvalidAnswer("must be a whole number") from None
            try:
                value = float(text)
            except ValueError:
                raise InvalidAnswer("must be a number") from None
            if not math.isfinite(value):
                raise InvalidAnswer("must be a finite number") from None
        if self.minimum is not None and value < self.minimum:
            raise InvalidAnswer(f"must be at least {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise InvalidAnswer(f"must be at most {self.maximum:g}")
        return value

    def _choice(self, text: str) -> str:
        if text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1][0]
        for value, label in self.options:
            if text.lower() in (value.lower(), label.lower()):
                return value
        raise InvalidAnswer(f"choose a number from 1 to {len(self.options)}")

    def _choices(self, text: str) -> list[str]:
        chosen: list[str] = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            value = self._choice(item)
            if value not in chosen:
                chosen.append(value)
        return self._counted(chosen)

    def _counted(self, chosen: list[str]) -> list[str]:
        if self.min_items is not None and len(chosen) < self.min_items:
            raise InvalidAnswer(f"choose at least {self.min_items}")
        if self.max_items is not None and len(chosen) > self.max_items:
            raise InvalidAnswer(f"choose at most {self.max_items}")
        return chosen

    def _string(self, text: str) -> str:
        if self.min_length is not None and len(text) < self.min_length:
            raise InvalidAnswer(f"must be at least {self.min_length} characters long")
        if self.max_length is not None and len(text) > self.max_length:
            raise InvalidAnswer(f"must be at most {self.max_length} characters long")
        if self.format == "email" and not _EMAIL.match(text):
            raise InvalidAnswer("must be an email address")
        if self.format == "uri" and not urlsplit(text).scheme:
            raise InvalidAnswer("must be a URI, like https://example.com")
        if self.format == "date":
            _check(datetime.date.fromisoformat, text, "must be a date, like 2026-07-28")
        if self.format == "date-time":
            _check(datetime.datetime.fromisoformat, text, "must be a date and time, like 2026-07-28T09:30:00")
        return text

    def check(self, value: Any) -> Any:
        """A widget's value (a choice, a tuple of choices, a bool), checked as a typed answer; ``OMITTED`` for none."""
        if value is None or (isinstance(value, (list, tuple)) and not value and self.default is None):
            if self.required:
                raise InvalidAnswer("an answer is required")
            return OMITTED
        if self.kind == "choices":
            return self._counted(list(value))
        return value


def _check(read: Callable[[str], object], text: str, message: str) -> None:
    try:
        read(text)
    except ValueError:
        raise InvalidAnswer(message) from None


def _options(schema: PrimitiveSchemaDefinition) -> tuple[tuple[str, str], ...]:
    if isinstance(schema, TitledSingleSelectEnumSchema):
        return tuple((option.const, option.title) for option in schema.one_of)
    if isinstance(schema, TitledMultiSelectEnumSchema):
        return tuple((option.const, option.title) for option in schema.items.any_of)
    if isinstance(schema, UntitledMultiSelectEnumSchema):
        return tuple((value, value) for value in schema.items.enum)
    if isinstance(schema, LegacyTitledEnumSchema):
        labels = dict(zip(schema.enum, schema.enum_names or [], strict=False))
        return tuple((value, labels.get(value, value)) for value in schema.enum)
    assert isinstance(schema, UntitledSingleSelectEnumSchema)
    return tuple((value, value) for value in schema.enum)


def _field(name: str, schema: PrimitiveSchemaDefinition, required: bool) -> Field:
    common: dict[str, Any] = {
        "name": name,
        "title": schema.title,
        "description": schema.description,
        "required": required,
        "default": schema.default,
    }
    if isinstance(schema, BooleanSchema):
        return Field(kind="boolean", **common)
    if isinstance(schema, NumberSchema):
        return Field(kind=schema.type, minimum=schema.minimum, maximum=schema.maximum, **common)
    if isinstance(schema, StringSchema):
        return Field(
            kind="string", min_length=schema.min_length, max_length=schema.max_length, format=schema.format, **common
        )
    if isinstance(schema, (UntitledMultiSelectEnumSchema, TitledMultiSelectEnumSchema)):
        return Field(
            kind="choices", options=_options(schema), min_items=schema.min_items, max_items=schema.max_items, **common
        )
    return Field(kind="choice", options=_options(schema), **common)


def form_fields(schema: ElicitRequestedSchema) -> list[Field]:
    """The fields of a requested schema, in its order, each knowing whether it is required."""
    required = set(schema.required or ())
    return [_field(name, field, name in required) for name, field in schema.properties.items()]


# ------------------------------------------------------------------ dialogs


class _Cancelled(Exception):
    """The person cancelled (Ctrl-C, end of input)."""


_ACTIONS = {"": "accept", "y": "accept", "yes": "accept", "n": "decline", "no": "decline"}
_ACTIONS |= {"d": "decline", "decline": "decline", "c": "cancel", "cancel": "cancel"}


class PromptDialog:
    """Answers an elicitation by asking a person one line at a time: ``ask(prompt)`` returns a typed line.

    First the server's message and a choice: answer (Enter), decline (``n``)
    or cancel (``c``); then each field, with its title, description and
    default (Enter takes it), asked again until the answer fits. Ctrl-C
    (``KeyboardInterrupt``, or a line with the ``^C`` character) and the end
    of input cancel. A URL-mode elicitation shows the URL; ``o`` opens it in
    the browser (only when typed), Enter says it is done.
    """

    url_mode = True
    """It answers URL-mode elicitations too (the client then declares them)."""

    def __init__(
        self,
        ask: Callable[[str], str],
        say: Callable[[str], None],
        *,
        show_url: Callable[[str], None] | None = None,
        open_url: Callable[[str], object] | None = None,
    ) -> None:
        self.ask = ask
        self.say = say
        self.show_url = show_url
        self.open_url = open_url
        self._one_at_a_time = threading.Lock()

    def __call__(self, params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
        """Ask, one question at a time: two asked at once (from two threads) wait for each other."""
        try:
            with self._one_at_a_time, self.session():
                if isinstance(params, ElicitRequestURLParams):
                    return self._url(params)
                return self._form(params)
        except _Cancelled:
            self.say("Cancelled.")
            return ElicitResult(action="cancel")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Held while the dialog runs (the terminal sets its modes here)."""
        yield

    def _line(self, prompt: str) -> str:
        try:
            line = self.ask(prompt)
        except (KeyboardInterrupt, EOFError):
            raise _Cancelled from None
        if CANCEL in line:
            self.say("")  # the ^C the terminal echoed ends no line
            raise _Cancelled
        return line

    def _choose(self, prompt: str, actions: dict[str, str]) -> str:
        while True:
            action = actions.get(self._line(prompt).strip().lower())
            if action is not None:
                return action
            self.say("  Type one of the letters in brackets.")

    def _form(self, params: ElicitRequestFormParams) -> ElicitResult:
        self.say(f"The server asks: {params.message}")
        action = self._choose("Answer? [Y]es / [n]o, decline / [c]ancel: ", _ACTIONS)
        if action != "accept":
            self.say("Declined." if action == "decline" else "Cancelled.")
            return ElicitResult(action=cast(Action, action))
        content: dict[str, Any] = {}
        for field in form_fields(params.requested_schema):
            for line in field.introduction():
                self.say(line)
            while True:
                try:
                    value = field.parse(self._line(field.prompt()))
                except InvalidAnswer as exc:
                    self.say(f"  {exc}; try again.")
                    continue
                break
            if value is not OMITTED:
                content[field.name] = value
        return ElicitResult(action="accept", content=content)

    def _open(self, url: str) -> None:
        if self.open_url is not None:
            self.open_url(url)
            return
        import webbrowser

        if not webbrowser.open(url):
            self.say(f"  No browser could be opened; open the address by hand: {url}")

    def _url(self, params: ElicitRequestURLParams) -> ElicitResult:
        self.say(f"The server asks: {params.message}")
        if self.show_url is not None:
            self.show_url(params.url)
        else:
            self.say(f"Open this address to go on: {params.url}")
        actions = {"": "accept", "n": "decline", "c": "cancel", "o": "open"}
        while True:
            action = self._choose("Press Enter when done, [o]pen it in the browser, [n]o, decline, [c]ancel: ", actions)
            if action != "open":
                break
            self._open(params.url)
        return ElicitResult(action=cast(Action, action))


class TerminalForm(PromptDialog):
    """A :class:`PromptDialog` on a terminal: it reads ``stdin`` and asks on ``output`` (default: stderr).

    While it reads, Ctrl-C ends the line instead of interrupting the
    program (on a POSIX terminal: the ``ISIG`` mode is off and ``^C`` ends
    a line, so it works in any thread), and is taken as cancel.
    """

    def __init__(self, stdin: TextIO | None = None, output: TextIO | None = None) -> None:
        super().__init__(self._read, self._write)
        self._stdin = stdin
        self._output = output
        self._terminal: int | None = None
        """The descriptor of stdin while it is a terminal in the dialog's modes: read from it line by line."""

    @property
    def stdin(self) -> TextIO:
        """Where the answers are read (default: ``sys.stdin``)."""
        return self._stdin if self._stdin is not None else sys.stdin

    @property
    def output(self) -> TextIO:
        """Where the questions go (default: ``sys.stderr``, so that a command's own output stays clean)."""
        return self._output if self._output is not None else sys.stderr

    def _write(self, text: str) -> None:
        self.output.write(text + "\n")
        self.output.flush()

    def _read(self, prompt: str) -> str:
        self.output.write(prompt)
        self.output.flush()
        line = self.stdin.readline() if self._terminal is None else self._read_terminal(self._terminal)
        if not line:
            raise EOFError
        return line

    def _read_terminal(self, descriptor: int) -> str:
        """One line as the terminal hands it over (it may end with ``^C`` rather than a newline)."""
        import os

        data = b""
        while True:
            chunk = os.read(descriptor, 1024)
            data += chunk
            if not chunk or data.endswith((b"\n", CANCEL.encode())):
                return data.decode(getattr(self.stdin, "encoding", None) or "utf-8", "replace")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Ctrl-C as a line ending (not a signal) while the dialog reads, when stdin is a POSIX terminal."""
        try:
            import termios
        except ImportError:
            yield
            return
        try:
            descriptor = self.stdin.fileno()
            saved = termios.tcgetattr(descriptor)
        except (OSError, ValueError, termios.error):
            yield  # not a terminal: nothing to set
            return
        changed = [*saved[:6], list(saved[6])]
        changed[3] &= ~termios.ISIG
        changed[6][termios.VEOL] = CANCEL.encode()
        termios.tcsetattr(descriptor, termios.TCSANOW, changed)
        self._terminal = descriptor
        try:
            yield
        finally:
            self._terminal = None
            termios.tcsetattr(descriptor, termios.TCSANOW, saved)


class NotebookForm(PromptDialog):
    """An elicitation answered in the cell's output with ``input()`` boxes, one per field (Jupyter supports them).

    See :class:`PromptDialog` for the sequence; a URL-mode elicitation shows
    the URL as a link.
    """

    def __init__(self) -> None:
        super().__init__(_input, print, show_url=show_link)


def _input(prompt: str) -> str:
    return input(prompt)
