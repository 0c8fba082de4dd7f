"""Writes ``llms.txt`` and ``llms-full.txt`` beside the built HTML, from the pages as Sphinx read them.

``llms.txt`` follows https://llmstxt.org: the project's name, a one-line
summary, then one link per page (in the order of the navigation) with the
page's first sentence. ``llms-full.txt`` is the text of every page, in the
same order, the reference included (autodoc's output, not its directives).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx


def pages_in_order(app: Sphinx) -> list[str]:
    """The documents in the order a reader meets them: depth first through the toctrees from the root."""
    includes = app.env.toctree_includes
    order: list[str] = []

    def visit(docname: str) -> None:
        if docname in order:
            return
        order.append(docname)
        for child in includes.get(docname, []):
            visit(child)

    visit(app.config.root_doc)
    return order


def first_sentence(doctree: nodes.document) -> str:
    for paragraph in doctree.findall(nodes.paragraph):
        text = " ".join(paragraph.astext().split())
        if text:
            return text.split(". ")[0].rstrip(".") + "."
    return ""


def write_llms_txt(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    index = [f"# {app.config.project}", "", f"> {app.config.llms_txt_summary}", ""]
    full: list[str] = []
    for docname in pages_in_order(app):
        doctree = app.env.get_and_resolve_doctree(docname, app.builder)
        title = app.env.titles[docname].astext()
        url = app.builder.get_target_uri(docname)
        index.append(f"- [{title}]({url}): {first_sentence(doctree)}")
        full += [f"# {title}", f"Source: {url}", "", doctree.astext().strip(), ""]
    (out / "llms.txt").write_text("\n".join(index) + "\n", encoding="utf-8")
    (out / "llms-full.txt").write_text("\n".join(full), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("llms_txt_summary", "", "html")
    app.connect("build-finished", write_llms_txt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
