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
guesses (that module is loaded when a SKILL.md is first read).

>>> from mcp_sync.protocol.skills import parse_frontmatter
>>> parse_frontmatter("---\\nname: pdf\\ndescription: 'Fill PDFs'\\n---\\nBody\\n")
{'name': 'pdf', 'description': 'Fill PDFs'}
>>> sha256_digest(b"")[:15]
'sha256:e3b0c442'
"""

import hashlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .frontmatter import parse_frontmatter
    from .skill_models import (
        GetSkillRequestParams,
        GetSkillResult,
        ListSkillsRequestParams,
        ListSkillsResult,
        ReadDirectoryRequestParams,
        ReadDirectoryResult,
        SkillEntry,
        SkillFile,
    )

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

# A pattern, not a compiled one: ``re`` compiles it at the first name checked (compiling it cost more at
# import than the rest of this module), then keeps it.
_NAME = r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$"


def sha256_digest(data: bytes) -> str:
    """The digest of ``data`` as the extension writes it: ``sha256:`` and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def valid_skill_name(name: str) -> bool:
    """Whether ``name`` follows the Agent Skills naming rules (1-64 of ``a-z0-9-``, no edge or double hyphen).

    >>> valid_skill_name("pdf-processing"), valid_skill_name("PDF"), valid_skill_name("a--b")
    (True, False, False)
    """
    return re.match(_NAME, name) is not None


MODELS = frozenset(name for name in __all__ if name[0].isupper() and not name.isupper())
"""The extension's wire models (the CamelCase names of ``__all__``), defined in :mod:`.skill_models` and loaded the
first time one is named here."""


def __getattr__(name: str) -> Any:
    """The wire models (see :data:`MODELS`) and ``parse_frontmatter`` (from :mod:`.frontmatter`), loaded when first
    named: a client that never lists a skill, or a server that serves none, builds none of them."""
    if name == "parse_frontmatter":
        from .frontmatter import parse_frontmatter

        return parse_frontmatter
    if name not in MODELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import skill_models

    value = getattr(skill_models, name)
    globals()[name] = value
    return value
