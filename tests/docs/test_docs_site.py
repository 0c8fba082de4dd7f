"""The documentation site: it builds offline without a warning, every public name and page is in it, llms.txt too.

One Sphinx build (a subprocess, as ``docs/conf.py`` documents it) serves the tests of the built site; a broken
link is shown to fail a build of a small page set with the same configuration.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import public_api  # noqa: E402  (docs/_ext: the one rule of what is public)

BUILD_TIMEOUT = 300
# The whole site's build (about 35 s on two idle cores) is in the setup of the first test that asks for it.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 60)

# The pages the site must have (issue 30): each exists and is reached from the navigation.
PAGES = [
    "getting-started",
    "guides/notebooks",
    "guides/web-apps",
    "guides/shell",
    "guides/testing",
    "guides/servers",
    "guides/clients",
    "guides/revisions",
    "guides/auth",
    "guides/scale-out",
    "guides/proxies",
    "guides/observability",
    "guides/llm",
    "guides/apps",
    "guides/migrating",
    "troubleshooting",
    "performance",
    "reference/index",
    "changelog",
    "contributing",
]


def sphinx_build(source: Path, out: Path, *confdir: str) -> subprocess.CompletedProcess[str]:
    """``python -m sphinx -W --keep-going -b html``, offline: any download would go to a proxy that is not there."""
    dead_proxy = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": dead_proxy, "HTTPS_PROXY": dead_proxy, "http_proxy": dead_proxy}
    env |= {"https_proxy": dead_proxy, "NO_PROXY": "", "no_proxy": "", "PYTHONPATH": str(ROOT)}
    build = ["-W", "--keep-going", "-q", "-b", "html", *confdir, str(source), str(out)]
    return subprocess.run(
        [sys.executable, "-m", "sphinx", *build],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("site")
    result = sphinx_build(DOCS, out)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    yield out


def test_the_site_builds_offline_without_a_warning(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "reference" / "client.html").is_file()


def test_a_broken_internal_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "index.rst").write_text(
        "Home\n====\n\n.. toctree::\n\n   other\n\n:doc:`missing-page` and :ref:`missing-anchor`.\n", encoding="utf-8"
    )
    (source / "other.rst").write_text(
        ".. _present:\n\nOther\n=====\n\n:ref:`present` and :class:`mcp_sync.NoSuchThing`.\n", encoding="utf-8"
    )
    result = sphinx_build(source, tmp_path / "out", "-c", str(DOCS))
    assert result.returncode != 0
    assert "unknown document: 'missing-page'" in result.stderr
    assert "undefined label: 'missing-anchor'" in result.stderr
    assert "mcp_sync.NoSuchThing" in result.stderr  # a page's reference to nothing documented
    assert "present" not in result.stderr.replace("missing", "")


def reference_pages() -> dict[str, str]:
    """Public module -> the reference page (``docs/reference/NAME``) whose ``public-api`` directive documents it."""
    pages = {}
    for page in sorted((DOCS / "reference").glob("*.rst")):
        for module in re.findall(r"^\.\. public-api:: (\S+)$", page.read_text(encoding="utf-8"), re.MULTILINE):
            pages[module] = page.stem
    return pages


def test_every_public_name_has_a_reference_entry(site: Path) -> None:
    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, uri: uri)
    documented = {name for role, entries in inventory.items() if role.startswith("py:") for name in entries}
    pages = reference_pages()
    assert set(public_api.PUBLIC_MODULES) <= set(pages), "every public module has its reference page"
    missing, unlisted = [], []
    for module in public_api.PUBLIC_MODULES:
        html = (site / "reference" / f"{pages[module]}.html").read_text(encoding="utf-8")
        for name in public_api.public_names(module):
            if public_api.home(module, name) not in documented:
                missing.append(f"{module}.{name}")
            if f'<span class="pre">{name}</span>' not in html and f">{name}<" not in html:
                unlisted.append(f"{module}.{name}")
    assert not missing, f"public names without a reference entry: {missing}"
    assert not unlisted, f"public names not shown on their module's page: {unlisted}"
    assert "mcp_sync.client.MCPClient" in documented and "mcp_sync.types.CallToolResult" in documented


def test_every_page_exists_and_is_in_the_navigation(site: Path) -> None:
    for page in PAGES:
        assert (DOCS / f"{page}.rst").is_file(), page
    # llms.txt lists the pages by walking the toctrees from the index: the navigation's reach.
    linked = re.findall(r"^- \[.*?\]\((\S+)\.html\)", (site / "llms.txt").read_text(encoding="utf-8"), re.MULTILINE)
    assert set(PAGES) <= set(linked), sorted(set(PAGES) - set(linked))


def test_llms_txt_and_its_full_text_are_produced(site: Path) -> None:
    index = (site / "llms.txt").read_text(encoding="utf-8")
    assert index.startswith("# mcp_sync\n\n> A synchronous, thread-based Model Context Protocol")
    assert "- [Getting started](getting-started.html): mcp_sync needs Python 3.11 or newer." in index
    full = (site / "llms-full.txt").read_text(encoding="utf-8")
    assert "# In tests: the pytest fixtures\nSource: guides/testing.html" in full
    assert "Start a server process and connect to it over stdio." in full  # a docstring, from the reference


def test_read_the_docs_builds_the_same_site_with_the_docs_extra() -> None:
    import yaml  # (the redis extra's pyyaml, in the test extra)

    config = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text(encoding="utf-8"))
    assert config["version"] == 2
    assert config["sphinx"] == {"configuration": "docs/conf.py", "fail_on_warning": True}
    assert config["python"]["install"] == [{"method": "pip", "path": ".", "extra_requirements": ["docs"]}]
