"""Content and what content refers to (text, image, audio, embedded and linked resources, tool results), prompts,
and the pages in which a server lists its tools, resources, templates and prompts.

Loaded the first time one of its names is looked up in the package (see
:data:`~mcp_sync.protocol.types.ON_DEMAND`): a tool server declares its
tools (:mod:`~mcp_sync.protocol.types.tool`) and answers its handshake
without any of these."""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from ..rendering import Bundle, bundle, render
from .base import BaseMetadata, CacheableResult, Icons, PaginatedResult, Result, Role, WireModel
from .lazy import adopt
from .tool import Tool

# --------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------


class Annotations(WireModel):
    """Hints on how a client should use or show a piece of content."""

    audience: list[Role] | None = None
    priority: float | None = Field(default=None, ge=0, le=1)
    last_modified: str | None = None


class TextContent(WireModel):
    """Plain text content."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ImageContent(WireModel):
    """A base64-encoded image."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class AudioContent(WireModel):
    """A base64-encoded audio clip."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class BaseResourceContents(WireModel):
    """Fields shared by text and blob resource contents (``ResourceContents`` in the schema)."""

    uri: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class TextResourceContents(BaseResourceContents):
    """The content of a resource as text."""

    text: str


class BlobResourceContents(BaseResourceContents):
    """The content of a resource as base64-encoded bytes."""

    blob: str


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents
"""Text or blob resource contents (told apart by ``text`` / ``blob``)."""


class Resource(BaseMetadata, Icons):
    """A resource that a server can read out."""

    uri: str
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    size: int | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceTemplate(BaseMetadata, Icons):
    """A URI template (RFC 6570) describing a family of resources."""

    uri_template: str
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceLink(Resource):
    """A reference to a resource, placed among content blocks."""

    type: Literal["resource_link"] = "resource_link"


class EmbeddedResource(WireModel):
    """The contents of a resource, placed inline among content blocks."""

    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
"""One item of tool results and prompt messages, chosen by its ``type``."""


# --------------------------------------------------------------------------
# Tool results
# --------------------------------------------------------------------------


class CallToolResult(Result):
    """What a tool call returns."""

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None

    @property
    def text(self) -> str:
        """The text of the text content blocks, one per line.

        >>> CallToolResult(content=[TextContent(text="a"), TextContent(text="b")]).text
        'a\\nb'
        """
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    @classmethod
    def failure(cls, text: str) -> "CallToolResult":
        """The result of a tool that failed: ``text`` as its one content block, flagged ``is_error``.

        >>> CallToolResult.failure("no such city").to_wire()
        {'content': [{'type': 'text', 'text': 'no such city'}], 'isError': True}
        """
        return cls(content=[TextContent(text=text)], is_error=True)

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Bundle | None:
        # A call of a tool with an app, by a client that hosts apps, shows the app in a notebook (the bundler set
        # by the package; IPython adds the HTML and text above for front ends without widgets).
        return bundle(self)


# --------------------------------------------------------------------------
# Prompts, and the pages of what a server lists
# --------------------------------------------------------------------------


class PromptArgument(BaseMetadata):
    """An argument a prompt template accepts."""

    description: str | None = None
    required: bool | None = None


class Prompt(BaseMetadata, Icons):
    """A prompt or prompt template the server offers."""

    description: str | None = None
    arguments: list[PromptArgument] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListToolsResult(PaginatedResult, CacheableResult):
    """A page of tools."""

    tools: list[Tool]


class ListResourcesResult(PaginatedResult, CacheableResult):
    """A page of resources."""

    resources: list[Resource]


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    """A page of resource templates."""

    resource_templates: list[ResourceTemplate]


class ListPromptsResult(PaginatedResult, CacheableResult):
    """A page of prompts."""

    prompts: list[Prompt]


adopt(globals())
