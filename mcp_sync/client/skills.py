"""Use a server's Agent Skills through the skills extension (``io.modelcontextprotocol/skills``, SEP-2640).

The functions behind :meth:`MCPClient.list_skills <mcp_sync.client.core.MCPClient.list_skills>`,
:meth:`~mcp_sync.client.core.MCPClient.get_skill`,
:meth:`~mcp_sync.client.core.MCPClient.load_skill` and
:meth:`~mcp_sync.client.core.MCPClient.read_skill_file`. Listing reads no
file: a skill's files are read only when it is loaded (its SKILL.md) or when
one of them is asked for. Every file read is checked against the skill's
entry before it is returned: its declared size is refused beforehand when
over the caller's bound, and the bytes read must have the entry's size and
``sha256`` digest. A loaded SKILL.md's frontmatter must equal the entry's,
field by field. Any mismatch raises :class:`SkillVerificationError` and the
content is not returned.

>>> from mcp_sync.protocol.skills import SkillFile, sha256_digest
>>> try:
...     verified(SkillFile(uri="skill://a/SKILL.md", digest=sha256_digest(b"x"), size=1), b"y")
... except SkillVerificationError as error:
...     print(error.message[:38])
skill://a/SKILL.md: digest mismatch: r
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..protocol import types as models
from ..protocol.errors import MCP_CODES, MCPError, MCPProtocolError
from ..protocol.skills import EXTENSION, MAX_TOTAL_SIZE, sha256_digest
from ..protocol.types import PaginatedRequestParams
from ..runtime.dispatcher import USE_DEFAULT, Timeout

if TYPE_CHECKING:
    from ..protocol.skills import (
        ListSkillsResult,
        ReadDirectoryResult,
        SkillEntry,
        SkillFile,
    )
    from .core import MCPClient

__all__ = [
    "MAX_PAGES",
    "LoadedSkill",
    "SkillMethods",
    "SkillVerificationError",
    "get_skill",
    "list_skills",
    "load_skill",
    "read_skill_file",
    "verified",
]

MAX_PAGES = 100
"""The most pages of ``skills/list`` a listing follows before it gives up."""


class SkillVerificationError(MCPProtocolError):
    """A skill's file, or its entry, is not what the server declared: nothing of it is used.

    Its code is ``PROTOCOL_INVALID``; ``context["uri"]`` names the file.

    >>> SkillVerificationError(MCP_CODES.PROTOCOL_INVALID, "skill://a/SKILL.md: size mismatch").code
    'MCP.PROTOCOL_INVALID'
    """


def _refused(uri: str, message: str) -> SkillVerificationError:
    """The error refusing the file ``uri``: ``message`` says why."""
    return SkillVerificationError(MCP_CODES.PROTOCOL_INVALID, message, context={"uri": uri})


@dataclass(frozen=True)
class LoadedSkill:
    """A skill whose SKILL.md was read and verified: its entry, that file's text and its frontmatter."""

    entry: SkillEntry
    text: str
    frontmatter: dict[str, Any]

    @property
    def name(self) -> str:
        """The skill's name."""
        return self.entry.name

    def files(self) -> list[str]:
        """The URIs of the skill's other files (none known when its resources are ``"dynamic"``)."""
        listed = self.entry.resources
        return [] if isinstance(listed, str) else [file.uri for file in listed if file.uri != self.entry.uri]


def _require_extension(client: MCPClient) -> None:
    extensions = client.server_capabilities.extensions or {}
    if EXTENSION not in extensions:
        raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"the server does not declare the {EXTENSION} extension")


def list_skills(client: MCPClient, *, timeout: Timeout = USE_DEFAULT) -> list[SkillEntry]:
    """Every skill the server lists (``skills/list``, each page in turn); no file is read."""
    from ..protocol.skills import ListSkillsRequestParams, ListSkillsResult  # the models: loaded when first used

    _require_extension(client)
    return _every_page(
        client, "skills/list", lambda cursor: ListSkillsRequestParams(cursor=cursor), ListSkillsResult, timeout
    )


def read_directory(client: MCPClient, uri: str, *, timeout: Timeout = USE_DEFAULT) -> list[models.Resource]:
    """The direct children of the directory ``uri`` (``resources/directory/read``, each page in turn).

    The server must declare ``directoryRead`` in the extension's settings;
    a subdirectory is a child whose ``mime_type`` is :data:`DIRECTORY_MIME_TYPE`.
    """
    from ..protocol.skills import ReadDirectoryRequestParams, ReadDirectoryResult

    _require_extension(client)
    settings = (client.server_capabilities.extensions or {})[EXTENSION]
    if not isinstance(settings, dict) or settings.get("directoryRead") is not True:
        raise MCPError(MCP_CODES.METHOD_NOT_FOUND, f"the server does not declare directoryRead for {EXTENSION}")
    return _every_page(
        client,
        "resources/directory/read",
        lambda cursor: ReadDirectoryRequestParams(uri=uri, cursor=cursor),
        ReadDirectoryResult,
        timeout,
    )


