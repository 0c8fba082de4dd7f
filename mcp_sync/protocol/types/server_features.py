"""The params and results of the MCP spec's server features: resources, prompts, tools (calls and lists)."""

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ..rendering import render
from .base import (
    BaseMetadata,
    CacheableResult,
    Icons,
    NotificationParams,
    PaginatedResult,
    RequestParams,
    Result,
    Role,
    WireModel,
)
from .content import ContentBlock, Resource, ResourceContents, ResourceTemplate, TextResourceContents, Tool
from .lazy import Later, adopt

if TYPE_CHECKING:
    from .client_features import InputResponses


def _input_responses() -> Any:
    """The type of ``inputResponses``, from ``client_features`` (loaded the first time a model with it is built)."""
    from .client_features import InputResponses

    return InputResponses | None


class InputResponseRequestParams(RequestParams):
    """Base of request parameters that can carry answers to input requests (2026-07-28).

    The answers' models (sampling, roots, elicitation) are in
    ``client_features``, which a program loads only when it uses them: the
    field's type is looked up when this model's schema is first built.
    """

    if TYPE_CHECKING:
        input_responses: InputResponses | None = None
    else:
        input_responses: Annotated[Any, Later(_input_responses)] = None
    request_state: str | None = None


# --------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------


class ResourceRequestParams(RequestParams):
    """Base of request parameters that name one resource."""

    uri: str


class ReadResourceRequestParams(ResourceRequestParams, InputResponseRequestParams):
    """Parameters of ``resources/read``."""


class SubscribeRequestParams(ResourceRequestParams):
    """Parameters of ``resources/subscribe``."""


class UnsubscribeRequestParams(ResourceRequestParams):
    """Parameters of ``resources/unsubscribe``."""


class ListResourcesResult(PaginatedResult, CacheableResult):
    """A page of resources."""

    resources: list[Resource]


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    """A page of resource templates."""

    resource_templates: list[ResourceTemplate]


class ReadResourceResult(CacheableResult):
    """The contents of a resource."""

    contents: list[ResourceContents]

    @property
    def text(self) -> str:
        """The text of the text contents, one per line."""
        return "\n".join(item.text for item in self.contents if isinstance(item, TextResourceContents))

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))


class ResourceUpdatedNotificationParams(NotificationParams):
    """Parameters of ``notifications/resources/updated``."""

    uri: str


# --------------------------------------------------------------------------
# Prompts
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


class PromptMessage(WireModel):
    """One message of a prompt."""

    role: Role
    content: ContentBlock


class GetPromptRequestParams(InputResponseRequestParams):
    """Parameters of ``prompts/get``."""

    name: str
    arguments: dict[str, str] | None = None


class GetPromptResult(Result):
    """A prompt rendered with its arguments."""

    description: str | None = None
    messages: list[PromptMessage]

    def _repr_html_(self) -> str | None:
        return render("text/html", self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(render("text/plain", self) or repr(self))


class ListPromptsResult(PaginatedResult, CacheableResult):
    """A page of prompts."""

    prompts: list[Prompt]


# --------------------------------------------------------------------------
# Tools (requests and lists)
# --------------------------------------------------------------------------


class CallToolRequestParams(InputResponseRequestParams):
    """Parameters of ``tools/call``."""

    name: str
    arguments: dict[str, Any] | None = None


class ListToolsResult(PaginatedResult, CacheableResult):
    """A page of tools."""

    tools: list[Tool]


adopt(globals())
