"""A loopback HTTP server that answers as OpenAI's and Anthropic's APIs do, from replies a test scripts.

The hosted APIs cannot run in the tests; their real Python SDKs can, pointed
at this stub. It answers, non-streaming and in each API's JSON wire format:

- ``POST /v1/chat/completions``: OpenAI Chat Completions;
- ``POST /v1/responses``: OpenAI Responses;
- ``POST /v1/messages``: Anthropic Messages.

A test queues replies that say nothing of the API (a final text, or tool
calls with their names and JSON arguments, or an API error); each request
takes the next reply and gets it in the form of the API it called, with the
stop reason (``finish_reason``, ``status``, ``stop_reason``) and usage the
real API would send. Every request is recorded (path, headers with the key's
value replaced, JSON body), so the test asserts what the SDK actually sent.
A request with no reply left gets an API-shaped 400 error (the SDK raises
at once), never a hang.

Example::

    with LLMStub() as stub:
        stub.reply_tool_calls([ToolCall("add", {"a": 1, "b": 2})])
        stub.reply_text("3")
        client = openai.OpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)
        ...  # or anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        assert stub.requests[0].body["model"] == "gpt-4.1"

Each answer closes its connection (``Connection: close``), so no connection
thread outlives its request; :meth:`LLMStub.close` stops the server and
joins every thread it started.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["LLMStub", "Recorded", "ToolCall"]

Stop = Literal["end", "max_tokens", "stop_sequence"]
"""Why a text reply ended: the model finished, ran out of tokens, or met one of the request's stop sequences."""

SECRET_HEADERS = ("authorization", "x-api-key", "api-key")
"""Headers that carry the key: recorded as present, their value replaced."""

REDACTED = "[redacted]"


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asks for: ``arguments`` a mapping, or a string sent as is (even if not JSON).

    ``id`` is generated (``call_1``, ``toolu_1``...) when not given.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Recorded:
    """One request the stub received: ``headers`` with lower-case names, ``body`` the parsed JSON (or None)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class _Reply:
    text: str | None = None
    thinking: str | None = None
    calls: tuple[ToolCall, ...] = ()
    stop: Stop = "end"
    stop_sequence: str | None = None
    model: str | None = None
    status: int = 200
    error_type: str = ""


class LLMStub:
    """The stub server on a free port of 127.0.0.1; ``url`` is its root (``http://127.0.0.1:PORT``).

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[_Reply] = deque()
        self._requests: list[Recorded] = []
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = False  # server_close() joins the connection threads
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="test-llm-stub")
        self._thread.start()

    def __enter__(self) -> LLMStub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and join every thread the stub started."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- what the test scripts ------------------------------------------------

    def reply_text(
        self,
        text: str,
        *,
        stop: Stop = "end",
        stop_sequence: str | None = None,
        model: str | None = None,
        thinking: str | None = None,
    ) -> None:
        """Queue a final text answer.

        ``stop="max_tokens"`` answers as a reply cut by the token limit;
        ``stop="stop_sequence"`` as one ended by ``stop_sequence`` (Anthropic
        names it; OpenAI's chat API says ``"stop"`` as for any end).
        ``model`` is the model the API says it used (by default, the one asked for).
        ``thinking`` puts the model's reasoning before the text, where the API
        shows it: a ``thinking`` block (Anthropic), a ``reasoning`` item
        (Responses); the chat API shows none.
        """
        self._queue(_Reply(text=text, stop=stop, stop_sequence=stop_sequence, model=model, thinking=thinking))

    def reply_tool_calls(
        self,
        calls: Sequence[ToolCall | tuple[str, dict[str, Any] | str]],
        *,
        text: str | None = None,
        model: str | None = None,
    ) -> None:
        """Queue an answer asking for tool calls (``ToolCall`` or ``(name, arguments)``), after ``text`` if given."""
        made = tuple(call if isinstance(call, ToolCall) else ToolCall(*call) for call in calls)
        self._queue(_Reply(text=text, calls=made, model=model))

    def reply_error(self, status: int, message: str, *, error_type: str = "invalid_request_error") -> None:
        """Queue an API error: HTTP ``status`` with the API's error body carrying ``message``."""
        self._queue(_Reply(text=message, status=status, error_type=error_type))

    def _queue(self, reply: _Reply) -> None:
        with self._lock:
            self._replies.append(reply)

    # -- what the test reads --------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many queued replies no request has taken yet."""
        with self._lock:
            return len(self._replies)

    # -- serving ----------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        kept = {name: REDACTED if name in SECRET_HEADERS else value for name, value in headers.items()}
        with self._lock:
            self._requests.append(Recorded(method, path, kept, body))
            number = len(self._requests)
            api = _API.get(path) if method == "POST" else None
            answerable = api is not None and isinstance(body, dict)  # a refused request leaves the replies queued
            reply = self._replies.popleft() if answerable and self._replies else None
        if api is None:
            return 404, _error(path, "not_found_error", f"llm stub: no API at {method} {path}")
        if not isinstance(body, dict):
            return 400, _error(path, "invalid_request_error", "llm stub: the body is not a JSON object")
        if reply is None:
            message = f"llm stub: no reply scripted for request {number} (POST {path})"
            return 400, _error(path, "invalid_request_error", message)
        if reply.status != 200:
            return reply.status, _error(path, reply.error_type, reply.text or "")
        return 200, api(self, reply, body, len(raw))

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"


