"""The requests of the MCP spec's server features beyond their lists: reading and subscribing to resources, getting
prompts, calling tools, with their params and results.

Loaded the first time one of its names is looked up in the package (see ``SERVER_FEATURES`` there): a program that
only lists and calls tools reads every one of these as a plain dict, or never meets them. The lists and what they
list are in ``content``.
"""

from typing import TYPE_CHECKING, Annotated, Any

from ..rendering import render
from .base import (
    CacheableResult,
    NotificationParams,
    RequestParams,
    Result,
    Role,
    WireModel,
)
from .content import ContentBlock, ResourceContents, TextResourceContents
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


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------


class CallToolRequestParams(InputResponseRequestParams):
    """Parameters of ``tools/call``."""

    name: str
    arguments: dict[str, Any] | None = None


adopt(globals())
