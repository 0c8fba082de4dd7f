"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640): its wire models and SKILL.md frontmatter.

A server that declares the extension (an empty settings object under
``capabilities.extensions``) answers ``skills/list`` (paginated, a
``skills`` array) and ``skills/get`` (``{"uri"}`` in, ``{"skill"}`` out,
``-32602`` for a URI it does not serve). Each skill entry names the skill's
``SKILL.md`` (``uri``), carries that file's YAML frontmatter as a JSON
object (``frontmatter``, at least ``name`` and ``description``), and lists
every file of the skill once (``resources``: ``{uri, digest, size}``, the
digest ``sha256:`` and 64 lowercase hex digits over the raw bytes). The
files themselves are resources, read with ``resources/read``.

Frontmatter is read with the YAML subset of :mod:`.frontmatter`, so that no
YAML library is needed: what it does not understand it refuses rather than
guesses.

>>> parse_frontmatter("---\\nname: pdf\\ndescription: 'Fill PDFs'\\n---\\nBody\\n")
{'name': 'pdf', 'description': 'Fill PDFs'}
>>> sha256_digest(b"")[:15]
'sha256:e3b0c442'
"""

import hashlib
import re
from typing import Any, Literal

from .frontmatter import parse_frontmatter
from .types import PaginatedRequestParams, Resource, WireModel

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "EXTENSION",
    "MAX_RESOURCES",
    "MAX_TOTAL_SIZE",
    "GetSkillRequestParams",
    "GetSkillResult",
    "ListSkillsRequestParams",
    "ListSkillsResult",
    "ReadDirectoryRequestParams",
    "ReadDirectoryResult",
    "SkillEntry",
    "SkillFile",
    "parse_frontmatter",
    "sha256_digest",
    "valid_skill_name",
]

EXTENSION = "io.modelcontextprotocol/skills"
"""The extension's identifier under ``capabilities.extensions``."""
DIRECTORY_MIME_TYPE = "inode/directory"
"""The MIME type of a directory among ``resources/directory/read``'s children."""
MAX_RESOURCES = 512
"""Servers should not serve a skill of more files than this (SKILL.md included)."""
MAX_TOTAL_SIZE = 16 * 1024 * 1024
"""Servers should not serve a skill whose files add up to more bytes than this (16 MiB)."""

_NAME = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")


class SkillFile(WireModel):
    """One file of a skill: its resource URI, ``sha256:`` digest and size in bytes."""

    uri: str
    digest: str
    size: int


class SkillEntry(WireModel):
    """A skill as ``skills/list`` and ``skills/get`` describe it.

    ``resources`` is every file of the skill (its SKILL.md included), or
    ``"dynamic"`` when the server publishes no manifest.
    """

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillFile] | Literal["dynamic"]

    @property
    def name(self) -> str:
        """The skill's name (its frontmatter ``name``)."""
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        """What the skill does (its frontmatter ``description``)."""
        return str(self.frontmatter.get("description", ""))


class ListSkillsRequestParams(PaginatedRequestParams):
    """``skills/list``: an optional cursor."""


class ListSkillsResult(WireModel):
    """``skills/list``: a page of skills and the cursor of the next one."""

    skills: list[SkillEntry]
    next_cursor: str | None = None


class GetSkillRequestParams(WireModel):
    """``skills/get``: the URI of a skill's SKILL.md."""

    uri: str


class GetSkillResult(WireModel):
    """``skills/get``: the one skill's entry."""

    skill: SkillEntry


class ReadDirectoryRequestParams(PaginatedRequestParams):
    """``resources/directory/read``: the URI of a directory, and an optional cursor."""

    uri: str


class ReadDirectoryResult(WireModel):
    """``resources/directory/read``: a page of the directory's direct children, and the next page's cursor."""

    resources: list[Resource]
    next_cursor: str | None = None


def sha256_digest(data: bytes) -> str:
    """The digest of ``data`` as the extension writes it: ``sha256:`` and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def valid_skill_name(name: str) -> bool:
    """Whether ``name`` follows the Agent Skills naming rules (1-64 of ``a-z0-9-``, no edge or double hyphen).

    >>> valid_skill_name("pdf-processing"), valid_skill_name("PDF"), valid_skill_name("a--b")
    (True, False, False)
    """
    return _NAME.match(name) is not None
