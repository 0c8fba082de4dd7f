"""The MCP spec's server utilities: completion, logging, and the 2026-07-28 subscriptions.

Loaded the first time one of its names is looked up in the package (see ``UTILITIES`` there). Progress and
cancellation, which every connection may use, are in ``base``.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from .base import (
    BaseMetadata,
    LoggingLevel,
    NotificationParams,
    RequestParams,
    Result,
    WireModel,
)
from .lazy import adopt

# --------------------------------------------------------------------------
# Completion
# --------------------------------------------------------------------------


class PromptReference(BaseMetadata):
    """Points a completion request at a prompt."""

    type: Literal["ref/prompt"] = "ref/prompt"


class ResourceTemplateReference(WireModel):
    """Points a completion request at a resource template."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


ResourceReference = ResourceTemplateReference
"""The name of :class:`ResourceTemplateReference` in 2024-11-05 and 2025-03-26."""


class CompleteArgument(WireModel):
    """The argument being completed and what the user has typed so far."""

    name: str
    value: str


class CompleteContext(WireModel):
    """Values of arguments that are already filled in."""

    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    """Parameters of ``completion/complete``."""

    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompleteArgument
    context: CompleteContext | None = None


class Completion(WireModel):
    """Suggested values for the argument being completed."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    """The server's completion suggestions."""

    completion: Completion


# --------------------------------------------------------------------------
# Logging, progress, cancellation
# --------------------------------------------------------------------------


class SetLevelRequestParams(RequestParams):
    """Parameters of ``logging/setLevel``."""

    level: LoggingLevel


class LoggingMessageNotificationParams(NotificationParams):
    """Parameters of ``notifications/message``."""

    level: LoggingLevel
    logger: str | None = None
    data: Any


# --------------------------------------------------------------------------
# Subscriptions (2026-07-28)
# --------------------------------------------------------------------------


class SubscriptionFilter(WireModel):
    """Which notifications a ``subscriptions/listen`` stream should carry."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


class SubscriptionsListenRequestParams(RequestParams):
    """Parameters of ``subscriptions/listen``."""

    notifications: SubscriptionFilter


class SubscriptionsListenResult(Result):
    """Sent when the server ends a listen stream on purpose."""


class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Parameters of ``notifications/subscriptions/acknowledged``."""

    notifications: SubscriptionFilter


adopt(globals())
