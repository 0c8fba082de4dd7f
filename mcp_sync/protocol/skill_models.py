"""The wire models of the skills extension (``io.modelcontextprotocol/skills``); import them from
:mod:`mcp_sync.protocol.skills`, which loads this module the first time one is named.
"""

from typing import Any, Literal

from .types import PaginatedRequestParams, Resource, WireModel

__all__ = [
    "GetSkillRequestParams",
    "GetSkillResult",
    "ListSkillsRequestParams",
    "ListSkillsResult",
    "ReadDirectoryRequestParams",
    "ReadDirectoryResult",
    "SkillEntry",
    "SkillFile",
]


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
