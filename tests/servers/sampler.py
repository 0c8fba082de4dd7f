"""A server whose tools ask the client's model (sampling): over stdio when run as a script (``python sampler.py``),
importable as ``build()`` for in-process use. The server side of the tests of ``OpenAISampling`` and
``AnthropicSampling``.

Each tool answers with JSON text:

- ``sample``: ``ctx.sample`` with the arguments given (``messages`` as wire sampling messages, ``hints`` the
  model hints' names); the answer's wire form, or ``{"error": message}`` when the sampling failed;
- ``add_with_model``: a sampling loop with tools, as a server would write it: it offers the model the tool
  ``add`` (or the ``tools`` given, with ``tool_choice`` if given), runs each ``tool_use`` the model answers
  with (adding ``a`` and ``b``) and sends the ``tool_result`` back, for up to three rounds; the wire form of
  every answer, in order;
- ``sampling_capability``: the client's sampling capability as it declared it (``null`` without one).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_sync import MCPError, MCPServer
from mcp_sync.server.context import Context
from mcp_sync.types import (
    CreateMessageRequestParams,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)

ADD = Tool(
    name="add",
    description="Add two integers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
"""The tool the sampling loop offers the model (run by the server itself)."""


def build(name: str = "sampler") -> MCPServer:
    server = MCPServer(name)

    @server.tool
    def sample(
        messages: list[dict[str, Any]],
        ctx: Context,
        system_prompt: str | None = None,
        max_tokens: int = 100,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        hints: list[str] | None = None,
    ) -> str:
        preferences = None if hints is None else ModelPreferences(hints=[ModelHint(name=hint) for hint in hints])
        try:
            result = ctx.sample(
                [SamplingMessage.model_validate(message) for message in messages],
                max_tokens=max_tokens,
                system_prompt=system_prompt,
                temperature=temperature,
                stop_sequences=stop_sequences,
                model_preferences=preferences,
            )
        except MCPError as exc:
            return json.dumps({"error": exc.message})
        return json.dumps(result.to_wire())

    @server.tool
    def add_with_model(
        question: str, ctx: Context, tool_choice: str | None = None, tools: list[dict[str, Any]] | None = None
    ) -> str:
        messages = [SamplingMessage(role="user", content=TextContent(text=question))]
        offered = [ADD] if tools is None else [Tool.model_validate(tool) for tool in tools]
        choice = None if tool_choice is None else ToolChoice.model_validate({"mode": tool_choice})
        answers: list[dict[str, Any]] = []
        for round_number in range(1, 4):
            params = CreateMessageRequestParams(messages=messages, max_tokens=200, tools=offered, tool_choice=choice)
            # ctx.sample takes no tools: the channel carries the full request (keyed, for the stateless era's rounds).
            result = ctx.channel.create_message(params, None, f"round-{round_number}")
            answers.append(result.to_wire())
            content = result.content if isinstance(result.content, list) else [result.content]
            uses = [block for block in content if isinstance(block, ToolUseContent)]
            if not uses:
                break
            results = [
                ToolResultContent(
                    tool_use_id=use.id,
                    content=[TextContent(text=str(use.input["a"] + use.input["b"]))],
                )
                for use in uses
            ]
            messages += [
                SamplingMessage(role="assistant", content=content),
                SamplingMessage(role="user", content=results),
            ]
        return json.dumps(answers)

    @server.tool
    def sampling_capability(ctx: Context) -> str:
        declared = ctx.client_capabilities.sampling
        return json.dumps(None if declared is None else declared.to_wire())

    return server


if __name__ == "__main__":
    build().serve_stdio()
