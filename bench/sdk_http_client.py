"""Measures the official SDK's client against a Streamable HTTP server; prints one JSON object.

Run with the SDK's Python: ``python sdk_http_client.py URL CALLS CLIENTS MODE [SERVER_PID]``. The
object also holds ``echo_shape``: the shape of the ``echo`` result and declaration (see
``benchlib.echo_shape``), which the benchmark checks. With ``SERVER_PID`` it also holds the
server's CPU time per call (µs) in the sequential and the concurrent part.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import warnings
from typing import Any

from benchlib import cpu_seconds, echo_shape, percentile
from mcp import Client

warnings.simplefilter("ignore")  # the SDK flags handshake-era use as deprecated


def wire(model: Any) -> dict[str, Any]:
    """A result or tool model as the JSON it travelled as."""
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


async def measure(url: str, calls: int, clients: int, mode: str, server_pid: int | None) -> dict[str, Any]:
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
    cpu = cpu_seconds(server_pid)
    for _ in range(calls):
        t = time.perf_counter()
        await client.call_tool("echo", {"text": "hello"})
        latencies.append(time.perf_counter() - t)
    results["server_cpu_seq_us"] = (cpu_seconds(server_pid) - cpu) / calls * 1e6
    results["sequential_per_s"] = calls / sum(latencies)
    results["p50_ms"] = percentile(latencies, 50) * 1000
    results["p99_ms"] = percentile(latencies, 99) * 1000
    await client.__aexit__(None, None, None)

    per_client = calls // clients
    concurrent: list[float] = []

    async def one_client() -> None:
        async with Client(url, mode=mode) as own:
            await own.call_tool("echo", {"text": "warm up"})
            await ready.wait()
            for _ in range(per_client):
                t = time.perf_counter()
                await own.call_tool("echo", {"text": "hello"})
                concurrent.append(time.perf_counter() - t)
            through.append(1)
            if len(through) == clients:
                finished.set()
            await done.wait()  # nobody closes before everyone is through: closing is not part of the figure

    ready, finished, done = asyncio.Event(), asyncio.Event(), asyncio.Event()
    through: list[int] = []
    tasks = [asyncio.create_task(one_client()) for _ in range(clients)]
    await asyncio.sleep(2.0)  # every client connected and warm
    cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
    t = time.perf_counter()
    ready.set()
    await finished.wait()
    elapsed = time.perf_counter() - t
    results["server_cpu_conc_us"] = (cpu_seconds(server_pid) - cpu) / (per_client * clients) * 1e6
    results["client_cpu_conc_us"] = (time.process_time() - own_cpu) / (per_client * clients) * 1e6
    done.set()
    await asyncio.gather(*tasks)
    results["concurrent_per_s"] = per_client * clients / elapsed
    results["concurrent_p50_ms"] = percentile(concurrent, 50) * 1000
    results["concurrent_p99_ms"] = percentile(concurrent, 99) * 1000
    return results


if __name__ == "__main__":
    url, calls, clients, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    pid = int(sys.argv[5]) if len(sys.argv) > 5 else None
    print(json.dumps(asyncio.run(measure(url, calls, clients, mode, pid))))
