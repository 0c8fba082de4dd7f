"""A tool's result, read as the pieces a model's API can be given: text, and media with their bytes.

Every provider takes text in a tool result; only some take images, audio or
files there. :func:`pieces` reads a ``CallToolResult`` once, the same way for
all of them: text blocks as they are, an embedded text resource as its text
under its URI, a resource link as a line naming it, ``structuredContent`` as
JSON text (unless a text block already says the same), and images, audio
and embedded blobs as :class:`Media`. Each provider's module then keeps the
media its API accepts and puts :func:`stand_in` text in place of the rest,
so the model always learns that something was there.

>>> from mcp_sync.protocol.types import CallToolResult, ImageContent, TextContent
>>> chart = ImageContent(data="iVBORw0K", mime_type="image/png")
>>> result = CallToolResult(content=[TextContent(text="a chart:"), chart])
>>> [piece if isinstance(piece, str) else stand_in(piece) for piece in pieces(result)]
['a chart:', '[an image (image/png, 6 bytes) the tool returned, which cannot be shown here]']
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Literal

from ..protocol.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = [
    "ERROR_PREFIX",
    "IMAGE_TYPES",
    "NO_CONTENT",
    "Asked",
    "Media",
    "Piece",
    "as_plain",
    "pieces",
    "stand_in",
    "text_of",
]

ERROR_PREFIX = "The tool reported an error:"
"""The first line of a failed call's text, where the provider's tool result has no error flag of its own."""

NO_CONTENT = "The tool returned no content."
"""What the model reads for a result with nothing in it."""

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types OpenAI, Anthropic and Gemini all take as images."""

Asked = tuple[str, Any, str | None]
"""One call a model asked for, as a provider's module reads it: ``(name, arguments, call id)``."""


@dataclass(frozen=True)
class Media:
    """Bytes a tool returned: an image, an audio clip or an embedded file, base64-encoded in ``data``."""

    kind: Literal["image", "audio", "file"]
    mime_type: str
    data: str
    uri: str | None = None

    @property
    def size(self) -> int:
        """How many bytes ``data`` decodes to (0 when it is not valid base64)."""
        return len(self.raw())

    def raw(self) -> bytes:
        """The bytes themselves (empty when ``data`` is not valid base64)."""
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            return b""

    @property
    def data_url(self) -> str:
        """``data:<mime>;base64,<data>``, as the OpenAI API takes images and files."""
        return f"data:{self.mime_type};base64,{self.data}"


Piece = str | Media
"""Text, or media the provider may take as they are."""


def pieces(result: CallToolResult) -> list[Piece]:
    """The text and media of ``result``, in order; never empty (:data:`NO_CONTENT` stands for nothing).

    >>> pieces(CallToolResult(content=[], structured_content={"temperature": 21}))
    ['{"temperature": 21}']
    """
    found: list[Piece] = []
    for block in result.content:
        if isinstance(block, (ImageContent, AudioContent)):
            found.append(Media(block.type, block.mime_type, block.data))
        elif isinstance(block, EmbeddedResource) and not isinstance(block.resource, TextResourceContents):
            resource = block.resource
            found.append(Media("file", resource.mime_type or "application/octet-stream", resource.blob, resource.uri))
        elif text := text_of(block):  # an empty text block says nothing (and Anthropic refuses one)
            found.append(text)
    if result.structured_content is not None and not _said(result.structured_content, found):
        found.append(json.dumps(result.structured_content, ensure_ascii=False))
    return found or [NO_CONTENT]


def text_of(block: TextContent | ResourceLink | EmbeddedResource) -> str:
    """The text a model reads for a block that is text, a text resource, or a link to a resource.

    >>> from mcp_sync.protocol.types import ResourceLink
    >>> text_of(ResourceLink(uri="file:///r.txt", name="r.txt", mime_type="text/plain"))
    '[a link to the resource r.txt (file:///r.txt, text/plain)]'
    """
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ResourceLink):
        details = ", ".join(part for part in (block.uri, block.mime_type) if part)
        about = f": {block.description}" if block.description else ""
        return f"[a link to the resource {block.title or block.name} ({details}){about}]"
    resource = block.resource
    assert isinstance(resource, TextResourceContents)  # a blob is Media (see pieces)
    mime = f" ({resource.mime_type})" if resource.mime_type else ""
    return f"[the resource {resource.uri}{mime}]\n{resource.text}"


def stand_in(media: Media) -> str:
    """The text a model reads in place of media its provider does not take in a tool result.

    >>> stand_in(Media("audio", "audio/wav", "UklGRg=="))
    '[an audio clip (audio/wav, 4 bytes) the tool returned, which cannot be shown here]'
    """
    what = {"image": "an image", "audio": "an audio clip", "file": "a file"}[media.kind]
    source = f" {media.uri}" if media.uri else ""
    return f"[{what}{source} ({media.mime_type}, {media.size} bytes) the tool returned, which cannot be shown here]"


def _said(structured: Any, found: list[Piece]) -> bool:
    """Whether a text piece already holds ``structured``: as JSON (as the spec asks servers to send it), or as the
    value a server wrapped in ``{"result": ...}`` (what this library, the official SDK and fastmcp send for a
    function that returns a number, a string or a list).

    >>> _said({"result": 42}, ["42"]), _said({"result": "hi"}, ["hi"]), _said({"a": 1}, ["{\\"a\\": 1}"])
    (True, True, True)
    >>> _said({"result": 42}, ["43"])
    False
    """
    for piece in found:
        if not isinstance(piece, str):
            continue
        if structured == {"result": piece}:
            return True
        try:
            parsed = json.loads(piece)
        except ValueError:
            continue
        if structured in (parsed, {"result": parsed}):
            return True
    return False


def as_plain(value: Any) -> Any:
    """``value`` as plain dicts and lists: an SDK's pydantic model dumped, anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    if isinstance(value, (list, tuple)):
        return [as_plain(item) for item in value]
    return value
