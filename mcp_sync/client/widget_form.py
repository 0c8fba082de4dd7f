"""An elicitation answered with a form of ipywidgets in the cell's output, while the cell waits for it.

A cell that calls a tool is still running while the server asks: the
kernel's main thread is busy, and the widget messages of the browser would
wait behind it. The form therefore has its widgets' messages handled on a
kernel *subshell* of its own (ipykernel 7.4 and later), created for the form
and removed after it. :func:`notebook_form` picks this form when ipywidgets
is installed and the kernel can route widget messages so, and
:class:`~mcp_sync.client.forms.NotebookForm` (``input()`` boxes) otherwise.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
from collections.abc import Callable, Iterator
from html import escape
from typing import Any, Literal

from ..display.ipython import Link, display, running_shell
from ..protocol.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult
from .forms import OMITTED, Field, InvalidAnswer, NotebookForm, PromptDialog, form_fields

__all__ = [
    "FormView",
    "WidgetForm",
    "notebook_form",
    "routing_kernel",
]

Action = Literal["accept", "decline", "cancel"]

_SETTLED = {"accept": "Answered.", "decline": "Declined.", "cancel": "Cancelled."}
"""What the form says once settled."""

ROUTING_TIMEOUT = 30.0
"""Seconds allowed for the kernel to create or remove the form's subshell."""


def _widgets() -> Any:
    return importlib.import_module("ipywidgets")


def routing_kernel(shell: Any = None) -> Any:
    """The running kernel when it can handle a widget's messages on a subshell while a cell runs, else ``None``."""
    shell = shell if shell is not None else running_shell()
    kernel = getattr(shell, "kernel", None)
    if getattr(kernel, "shell_channel_thread", None) is None:
        return None
    comm = importlib.import_module("ipykernel.comm.comm")
    return kernel if hasattr(comm.BaseComm, "_reply_subshell_for") else None


def notebook_form(shell: Any = None) -> WidgetForm | PromptDialog:
    """The notebook's elicitation provider: widgets when installed and the kernel allows, else ``input()``."""
    try:
        _widgets()
    except ImportError:
        return NotebookForm()
    kernel = routing_kernel(shell)
    return WidgetForm(kernel) if kernel is not None else NotebookForm()


class FormView:
    """The widgets of one elicitation: a field each, the message, an error line and Accept / Decline / Cancel.

    :attr:`result` is set when a button settles the form; Accept settles it
    only when every field fits (else the error line says what does not).
    """

    def __init__(self, params: ElicitRequestFormParams | ElicitRequestURLParams) -> None:
        widgets = _widgets()
        self.params = params
        self.result: concurrent.futures.Future[ElicitResult] = concurrent.futures.Future()
        self.fields: list[tuple[Field, Any]] = []
        rows: list[Any] = [widgets.HTML(f"<b>{escape(params.message)}</b>")]
        if isinstance(params, ElicitRequestURLParams):
            rows.append(widgets.HTML(Link(params.url)._repr_html_()))
            accept = "Done"
        else:
            accept = "Accept"
            for field in form_fields(params.requested_schema):
                widget = _field_widget(widgets, field)
                self.fields.append((field, widget))
                rows.append(widget)
                if field.description:
                    rows.append(widgets.HTML(f"<small>{escape(field.description)}</small>"))
        self.error = widgets.HTML("")
        self.buttons = {
            "accept": widgets.Button(description=accept, button_style="primary"),
            "decline": widgets.Button(description="Decline"),
            "cancel": widgets.Button(description="Cancel"),
        }
        for action, button in self.buttons.items():
            button.on_click(lambda _, action=action: self.settle(action))
        rows += [self.error, widgets.HBox(list(self.buttons.values()))]
        self.box = widgets.VBox(rows)

    def widgets(self) -> Iterator[Any]:
        """Every widget of the form (the ones the browser sends messages for)."""
        yield from self.box.children
        yield from self.buttons.values()
        yield self.box

    def content(self) -> dict[str, Any]:
        """The answers as the schema asks for them; :class:`InvalidAnswer` names the first field that does not fit."""
        content: dict[str, Any] = {}
        for field, widget in self.fields:
            try:
                value = field.parse(widget.value) if isinstance(widget.value, str) else field.check(widget.value)
            except InvalidAnswer as exc:
                raise InvalidAnswer(f"{field.label}: {exc}") from None
            if value is not OMITTED:
                content[field.name] = value
        return content

    def settle(self, action: Action) -> None:
        """What a button does: Accept checks the fields first; the first settled answer counts."""
        if self.result.done():
            return
        if action != "accept" or isinstance(self.params, ElicitRequestURLParams):
            self.result.set_result(ElicitResult(action=action))
            return
        try:
            content = self.content()
        except InvalidAnswer as exc:
            self.error.value = f'<span style="color: #c62828">{escape(str(exc))}</span>'
            return
        self.result.set_result(ElicitResult(action="accept", content=content))

    def close(self, result: ElicitResult) -> None:
        """Disable the form and say how it was answered."""
        for widget in self.box.children:
            if hasattr(widget, "disabled"):
                widget.disabled = True
        for button in self.buttons.values():
            button.disabled = True
        self.error.value = f"<i>{_SETTLED[result.action]}</i>"