def _every_page(
    client: MCPClient,
    method: str,
    params: Callable[[str | None], PaginatedRequestParams],
    result_type: type[ListSkillsResult] | type[ReadDirectoryResult],
    timeout: Timeout,
) -> list[Any]:
    """The items of every page of a paginated ``method``, following ``nextCursor`` for up to :data:`MAX_PAGES` pages.

    A cursor given twice would loop for ever: it is refused at once, named.
    """
    from ..protocol.skills import ListSkillsResult

    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = client.send_request(method, params(cursor), result_type, timeout)
        items.extend(page.skills if isinstance(page, ListSkillsResult) else page.resources)
        cursor = page.next_cursor
        if not cursor:
            return items
        if cursor in seen:
            raise MCPProtocolError(
                MCP_CODES.PROTOCOL_INVALID,
                f"the server repeated the cursor {cursor!r} while listing {method}",
                context={"method": method},
            )
        seen.add(cursor)
    raise MCPError(MCP_CODES.PROTOCOL_INVALID, f"{method} did not end within {MAX_PAGES} pages")


def get_skill(client: MCPClient, uri: str, *, timeout: Timeout = USE_DEFAULT) -> SkillEntry:
    """The entry of the skill whose SKILL.md is ``uri`` (``skills/get``); no file is read."""
    from ..protocol.skills import GetSkillRequestParams, GetSkillResult

    _require_extension(client)
    return client.send_request("skills/get", GetSkillRequestParams(uri=uri), GetSkillResult, timeout).skill


def load_skill(
    client: MCPClient, skill: SkillEntry | str, *, max_size: int = MAX_TOTAL_SIZE, timeout: Timeout = USE_DEFAULT
) -> LoadedSkill:
    """Read and verify a skill's SKILL.md (an entry, or the URI to ``skills/get`` it by).

    A skill whose listed files add up to more than ``max_size`` bytes is
    refused before anything is read; the SKILL.md read must then match its
    entry in size and digest, and its frontmatter must equal the entry's.
    """
    from ..protocol.frontmatter import parse_frontmatter  # loaded when a SKILL.md is first read
    from ..protocol.skills import SkillEntry

    entry = skill if isinstance(skill, SkillEntry) else get_skill(client, skill, timeout=timeout)
    if not isinstance(entry.resources, str):
        total = sum(file.size for file in entry.resources)
        if total > max_size:
            raise _too_big(entry.uri, total, max_size)
    data = read_skill_file(client, entry, entry.uri, max_size=max_size, timeout=timeout)
    try:
        text = data.decode("utf-8")
        frontmatter = parse_frontmatter(text)
    except ValueError as exc:
        raise _refused(entry.uri, f"{entry.uri}: unreadable frontmatter: {exc}") from exc
    if frontmatter != entry.frontmatter:
        fields = {*frontmatter, *entry.frontmatter}
        differ = sorted(key for key in fields if frontmatter.get(key) != entry.frontmatter.get(key))
        raise _refused(entry.uri, f"{entry.uri}: frontmatter differs from the skill's entry in {', '.join(differ)}")
    return LoadedSkill(entry, text, frontmatter)


def read_skill_file(
    client: MCPClient, entry: SkillEntry, uri: str, *, max_size: int = MAX_TOTAL_SIZE, timeout: Timeout = USE_DEFAULT
) -> bytes:
    """The verified bytes of the file ``uri`` of the skill ``entry`` (``resources/read``).

    A file the entry does not list, or lists as more than ``max_size``
    bytes, is refused without a read. When the entry's resources are
    ``"dynamic"`` (no manifest to check against) only files within the
    skill's directory are read, and only ``max_size`` bytes are accepted.
    """
    listed = entry.resources
    if isinstance(listed, str):
        if uri != entry.uri and not uri.startswith(entry.uri.rpartition("/")[0] + "/"):
            raise _refused(uri, f"{uri} is not within the skill {entry.uri}")
        data = _content(client.read_resource(uri, timeout=timeout), uri)
        if len(data) > max_size:
            raise _too_big(uri, len(data), max_size)
        return data
    record = next((file for file in listed if file.uri == uri), None)
    if record is None:
        raise _refused(uri, f"{uri} is not a file of {entry.uri}")
    if record.size > max_size:
        raise _too_big(uri, record.size, max_size)
    return verified(record, _content(client.read_resource(uri, timeout=timeout), uri))


