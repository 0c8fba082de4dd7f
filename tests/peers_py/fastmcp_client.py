"""fastmcp's client driving an MCP server (``tests/peers_py/mcp_sync_target.py``); prints a JSON report.

Run it with the fastmcp peer virtualenv's python (``tests/peers.py``)::

    python fastmcp_client.py --mode auto --stdio python mcp_sync_target.py
    python fastmcp_client.py --mode legacy --http http://127.0.0.1:8000/mcp
    python fastmcp_client.py --mode legacy --sse http://127.0.0.1:8000/sse

``--mode`` is fastmcp's era negotiation: ``auto`` probes ``server/discover``
(the 2026-07-28 era), ``legacy`` does the initialize handshake. The report
(one JSON object on the last line of stdout) holds what the server answered
to each request, and what the client's handlers saw, for the test to check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import warnings
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError

warnings.simplefilter("ignore")

TIMEOUT = 30.0


def dump(value: Any) -> Any:
    """A pydantic model (or a list of them) as JSON-ready data, in the wire's field names."""
    if isinstance(value, list):
        return [dump(item) for item in value]
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def attempt(call: Any) -> Any:
    """What ``call`` returned, or the error it raised (its type and message)."""
    try:
        return await call
    except Exception as exc:  # the report says which error it was
        return f"{type(exc).__name__}: {exc}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="auto")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", nargs=argparse.REMAINDER)
    target.add_argument("--http")
    target.add_argument("--sse")
    options = parser.parse_args()
    if options.stdio:
        transport: Any = StdioTransport(options.stdio[0], options.stdio[1:], keep_alive=False)
    elif options.http:
        transport = StreamableHttpTransport(options.http)
    else:
        transport = SSETransport(options.sse)

    seen: dict[str, list[Any]] = {"logs": [], "progress": [], "sampled": [], "elicited": []}

    async def on_log(message: mcp_types.LoggingMessageNotificationParams) -> None:
        seen["logs"].append({"level": message.level, "logger": message.logger, "data": message.data})

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen["progress"].append([progress, total, message])

    async def on_sample(messages: Any, params: Any, context: Any) -> str:
        seen["sampled"].append([dump(m.content)["text"] for m in messages])
        return "a fastmcp answer"

    async def on_elicit(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        seen["elicited"].append({"message": message, "schema": params.requested_schema})
        return {"colour": "teal"}

    report: dict[str, Any] = {"seen": seen}
    client = Client(
        transport,
        name="fastmcp-interop",
        roots=[mcp_types.Root(uri="file:///srv/project", name="project")],
        log_handler=on_log,
        sampling_handler=on_sample,
        elicitation_handler=on_elicit,
        timeout=TIMEOUT,
        init_timeout=TIMEOUT,
        mode=options.mode,
    )
    async with client:
        report["protocol_version"] = client.protocol_version
        report["server_info"] = dump(client.server_info) if client.server_info is not None else None
        report["ping"] = await attempt(client.ping())
        report["tools"] = dump(await client.list_tools())
        echo = await client.call_tool("echo", {"text": "hello"})
        report["echo"] = dump(echo.content)
        weather = await client.call_tool("weather", {"city": "Oslo"})
        data = weather.data  # fastmcp builds an object from the output schema
        report["weather"] = {"structured": weather.structured_content, "data": [data.city, data.celsius]}
        try:
            await client.call_tool("broken", {})
            report["broken"] = "no error"
        except ToolError as exc:
            report["broken"] = str(exc)
        raw = await client.call_tool_mcp("broken", {})
        report["broken_raw"] = dump(raw)
        if client.protocol_version != "2026-07-28":  # a 2026-07-28 request names its log level itself
            await client.set_logging_level("debug")
        report["shout"] = dump((await client.call_tool("shout", {"text": "quiet"})).content)
        counted = await client.call_tool("count", {"steps": 3}, progress_handler=on_progress)
        report["count"] = dump(counted.content)
        report["sample"] = dump((await client.call_tool("sample", {"prompt": "hi"})).content)
        report["ask"] = dump((await client.call_tool("ask", {"question": "Colour?"})).content)
        report["resources"] = dump(await client.list_resources())
        report["templates"] = dump(await client.list_resource_templates())
        report["readme"] = dump(await client.read_resource("target://readme"))
        report["logo"] = dump(await client.read_resource("target://logo"))
        report["note"] = dump(await client.read_resource("target://notes/todo"))
        report["prompts"] = dump(await client.list_prompts())
        report["greet"] = dump(await client.get_prompt("greet", {"name": "Ada", "style": "warm"}))
        report["roots"] = (await client.call_tool("roots", {})).content[0].text
        reference = mcp_types.PromptReference(type="ref/prompt", name="greet")
        report["completion"] = dump(await client.complete(reference, {"name": "name", "value": "A"}))
        report["missing"] = await attempt(client.read_resource("target://missing"))
        # A call that times out is cancelled: the server's handler sees it (it records the marker).
        marker = f"timed-out-{os.getpid()}"
        report["marker"] = marker
        report["slow"] = await attempt(client.call_tool("slow", {"marker": marker}, timeout=0.5))
        report["echo_after_timeout"] = dump((await client.call_tool("echo", {"text": "still here"})).content)
        deadline = time.monotonic() + TIMEOUT
        while True:  # the handler records the marker on its own thread, soon after the cancellation
            cancelled = json.loads((await client.call_tool("cancelled_calls", {})).content[0].text)
            if marker in cancelled or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        report["cancelled_calls"] = cancelled
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
