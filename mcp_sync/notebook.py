"""Compatibility path for the display helpers (:mod:`mcp_sync.display`); ``%load_ext mcp_sync.notebook`` works."""

from .display.ipython import enable_rich_display, load_ipython_extension
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

__all__ = [
    "ProgressBar",
    "call_tool_result_html",
    "call_tool_result_text",
    "content_text",
    "enable_rich_display",
    "get_prompt_result_html",
    "get_prompt_result_text",
    "load_ipython_extension",
    "read_resource_result_html",
    "read_resource_result_text",
    "resource_contents_text",
    "tools_html",
    "tools_text",
]
