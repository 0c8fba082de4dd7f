"""Serve a directory of Agent Skills with the skills extension (``io.modelcontextprotocol/skills``, SEP-2640).

:meth:`MCPServer.add_skills <mcp_sync.server.core.MCPServer.add_skills>`
calls :func:`add_skills`: each subdirectory of the given directory that holds
a ``SKILL.md`` is one skill, named by its directory (which must equal the
frontmatter ``name``). Every file of a skill becomes a resource
``skill://<name>/<path>`` (SKILL.md as ``text/markdown``, with the skill's
name and description), and the server declares the extension (with
``directoryRead``) and answers ``skills/list`` and ``skills/get`` with each
skill's frontmatter and its files' digests and sizes, and
``resources/directory/read`` with the files and subdirectories directly
under ``skill://<name>`` or one of its subdirectories.

The catalogue (frontmatter, digests, sizes) is taken when the skills are
added; a read returns the file as it is on disk then, so a file changed
since fails the reader's digest check instead of being trusted.

>>> import pathlib, tempfile
>>> from mcp_sync import MCPServer
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "hello").mkdir()
>>> _ = (root / "hello" / "SKILL.md").write_text("---\\nname: hello\\ndescription: Say hello\\n---\\nSay hello.\\n")
>>> server = MCPServer("skills")
>>> [entry.uri for entry in server.add_skills(root)]
['skill://hello/SKILL.md']
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..protocol.errors import MCP_CODES, MCPError
from ..protocol.skills import (
    DIRECTORY_MIME_TYPE,
    EXTENSION,
    MAX_RESOURCES,
    MAX_TOTAL_SIZE,
    GetSkillRequestParams,
    GetSkillResult,
    ListSkillsRequestParams,
    ListSkillsResult,
    ReadDirectoryRequestParams,
    ReadDirectoryResult,
    SkillEntry,
    SkillFile,
    parse_frontmatter,
    sha256_digest,
    valid_skill_name,
)
from ..protocol.types import Resource
from .context import Context

if TYPE_CHECKING:
    from .core import MCPServer

__all__ = ["SkillCatalogue", "add_skills"]

SKILL_FILE = "SKILL.md"


class SkillCatalogue:
    """The skills one server serves; it answers ``skills/list``, ``skills/get`` and ``resources/directory/read``."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._entries: dict[str, SkillEntry] = {}
        self._directories: dict[str, list[Resource]] = {}
        self._lock = threading.Lock()

    def declare(self) -> None:
        """Declare the skills extension on the server, and answer its methods with this catalogue (once)."""
        self.server.extensions[EXTENSION] = {"directoryRead": True}
        self.server.register_method("skills/list", ListSkillsRequestParams, self.list, cacheable=True)
        self.server.register_method("skills/get", GetSkillRequestParams, self.get, cacheable=True)
        self.server.register_method("resources/directory/read", ReadDirectoryRequestParams, self.read_directory)

    def entries(self) -> list[SkillEntry]:
        """Every skill served, in the order added."""
        with self._lock:
            return list(self._entries.values())

    def add(self, entry: SkillEntry, directories: dict[str, list[Resource]]) -> None:
        """Serve ``entry`` and its directories' children (``DUPLICATE_REGISTRATION`` when it is served already)."""
        with self._lock:
            if entry.uri in self._entries:
                raise MCPError(MCP_CODES.DUPLICATE_REGISTRATION, f"skill {entry.uri!r} is already served")
            self._entries[entry.uri] = entry
            self._directories.update(directories)

    def list(self, params: ListSkillsRequestParams, ctx: Context) -> ListSkillsResult:
        """``skills/list``: a page of the catalogue (pages of the server's ``page_size``)."""
        skills, cursor = self.server.page(self.entries(), params.cursor)
        return ListSkillsResult(skills=skills, next_cursor=cursor)

    def get(self, params: GetSkillRequestParams, ctx: Context) -> GetSkillResult:
        """``skills/get``: one skill's entry; ``-32602`` for a URI that names no skill served here."""
        with self._lock:
            entry = self._entries.get(params.uri)
        if entry is None:
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"no skill at {params.uri}", data={"uri": params.uri})
        return GetSkillResult(skill=entry)

    def read_directory(self, params: ReadDirectoryRequestParams, ctx: Context) -> ReadDirectoryResult:
        """``resources/directory/read``: a page of a directory's children; ``-32602`` when no directory is there."""
        with self._lock:
            children = self._directories.get(params.uri.removesuffix("/"))
        if children is None:
            raise MCPError(MCP_CODES.INVALID_PARAMS, f"no directory at {params.uri}", data={"uri": params.uri})
        resources, cursor = self.server.page(children, params.cursor)
        return ReadDirectoryResult(resources=resources, next_cursor=cursor)


