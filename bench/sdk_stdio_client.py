"""Measures the official SDK's client against a stdio server; prints one JSON object.

The object also holds ``echo_shape``: the shape of the ``echo`` result and
declaration (see ``benchlib.echo_shape``), which the benchmark checks.

Run with the SDK's Python: ``python sdk_stdio_client.py MODE CALLS CONNECTS SERVER_COMMAND...``. The cold
connect is the median of ``CONNECTS`` connections, each to a new server process; the last stays for the rest.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from benchlib import child_rss_kib, echo_shape, percentile
from mcp import Client, StdioServerParameters

MODE = "auto"


def wire(model: Any) -> dict[str, Any]:
    """A result or tool model as the JSON it travelled as."""
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


async def measure(calls: int, connects: int, command: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    results: dict[str, Any] = {}
    samples = []
    for attempt in range(connects):
        started = time.perf_counter()
        client = Client(params, mode=MODE)
        await client.__aenter__()
        samples.append(time.perf_counter() - started)
        if attempt < connects - 1:
            await client.__aexit__(None, None, None)
    results["connect_s"] = statistics.median(samples)
    warm = await client.call_tool("echo", {"text": "warm up"})
    tool = next(tool for tool in (await client.list_tools()).tools if tool.name == "echo")
    results["echo_shape"] = echo_shape(wire(warm), wire(tool))

    latencies = []
    for _ in range(calls):
        t = time.perf_counter()
        await client.call_tool("echo", {"text": "hello"})
        latencies.append(time.perf_counter() - t)
    results["sequential_per_s"] = calls / sum(latencies)
    results["p50_ms"] = percentile(latencies, 50) * 1000
    results["p99_ms"] = percentile(latencies, 99) * 1000
    results["calls_rss_mib"] = child_rss_kib() / 1024

    async def worker(n: int) -> None:
        for _ in range(n):
            await client.call_tool("echo", {"text": "hello"})

    t = time.perf_counter()
    await asyncio.gather(*(worker(calls // 16) for _ in range(16)))
    results["inflight16_per_s"] = (calls // 16) * 16 / (time.perf_counter() - t)

    for size, key in ((1_000_000, "echo_1mb_s"), (10_000_000, "echo_10mb_s")):
        text = "x" * size
        t = time.perf_counter()
        result = await client.call_tool("echo", {"text": text})
        results[key] = time.perf_counter() - t
        assert len(result.content[0].text) == size

    results["server_rss_mib"] = child_rss_kib() / 1024
    t = time.perf_counter()
    await client.__aexit__(None, None, None)
    results["close_s"] = time.perf_counter() - t
    return results


if __name__ == "__main__":
    MODE = sys.argv[1]
    print(json.dumps(asyncio.run(measure(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]))))
