"""From MCP to a language model: a server's tools given to a model, and sampling answered by one.

A :class:`Toolbox` holds the tools of one client or of a whole
``ServerGroup``, names them as the model's API wants, converts their
schemas, and runs the calls the model asks for, handing back the messages
to append in that provider's own form (OpenAI, Anthropic, Gemini,
LangChain). Nothing here imports a provider's SDK until a feature that
needs it is used: ``import mcp_sync.llm`` stays cheap, and a missing SDK is
reported with the extra that installs it.

What the package holds:

- ``extras``: the provider SDKs, imported on first use, with the extra to install named when one is missing;
- ``langchain_tools``: the tools as LangChain ``StructuredTool`` objects (:meth:`Toolbox.langchain`);
- ``toolbox``: :class:`Toolbox`, the tools of one or many servers under names a model can use, and their calls;
- ``schemas``: input schemas converted to what each provider takes (OpenAI strict mode, Gemini's subset);
- ``content``: a tool's result read as text and media, for each provider to map;
- ``openai_tools``, ``anthropic_tools``, ``gemini_tools``: each provider's tool definitions, the calls its
  models ask for, and the messages that answer them;
- ``sampling``: what the sampling providers share (the model a request's hints pick, the answer, API failures);
- ``openai_sampling``, ``anthropic_sampling``: :class:`OpenAISampling` and :class:`AnthropicSampling`, a
  server's sampling requests answered by a model through the user's own SDK client;
- ``loop``: :func:`ask_openai` and :func:`ask_anthropic`, a prompt answered by a model that runs the tools it asks for.

May import: ``llm``, ``client``, ``runtime``, ``protocol``.
Must not import: ``transports``, ``display``, ``server``, ``apps``, nor the composition level.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Toolbox": "toolbox",
    "OpenAISampling": "openai_sampling",
    "AnthropicSampling": "anthropic_sampling",
    "SchemaConversionWarning": "schemas",
    "Answer": "loop",
    "Round": "loop",
    "TooManyRounds": "loop",
    "ask_anthropic": "loop",
    "ask_openai": "loop",
}

__all__ = [
    "Answer",
    "AnthropicSampling",
    "OpenAISampling",
    "Round",
    "SchemaConversionWarning",
    "TooManyRounds",
    "Toolbox",
    "ask_anthropic",
    "ask_openai",
]

if TYPE_CHECKING:
    from .anthropic_sampling import AnthropicSampling
    from .loop import Answer, Round, TooManyRounds, ask_anthropic, ask_openai
    from .openai_sampling import OpenAISampling
    from .schemas import SchemaConversionWarning
    from .toolbox import Toolbox


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_sync.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