def _usage(reply: _Reply, request_size: int) -> tuple[int, int]:
    """Token counts as an API would report them: made up, but plausible and deterministic."""
    produced = len((reply.text or "").split()) + sum(len(json.dumps(call.arguments)) // 4 for call in reply.calls)
    return max(1, request_size // 4), max(1, produced)


def _arguments_text(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _chat(stub: LLMStub, reply: _Reply, body: dict[str, Any], size: int) -> dict[str, Any]:
    prompt, completion = _usage(reply, size)
    calls = [
        {
            "id": call.id or stub._id("call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments_text(call)},
        }
        for call in reply.calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else "length" if reply.stop == "max_tokens" else "stop"
    return {
        "id": stub._id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or body.get("model"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        "system_fingerprint": None,
    }


def _responses(stub: LLMStub, reply: _Reply, body: dict[str, Any], size: int) -> dict[str, Any]:
    prompt, completion = _usage(reply, size)
    output: list[dict[str, Any]] = []
    if reply.thinking is not None:
        summary = [{"type": "summary_text", "text": reply.thinking}]
        output.append({"type": "reasoning", "id": stub._id("rs_"), "summary": summary})
    if reply.text is not None:
        output.append(
            {
                "type": "message",
                "id": stub._id("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.calls:
        output.append(
            {
                "type": "function_call",
                "id": stub._id("fc_"),
                "call_id": call.id or stub._id("call_"),
                "name": call.name,
                "arguments": _arguments_text(call),
                "status": "completed",
            }
        )
    cut = reply.stop == "max_tokens" and not reply.calls
    return {
        "id": stub._id("resp_"),
        "object": "response",
        "created_at": time.time(),
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "error": None,
        "model": reply.model or body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "instructions": body.get("instructions"),
        "metadata": {},
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def _messages(stub: LLMStub, reply: _Reply, body: dict[str, Any], size: int) -> dict[str, Any]:
    prompt, completion = _usage(reply, size)
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": "stub-signature"})
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text, "citations": None})
    for call in reply.calls:
        arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments
        content.append({"type": "tool_use", "id": call.id or stub._id("toolu_"), "name": call.name, "input": arguments})
    stop = "tool_use" if reply.calls else {"end": "end_turn"}.get(reply.stop, reply.stop)
    return {
        "id": stub._id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": reply.stop_sequence if stop == "stop_sequence" else None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


_API = {"/v1/chat/completions": _chat, "/v1/responses": _responses, "/v1/messages": _messages}
"""Path -> how a reply is written in that API's form."""


def _error(path: str, error_type: str, message: str) -> dict[str, Any]:
    """The error body of the API at ``path`` (OpenAI's shape for anything that is not Anthropic's)."""
    if path == "/v1/messages":
        return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_stub"}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _handler(stub: LLMStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # a client that stops sending cannot hold a thread for ever

        def do_POST(self) -> None:
            self._serve()

        def do_GET(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, answer = stub._answer(self.command, self.path.split("?")[0], headers, raw)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads ``stub.requests``."""

    return Handler