def _field_widget(widgets: Any, field: Field) -> Any:
    label = field.label + (" *" if field.required else "")
    common = {"description": label, "style": {"description_width": "initial"}}
    if field.kind == "boolean":
        return widgets.Checkbox(value=bool(field.default), indent=False, **common)
    if field.kind == "choice":
        options: list[tuple[str, str | None]] = [("", None)] if field.default is None else []
        options += [(text, value) for value, text in field.options]
        return widgets.Dropdown(options=options, value=field.default, **common)
    if field.kind == "choices":
        choices = [(text, value) for value, text in field.options]
        return widgets.SelectMultiple(options=choices, value=tuple(field.default or ()), **common)
    return widgets.Text(value=field.default_text() or "", placeholder=field.hint(), **common)


class WidgetForm:
    """An elicitation provider that shows a :class:`FormView` in the running cell and waits for its answer.

    ``kernel`` (from :func:`routing_kernel`) has the form's widget messages
    handled on a subshell of their own while the cell runs; without it (no
    kernel) the widgets are shown as they are. ``timeout`` bounds the wait
    (``None``: no limit); past it, or if the wait is interrupted, the
    answer is cancel.
    """

    url_mode = True
    """It answers URL-mode elicitations too: a link and Done / Decline / Cancel."""

    def __init__(
        self, kernel: Any = None, *, timeout: float | None = None, show: Callable[[Any], None] = display
    ) -> None:
        self.kernel = kernel
        self.timeout = timeout
        self.show = show

    def __call__(self, params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
        view = FormView(params)
        with _routed(self.kernel, list(view.widgets())):
            self.show(view.box)
            try:
                result = view.result.result(self.timeout)
            except (KeyboardInterrupt, concurrent.futures.TimeoutError):
                result = ElicitResult(action="cancel")
        view.close(result)
        return result


def _on_channel_thread(kernel: Any, work: Callable[[], Any]) -> Any:
    """Run ``work`` on the kernel's shell channel thread (where subshells are made) and return what it returns."""
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:
            done.set_exception(exc)

    kernel.shell_channel_thread.io_loop.add_callback(run)
    return done.result(ROUTING_TIMEOUT)


@contextlib.contextmanager
def _routed(kernel: Any, widgets: list[Any]) -> Iterator[None]:
    """While inside, the browser's messages for ``widgets`` are handled on a subshell of ``kernel`` (if any)."""
    if kernel is None:
        yield
        return
    manager = kernel.shell_channel_thread.manager
    subshell = _on_channel_thread(kernel, manager._create_subshell)
    for widget in widgets:
        comm = getattr(widget, "comm", None)
        if comm is not None:
            comm._reply_subshell_for = lambda data, default, subshell=subshell: subshell
    try:
        yield
    finally:
        for widget in widgets:
            comm = getattr(widget, "comm", None)
            if comm is not None:
                comm.__dict__.pop("_reply_subshell_for", None)
        _on_channel_thread(kernel, lambda: manager._delete_subshell(subshell))