def _too_big(uri: str, size: int, max_size: int) -> SkillVerificationError:
    return _refused(uri, f"{uri}: {size} bytes, more than the {max_size} allowed")


def verified(record: SkillFile, data: bytes) -> bytes:
    """``data`` when it has the size and digest ``record`` lists; :class:`SkillVerificationError` otherwise."""
    uri = record.uri
    if len(data) != record.size:
        raise _refused(uri, f"{uri}: size mismatch: {len(data)} bytes read, {record.size} listed")
    digest = sha256_digest(data)
    if digest != record.digest:
        raise _refused(uri, f"{uri}: digest mismatch: read {digest}, listed {record.digest}")
    return data


def _content(result: models.ReadResourceResult, uri: str) -> bytes:
    """The raw bytes of a read: its one content, text as UTF-8 or a base64 blob decoded."""
    if len(result.contents) != 1:
        raise _refused(uri, f"{uri}: {len(result.contents)} contents read, not one")
    content = result.contents[0]
    if isinstance(content, models.BlobResourceContents):
        try:
            return base64.b64decode(content.blob, validate=True)
        except binascii.Error as exc:
            raise _refused(uri, f"{uri}: the blob is not base64") from exc
    return content.text.encode("utf-8")


class SkillMethods:
    """The Agent Skills methods of :class:`~mcp_sync.client.MCPClient` (SEP-2640): the functions above, as methods."""

    def list_skills(self, *, timeout: Timeout = USE_DEFAULT) -> list[SkillEntry]:
        """The server's Agent Skills (``skills/list``, every page), without reading any of their files.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     [skill.name for skill in client.list_skills()]
        ['pdf-processing']
        """
        return list_skills(cast("MCPClient", self), timeout=timeout)

    def get_skill(self, uri: str, *, timeout: Timeout = USE_DEFAULT) -> SkillEntry:
        """The entry of one skill, by the URI of its SKILL.md (``skills/get``).

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     client.get_skill("skill://pdf-processing/SKILL.md").frontmatter["license"]
        'MIT'
        """
        return get_skill(cast("MCPClient", self), uri, timeout=timeout)

    def load_skill(
        self, skill: SkillEntry | str, *, max_size: int = MAX_TOTAL_SIZE, timeout: Timeout = USE_DEFAULT
    ) -> LoadedSkill:
        """Read a skill's SKILL.md, verified against its entry (size, digest, frontmatter); see :mod:`.skills`.

        Raises :class:`~mcp_sync.client.skills.SkillVerificationError` on any
        mismatch, and before reading when the skill is over ``max_size`` bytes.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     loaded = client.load_skill("skill://pdf-processing/SKILL.md")
        >>> loaded.text.splitlines()[1], loaded.files()
        ('name: pdf-processing', ['skill://pdf-processing/references/FORMS.md'])
        """
        return load_skill(cast("MCPClient", self), skill, max_size=max_size, timeout=timeout)

    def read_skill_file(
        self, skill: SkillEntry, uri: str, *, max_size: int = MAX_TOTAL_SIZE, timeout: Timeout = USE_DEFAULT
    ) -> bytes:
        """The bytes of one file of a skill, verified against the skill's entry (size, digest).

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     skill = client.list_skills()[0]
        ...     client.read_skill_file(skill, "skill://pdf-processing/references/FORMS.md").splitlines()[0]
        b'# PDF forms'
        """
        return read_skill_file(cast("MCPClient", self), skill, uri, max_size=max_size, timeout=timeout)

    def read_directory(self, uri: str, *, timeout: Timeout = USE_DEFAULT) -> list[models.Resource]:
        """The files and subdirectories directly under a skill's directory (``resources/directory/read``).

        A subdirectory's ``mime_type`` is ``"inode/directory"``; read it the
        same way to walk down. Needs a server declaring the skills extension
        with ``directoryRead``.

        >>> from mcp_sync import MCPServer, connect
        >>> server = MCPServer("demo")
        >>> _ = server.add_skills("examples/skills")
        >>> with connect(server) as client:
        ...     [(child.name, child.mime_type) for child in client.read_directory("skill://pdf-processing")]
        [('references', 'inode/directory'), ('SKILL.md', 'text/markdown')]
        """
        return read_directory(cast("MCPClient", self), uri, timeout=timeout)
