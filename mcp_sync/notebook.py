"""Compatibility path for the display helpers (:mod:`mcp_sync.display`); ``%load_ext mcp_sync.notebook`` works.

Also the notebook's answers to the server's questions: :func:`notebook_form`
(the default elicitation provider in a Jupyter kernel: a :class:`WidgetForm`
with ipywidgets, else a :class:`NotebookForm` of ``input()`` boxes) and
:func:`show_log` (the default log handler there).
"""

from .display.ipython import NotebookForm, enable_rich_display, in_notebook, load_ipython_extension, show_log
from .display.progress import ProgressBar
from .display.render import (
    call_tool_result_html,
    call_tool_result_text,
    content_text,
    get_prompt_result_html,
    get_prompt_result_text,
    read_resource_result_html,
    read_resource_result_text,
    resource_contents_text,
    tools_html,
    tools_text,
)
from .display.widgets import WidgetForm, notebook_form

__all__ = [
    "NotebookForm",
    "ProgressBar",
    "WidgetForm",
    "call_tool_result_html",
    "call_tool_result_text",
    "content_text",
    "enable_rich_display",
    "get_prompt_result_html",
    "get_prompt_result_text",
    "in_notebook",
    "load_ipython_extension",
    "notebook_form",
    "read_resource_result_html",
    "read_resource_result_text",
    "resource_contents_text",
    "show_log",
    "tools_html",
    "tools_text",
]