def add_skills(server: MCPServer, path: str | Path) -> list[SkillEntry]:
    """Serve every skill under ``path`` on ``server``; the entries added.

    ``ValueError`` names the first skill that cannot be served: a SKILL.md
    without valid frontmatter, a name that is not the directory's or breaks
    the naming rules, more than :data:`MAX_RESOURCES` files or
    :data:`MAX_TOTAL_SIZE` bytes. Every skill is read before any is served,
    so nothing is served then.
    """
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    skills = [_read_skill(directory) for directory in sorted(root.iterdir()) if (directory / SKILL_FILE).is_file()]
    catalogue = server.skill_catalogue()
    for entry, files in skills:
        catalogue.add(entry, _directories(f"skill://{entry.name}", files))
        for uri, file in files.items():
            _register_file(server, uri, file, entry)
    return [entry for entry, _ in skills]


def _read_skill(directory: Path) -> tuple[SkillEntry, dict[str, Path]]:
    """The entry of the skill in ``directory`` and its files by URI."""
    name = directory.name
    where = directory / SKILL_FILE
    frontmatter = parse_frontmatter(where.read_bytes().decode("utf-8"))
    for field in ("name", "description"):
        if not isinstance(frontmatter.get(field), str) or not frontmatter[field]:
            raise ValueError(f"{where}: the frontmatter has no {field}")
    if frontmatter["name"] != name or not valid_skill_name(name):
        raise ValueError(f"{where}: the name {frontmatter['name']!r} must be the directory's, a valid skill name")
    paths = sorted(p for p in directory.rglob("*") if p.is_file())
    files = {f"skill://{name}/{quote(p.relative_to(directory).as_posix())}": p for p in paths}
    listed = [SkillFile(uri=uri, digest=sha256_digest(data), size=len(data)) for uri, data in _contents(files)]
    if len(listed) > MAX_RESOURCES or sum(file.size for file in listed) > MAX_TOTAL_SIZE:
        raise ValueError(f"{directory}: more than {MAX_RESOURCES} files or {MAX_TOTAL_SIZE} bytes")
    return SkillEntry(uri=f"skill://{name}/{SKILL_FILE}", frontmatter=frontmatter, resources=listed), files


def _directories(root: str, files: dict[str, Path]) -> dict[str, list[Resource]]:
    """The children of ``root`` (a skill's directory URI) and of each directory under it, by directory URI.

    Every directory between a file and ``root`` is listed in its parent with
    the directory MIME type, so a client can walk the tree down from ``root``.
    """
    directories: set[str] = {root}
    for uri in files:
        parent = uri.rsplit("/", 1)[0]
        while parent not in directories:
            directories.add(parent)
            parent = parent.rsplit("/", 1)[0]
    children: dict[str, list[Resource]] = {directory: [] for directory in directories}
    for directory in sorted(directories - {root}):
        parent, name = directory.rsplit("/", 1)
        children[parent].append(Resource(uri=directory, name=unquote(name), mime_type=DIRECTORY_MIME_TYPE))
    for uri, path in files.items():
        resource = Resource(uri=uri, name=path.name, mime_type=_mime_type(path), size=path.stat().st_size)
        children[uri.rsplit("/", 1)[0]].append(resource)
    return children


def _mime_type(path: Path) -> str:
    """The MIME type a skill's file is served with: SKILL.md as Markdown, others as their extension says."""
    import mimetypes  # here, not at the top: a server without skills never pays for importing it

    if path.name == SKILL_FILE:
        return "text/markdown"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def _contents(files: dict[str, Path]) -> list[tuple[str, bytes]]:
    return [(uri, path.read_bytes()) for uri, path in files.items()]


def _register_file(server: MCPServer, uri: str, path: Path, entry: SkillEntry) -> None:
    """Serve the file at ``path`` as the resource ``uri``: as text when it is UTF-8, as bytes otherwise."""
    if uri == entry.uri:
        server.register_resource(
            uri, _reader(path), name=entry.name, description=entry.description, mime_type="text/markdown"
        )
        return
    server.register_resource(uri, _reader(path), name=uri, mime_type=_mime_type(path))


def _reader(path: Path) -> Callable[[str, Context], str | bytes]:
    def read(uri: str, ctx: Context) -> str | bytes:
        data = path.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    return read
