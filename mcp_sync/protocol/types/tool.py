"""The declaration of a tool: ``Tool`` and its ``ToolAnnotations``, which a server makes for each tool it registers.

Apart from :mod:`~mcp_sync.protocol.types.content` (the tools' results and
the pages that list them), so that registering tools and answering the
handshake declare no content model.
"""

from typing import Any

from pydantic import Field

from .base import BaseMetadata, Icons, WireModel
from .lazy import adopt


class ToolAnnotations(WireModel):
    """Untrusted hints about how a tool behaves."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(BaseMetadata, Icons):
    """A tool the server offers; its schemas are kept as plain JSON Schema dicts."""

    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


adopt(globals())
