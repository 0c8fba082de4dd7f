"""The common case in one call: a prompt, a model and a toolbox's tools, until the model answers.

Each round sends the conversation with the toolbox's tools; when the model
asks for tool calls, the toolbox runs them and their results go back in the
next round; when it answers without calls, that answer is returned. At most
``max_rounds`` rounds ask for tools: a model still asking after them raises
:class:`TooManyRounds`, which holds the conversation so far. The SDK client
is the caller's own (keys, proxies, retries); nothing here imports its SDK.

With an OpenAI client (``openai.OpenAI()``)::

    from mcp_sync import connect
    from mcp_sync.llm import Toolbox, ask_openai

    with connect("python examples/echo_server.py") as server:
        answer = ask_openai(openai.OpenAI(), Toolbox(server), "What is 2 + 40?", model="gpt-4.1-mini")
        print(answer.text)

``ask_anthropic(anthropic.Anthropic(), toolbox, prompt, model=...)`` is the
same with Claude. ``on_round`` sees each round as it ends; ``answer.rounds``
keeps them all, and ``answer.messages`` is the conversation, to ask a
follow-up with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .toolbox import Toolbox

__all__ = ["Answer", "Round", "TooManyRounds", "ask_anthropic", "ask_openai"]


@dataclass
class Round:
    """One exchange: what the model returned, and the tool results sent back for it (none in the last round)."""

    response: Any
    results: list[Any] = field(default_factory=list)


@dataclass
class Answer:
    """The model's final ``text``, the whole conversation (``messages``) and every round it took."""

    text: str
    messages: list[Any]
    rounds: list[Round]

    @property
    def response(self) -> Any:
        """What the SDK returned last: the response that holds the answer."""
        return self.rounds[-1].response


class TooManyRounds(RuntimeError):
    """The model still asked for tools after ``max_rounds`` rounds; ``answer`` holds the conversation so far."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(f"the model still asked for tools after {len(answer.rounds)} rounds")
        self.answer = answer


OnRound = Callable[[Round], object]
"""Called with each round as it ends (on the caller's thread)."""


def ask_openai(
    client: Any,
    toolbox: Toolbox,
    prompt: str | list[Any],
    *,
    model: str,
    api: Literal["chat", "responses"] = "chat",
    max_rounds: int = 10,
    on_round: OnRound | None = None,
    **options: Any,
) -> Answer:
    """Ask an OpenAI model, running the tool calls it makes, until it answers; returns the :class:`Answer`.

    ``client`` is an ``openai.OpenAI``; ``api`` picks Chat Completions or
    Responses. ``prompt`` is the user's text, or the messages (Chat) or input
    items (Responses) of a conversation to go on with, such as an earlier
    ``answer.messages``. ``options`` go to every ``create`` call as they are
    (``temperature=``, ``max_completion_tokens=``...).
    """
    tools = toolbox.openai(api=api)
    conversation = _Conversation(toolbox, _start(prompt), max_rounds, on_round)
    messages = conversation.messages
    while True:
        if api == "chat":
            response = client.chat.completions.create(model=model, messages=messages, tools=tools, **options)
            message = response.choices[0].message
            messages.append(_as_dict(message))
            text = message.content or ""
            asked = bool(message.tool_calls)
        else:
            response = client.responses.create(model=model, input=messages, tools=tools, **options)
            messages += [_as_dict(item) for item in response.output]
            text = response.output_text
            asked = any(item.type == "function_call" for item in response.output)
        answer = conversation.end_round(response, asked, text)
        if answer is not None:
            return answer


def ask_anthropic(
    client: Any,
    toolbox: Toolbox,
    prompt: str | list[Any],
    *,
    model: str,
    max_tokens: int = 4096,
    max_rounds: int = 10,
    on_round: OnRound | None = None,
    **options: Any,
) -> Answer:
    """Ask a Claude model, running the tool calls it makes, until it answers; returns the :class:`Answer`.

    ``client`` is an ``anthropic.Anthropic``. ``prompt`` is the user's text,
    or the messages of a conversation to go on with. ``options`` go to every
    ``messages.create`` call as they are (``system=``, ``temperature=``...).
    """
    tools = toolbox.anthropic()
    conversation = _Conversation(toolbox, _start(prompt), max_rounds, on_round)
    messages = conversation.messages
    while True:
        response = client.messages.create(model=model, max_tokens=max_tokens, messages=messages, tools=tools, **options)
        messages.append({"role": "assistant", "content": [_as_dict(block) for block in response.content]})
        text = "".join(block.text for block in response.content if block.type == "text")
        asked = any(block.type == "tool_use" for block in response.content)
        answer = conversation.end_round(response, asked, text)
        if answer is not None:
            return answer


@dataclass
class _Conversation:
    """One ``ask_*`` call's state: the messages so far, the rounds taken, and what ends or reports a round."""

    toolbox: Toolbox
    messages: list[Any]
    max_rounds: int
    on_round: OnRound | None
    rounds: list[Round] = field(default_factory=list)

    def end_round(self, response: Any, asked: bool, text: str) -> Answer | None:
        """The answer when the model asked for nothing; else ``None``, its tool results added to the messages."""
        this = Round(response)
        self.rounds.append(this)
        if asked:
            if len(self.rounds) > self.max_rounds:
                raise TooManyRounds(Answer(text, self.messages, self.rounds))
            this.results = self.toolbox.run(response)
            self.messages += this.results
        if self.on_round is not None:
            self.on_round(this)
        return None if asked else Answer(text, self.messages, self.rounds)


def _start(prompt: str | list[Any]) -> list[Any]:
    """The messages a conversation starts from: the user's text, or a conversation to go on with (copied)."""
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


def _as_dict(item: Any) -> Any:
    """An SDK model as the plain dict its API takes back (``None`` fields left out); anything else as it is."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else item
