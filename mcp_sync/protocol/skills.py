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

Frontmatter is read here with a deliberately small YAML subset (see
:func:`parse_frontmatter`), so that no YAML library is needed: what it does
not understand it refuses rather than guesses.

>>> parse_frontmatter("---\\nname: pdf\\ndescription: 'Fill PDFs'\\n---\\nBody\\n")
{'name': 'pdf', 'description': 'Fill PDFs'}
>>> sha256_digest(b"")[:15]
'sha256:e3b0c442'
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

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
_FRONTMATTER = re.compile(r"^---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
_KEY = re.compile(r"^([A-Za-z0-9_.\-/]+):(?:[ \t]+(.*))?$")
_NOT_A_STRING = re.compile(r"^(?:true|false|yes|no|on|off|null|~|[-+]?[0-9.][0-9_.:eE+\-]*)$", re.IGNORECASE)


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


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter at the start of a SKILL.md, as a dict; ``ValueError`` when missing or not understood.

    The subset read: ``key: value`` lines whose value is a plain, single- or
    double-quoted string, and ``key:`` followed by indented ``key: value``
    lines (one level, for ``metadata``); blank lines and ``#`` comments. A
    plain value YAML would read as something else than a string (a number,
    a boolean, null) is refused: quote it.

    >>> parse_frontmatter("---\\nname: x\\nmetadata:\\n  author: me\\n---\\n")
    {'name': 'x', 'metadata': {'author': 'me'}}
    """
    found = _FRONTMATTER.match(text.removeprefix("\ufeff"))
    if found is None:
        raise ValueError("no frontmatter: SKILL.md must begin with a --- delimited YAML block")
    result: dict[str, Any] = {}
    nested: dict[str, Any] | None = None
    for number, line in enumerate(found.group(1).splitlines(), start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indented = line[0] in " \t"
        key, value = _key_value(stripped, number)
        if indented:
            if nested is None:
                raise ValueError(f"frontmatter line {number}: indented with no mapping to belong to")
            if value is None:
                raise ValueError(f"frontmatter line {number}: only one level of nesting is understood")
            nested[key] = value
            continue
        if key in result:
            raise ValueError(f"frontmatter line {number}: {key!r} is given twice")
        if value is None:
            nested = result[key] = {}
        else:
            nested = None
            result[key] = value
    return result


def _key_value(line: str, number: int) -> tuple[str, str | None]:
    """``(key, value)`` of a ``key: value`` line; ``value`` is ``None`` when it opens a mapping."""
    found = _KEY.match(line)
    if found is None:
        raise ValueError(f"frontmatter line {number}: not a 'key: value' line")
    key, raw = found.group(1), (found.group(2) or "").strip()
    if not raw:
        return key, None
    if raw[0] == '"':
        try:
            value: str = json.loads(raw)  # a JSON text that starts with a quote is a string, or no JSON
        except ValueError as exc:
            raise ValueError(f"frontmatter line {number}: bad double-quoted string") from exc
        return key, value
    if raw[0] == "'":
        if len(raw) < 2 or raw[-1] != "'" or "'" in raw[1:-1].replace("''", ""):
            raise ValueError(f"frontmatter line {number}: bad single-quoted string")
        return key, raw[1:-1].replace("''", "'")
    if raw[0] in "[{&*!|>%@`" or " #" in raw or ": " in raw or _NOT_A_STRING.match(raw):
        raise ValueError(f"frontmatter line {number}: {raw!r} is not a plain string (quote it)")
    return key, raw
