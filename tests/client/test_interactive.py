"""The client's defaults for a person at hand, chosen from where it runs, in process and in both eras.

Where the code runs is set up by hand here (a terminal is a stream whose
``isatty`` says so; a notebook is ``in_notebook`` answering yes); the real
terminal and the real notebook are in ``tests/test_terminal_forms.py`` and
``tests/test_notebook_forms.py``. The server is the asking server of
``tests/servers``, served in memory.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from typing import Any

import pytest

import mcp_sync
from mcp_sync.client import interactive
from mcp_sync.client.core import MCPClient
from mcp_sync.client.forms import NotebookForm, TerminalForm
from mcp_sync.client.logs import forward_to_logging
from mcp_sync.client.providers import ElicitParams, responder
from mcp_sync.display.ipython import show_log
from mcp_sync.errors import MCP_CODES, MCPError
from mcp_sync.types import (
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    LoggingMessageNotificationParams,
)
from tests.servers.asking import server

ERAS = ["handshake", "stateless"]
TASKS = {"io.modelcontextprotocol/tasks": {}}
"""What every client declares besides its providers: its tool calls may become tasks."""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin and stderr are terminals (set in the test itself: pytest sets its own stderr after the fixtures)."""
    monkeypatch.delenv(interactive.SETTING, raising=False)
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys, "stderr", Terminal())


@pytest.fixture
def in_a_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(interactive.SETTING, raising=False)
    monkeypatch.setattr(interactive, "in_notebook", lambda: True)


def test_nobody_at_hand_no_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(interactive.SETTING, raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal (as pytest's own stdin, unless run with -s)
    assert interactive.where() is None
    monkeypatch.setattr(sys, "stdin", None)  # pythonw, some services
    assert interactive.where() is None
    assert interactive.default_elicitation_provider() is None and interactive.default_log_handler() is None
    client = MCPClient()
    assert client.elicitation_provider is None and client.capabilities().elicitation is None
    assert client.log_handler is forward_to_logging and client.log_level is None


@pytest.mark.parametrize("value", ["0", "off", " No ", "false", "never"])
def test_the_setting_turns_the_defaults_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    at_a_terminal(monkeypatch)
    monkeypatch.setenv(interactive.SETTING, value)
    assert interactive.where() is None and MCPClient().elicitation_provider is None


def test_at_a_terminal_the_person_is_prompted(monkeypatch: pytest.MonkeyPatch) -> None:
    at_a_terminal(monkeypatch)
    assert interactive.where() == "terminal"
    client = MCPClient()
    assert isinstance(client.elicitation_provider, TerminalForm)
    assert client.capabilities().to_wire() == {"elicitation": {"form": {}, "url": {}}, "extensions": TASKS}
    assert client.log_handler is forward_to_logging  # a script's logs go to logging, as before
    assert MCPClient(elicitation_provider=None).elicitation_provider is None
    client.set_elicitation_provider(None)
    assert client.capabilities().elicitation is None
    client.set_elicitation_provider("auto")
    assert isinstance(client.elicitation_provider, TerminalForm)


@pytest.mark.usefixtures("in_a_notebook")
def test_in_a_notebook_a_form_in_the_cell_and_logs_there() -> None:
    assert interactive.where() == "notebook"
    client = MCPClient()
    assert isinstance(client.elicitation_provider, NotebookForm)  # no kernel to route widgets through
    assert client.log_handler is show_log
    mine = MCPClient(log_handler=print)
    assert mine.log_handler is print


def person(answers: list[Any]) -> Any:
    """A provider that answers forms with ``answers`` in turn and takes URL-mode requests too."""

    def answer(params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
        seen.append(params)
        return answers.pop(0)

    seen: list[Any] = []
    answer.url_mode = True  # type: ignore[attr-defined]
    answer.seen = seen  # type: ignore[attr-defined]
    return answer


@pytest.mark.parametrize("era", ERAS)
def test_a_provider_that_takes_urls_answers_url_mode_in_both_eras(era: str) -> None:
    provider = person([ElicitResult(action="accept"), ElicitResult(action="accept", content={"name": "Ada"})])
    with mcp_sync.connect(server, era=era, elicitation_provider=provider) as client:
        assert client.capabilities().to_wire() == {"elicitation": {"form": {}, "url": {}}, "extensions": TASKS}
        assert json.loads(client.call_tool("visit").text) == {"action": "accept"}
        assert provider.seen[0] == ElicitRequestURLParams(
            message="Sign the form", url="https://example.com/sign", elicitation_id="e1"
        )
        profile = json.loads(client.call_tool("profile").text)
    # the schema's defaults fill what the person left out, as before
    assert profile == {"action": "accept", "content": {"name": "Ada", "height": 1.7, "subscribe": True}}


def test_url_mode_reaches_only_a_provider_that_takes_it() -> None:
    form = {"message": "Hi", "requestedSchema": {"type": "object", "properties": {}}}
    assert isinstance(ElicitParams.model_validate(form), ElicitRequestFormParams)
    url = ElicitParams.model_validate({"mode": "url", "message": "Go", "url": "https://example.com"})
    assert isinstance(url, ElicitRequestURLParams)
    client = MCPClient(elicitation_provider=lambda params: ElicitResult(action="decline"))
    assert client.capabilities().to_wire() == {"elicitation": {"form": {}}, "extensions": TASKS}
    answer = responder(client, "elicitation/create", lambda kind: MCPError(MCP_CODES.NOT_FOUND, kind))
    with pytest.raises(MCPError) as refused:
        answer(url)
    assert refused.value.code == MCP_CODES.INVALID_PARAMS
    assert answer(ElicitParams.model_validate(form)) == ElicitResult(action="decline")


@pytest.mark.parametrize("era", ERAS)
def test_a_log_level_given_is_asked_of_the_server_and_filters(era: str) -> None:
    received: list[LoggingMessageNotificationParams] = []
    with mcp_sync.connect(server, era=era, log_handler=received.append, log_level="info") as client:
        assert client.call_tool("chatty").text == "done"
        assert [(message.level, message.data) for message in received] == [("warning", {"disk": "almost full"})]
        client.set_log_level("debug")
        assert client.log_level == "debug"
        received.clear()
        client.call_tool("chatty")
        assert [message.level for message in received] == ["debug", "warning"]
        client.log_level = "error"  # shown: error and above, whatever the server sends
        received.clear()
        client.call_tool("chatty")
        assert received == []


def test_without_a_level_logs_go_to_logging_as_before(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.DEBUG, logger="mcp_sync.server_log"),
        mcp_sync.connect(server, era="handshake") as client,
    ):
        client.call_tool("chatty")
    assert [(record.levelname, record.getMessage()) for record in caplog.records][-1] == (
        "WARNING",
        "[store] {'disk': 'almost full'}",
    )
