"""Small helpers shared by the benchmark scripts (no dependencies beyond the standard library)."""

from __future__ import annotations

import os
from pathlib import Path


def percentile(samples: list[float], pct: float) -> float:
    """The ``pct`` percentile of ``samples`` (nearest rank)."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def rss_kib(pid: int) -> int:
    """Resident set size of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def child_rss_kib(parent: int | None = None) -> int:
    """Total resident size of the direct children of ``parent`` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent:
            total += rss_kib(int(entry.name))
    return total
