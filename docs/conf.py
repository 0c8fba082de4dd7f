"""Sphinx configuration of the mcp_sync documentation.

Build (offline: no inventory nor asset is downloaded)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]  # this checkout's mcp_sync, and the local extensions

import mcp_sync  # noqa: E402

project = "mcp_sync"
author = "the mcp_sync authors"
copyright = "the mcp_sync authors"
release = version = mcp_sync.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
    "public_api",
    "llms_txt",
]
exclude_patterns = ["_build", "_ext", "conftest.py"]
root_doc = "index"

# A cross-reference that finds nothing warns (and -W fails the build) when a page wrote it; the extension
# public_api lets the references of docstrings and signatures to private names be plain text. Names of the
# standard library and of the dependencies have no inventory here (offline): they are plain text too.
nitpicky = True
# Type hints shortened by autodoc may match two public names (the client's and the server's SamplingProvider).
suppress_warnings = ["ref.python"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_default_options = {"exclude-members": "model_config, model_fields, model_computed_fields"}

html_theme = "furo"
html_title = f"mcp_sync {release}"
html_static_path: list[str] = []
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

llms_txt_summary = (
    "A synchronous, thread-based Model Context Protocol (MCP) client and server for Python code that is not async: "
    "notebooks, Flask and Django apps, CLIs, scripts and pytest fixtures."
)
