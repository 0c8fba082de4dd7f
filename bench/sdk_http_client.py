"""Measures the official SDK's client against a Streamable HTTP server; prints one JSON object.

Run with the SDK's Python: ``python sdk_http_client.py URL CALLS CLIENTS MODE``. The object
also holds ``echo_shape``: the shape of the ``echo`` result and declaration (see
``benchlib.echo_shape``), which the benchmark checks.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import warnings
from typing import Any

from benchlib import echo_shape, percentile
from mcp import Client

warnings.simplefilter("ignore")  # the SDK flags handshake-era use as deprecated


def wire(model: Any) -> dict[str, Any]:
    """A result or tool model as the JSON it travelled as."""
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


async def measure(url: str, calls: int, clients: int, mode: str) -> dict[str, Any]:
    results: dict[str, Any] = {}
    times = []
    for attempt in range(6):  # the first one warms up what is done once per process
        started = time.perf_counter()
        async with Client(url, mode=mode):
            if attempt:
                times.append(time.perf_counter() - started)
    results["connect_s"] = statistics.median(times)
    client = Client(url, mode=mode)
    await client.__aenter__()
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
    await client.__aexit__(None, None, None)

    per_client = calls // clients

    async def one_client() -> None:
        async with Client(url, mode=mode) as own:
            await own.call_tool("echo", {"text": "warm up"})
            await ready.wait()
            for _ in range(per_client):
                await own.call_tool("echo", {"text": "hello"})

    ready = asyncio.Event()
    tasks = [asyncio.create_task(one_client()) for _ in range(clients)]
    await asyncio.sleep(2.0)  # every client connected and warm
    t = time.perf_counter()
    ready.set()
    await asyncio.gather(*tasks)
    results["concurrent_per_s"] = per_client * clients / (time.perf_counter() - t)
    return results


if __name__ == "__main__":
    url, calls, clients, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(json.dumps(asyncio.run(measure(url, calls, clients, mode))))
