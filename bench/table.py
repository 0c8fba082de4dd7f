"""The speed table in one command: every row with its goal and whether this run meets it.

Runs the benchmark scripts beside this one as subprocesses, each ``--runs``
times (default 3), reads the figures each prints, and prints per row the
median over the runs, every run's figure, the goal, and ``met`` or
``NOT met``. The floors the scripts measure (pydantic with one model, a
pydantic echo child, a client with nothing but pydantic; over HTTP, a client
that only sends one prepared request with ``requests``, and a bare WSGI app
under gunicorn) are printed under the rows they bound.
The machine's load (``/proc/loadavg``) is printed before and after.

=========================  =====================================================  ==========
row                        figure (ours vs the official SDK, in one run)         goal
=========================  =====================================================  ==========
import                     ``from mcp_sync import MCPClient, MCPServer`` /        <= 1.5
                           ``import pydantic`` (import_bench.py)
stdio connect              spawn + handshake, ours / SDK, worse era (stdio_bench)  <= 0.25
cli end to end             ``mcp-sync call`` / SDK Client script (cli_bench.py)   <= 0.3
stdio server RSS           after the calls, ours / SDK, worse era (stdio_bench)   <= 0.4
stdio calls/s              share of a bare JSON-RPC loop, worse era (stdio_bench) >= 0.40
stdio eras                 stateless / handshake calls/s, as a gap <= 10%         >= 0.90
HTTP calls/s               N clients, ours / best SDK, worse era (http_bench.py)  >= 1.5
HTTP p99                   N clients, ours / best SDK, worse era                  <= 1.0
HTTP server CPU per call   N clients, ours / SDK's JSON server, worse era         <= 0.3
=========================  =====================================================  ==========

A row whose line a script no longer prints shows ``?`` (the scripts
change; their output is read by the patterns in :data:`PATTERNS`).

Usage::

    python bench/table.py [--runs 3] [--quick] [--only import,stdio,cli,http] [--sdk-python PATH]

``--quick`` runs each script with fewer rounds and calls (minutes instead
of a quarter of an hour; figures noisier).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SCRIPTS = {
    "import": ("import_bench.py", ["--rounds", "15"], ["--rounds", "5", "--top", "3"]),
    "stdio": ("stdio_bench.py", ["--calls", "3000"], ["--calls", "500"]),
    "cli": ("cli_bench.py", ["--rounds", "7"], ["--rounds", "3"]),
    "http": ("http_bench.py", ["--calls", "2000"], ["--calls", "400"]),
}
"""Each script: its file, its arguments, and its arguments under ``--quick``."""

NUMBER = r"([-+]?\d+(?:\.\d+)?)"


def stdio_row(label: str) -> str:
    """A row of stdio_bench's table: the label, then handshake, stateless and SDK figures."""
    return rf"^{re.escape(label)}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}"


PATTERNS = {
    "import": rf"mcp_sync / pydantic \(goal <= 1\.5\)\s+{NUMBER}x",
    "import floor": rf"one pydantic model / pydantic\s+{NUMBER}x",
    "connect": stdio_row("cold connect (s)"),
    "rss": stdio_row("server RSS after calls (MiB)"),
    "share handshake": rf"sequential calls/s, handshake: {NUMBER}%",
    "share stateless": rf"sequential calls/s, stateless: {NUMBER}%",
    "era gap": rf"stateless / handshake sequential calls/s: {NUMBER}",
    "connect floor": rf"floor, a pydantic echo child: cold connect \(s\) {NUMBER}, {NUMBER} of the SDK's",
    "rss floor": rf"floor, a pydantic echo child: server RSS after calls \(MiB\) {NUMBER}, {NUMBER} of the SDK's",
    "share floor": rf"floor, a pydantic echo child: sequential calls/s {NUMBER}, {NUMBER}% of the loop",
    "cli": rf"cli end to end, mcp-sync / SDK: {NUMBER}x",
    "cli floor": rf"^pydantic client floor: {NUMBER}x",
    # (the floors of http_bench's last two parts: what a bare WSGI app under gunicorn and a client that only
    # sends one prepared request with requests reach, each over the SDK's best)
    "http cpu floor": rf"^  N clients at once\s+handshake .*\(the floor / .+: {NUMBER}x\)$",
    "http calls floor": rf"^  N clients at once, calls/s .*\(the floor / .+: {NUMBER}x\)$",
    "http p99 floor": rf"^  p99 \(ms\) .*\(the floor / .+: {NUMBER}x\)$",
}
"""What is read from each script's output (``re.MULTILINE``); numbers are captured."""


@dataclass
class Row:
    """One row of the table: how its figure comes from a run's output, and its goal."""

    name: str
    script: str
    figure: Callable[[str], float | None]
    goal: float
    lower_is_better: bool
    floor: Callable[[str], float | None] | None = None
    floor_note: str = ""
    runs: list[float] = field(default_factory=list)
    floors: list[float] = field(default_factory=list)


def numbers(key: str, output: str) -> list[float] | None:
    """The numbers :data:`PATTERNS` ``[key]`` captures in ``output``, or ``None`` when the line is not there."""
    found = re.search(PATTERNS[key], output, re.MULTILINE)
    return [float(group) for group in found.groups()] if found else None


def first(key: str) -> Callable[[str], float | None]:
    return lambda output: (numbers(key, output) or [None])[0]


def stdio_ratio(key: str) -> Callable[[str], float | None]:
    """Ours / the SDK's for a lower-is-better stdio row, the worse of the two eras."""

    def read(output: str) -> float | None:
        got = numbers(key, output)
        return None if got is None else max(got[0], got[1]) / got[2]

    return read


def floor_share(key: str) -> Callable[[str], float | None]:
    return lambda output: (numbers(key, output) or [None, None])[1]


def loop_share_floor(output: str) -> float | None:
    """The pydantic echo child's calls/s as a share of the bare loop's: what no pydantic server goes over."""
    got = numbers("share floor", output)
    return None if got is None else got[1] / 100


def worse_share(output: str) -> float | None:
    shares = [numbers(key, output) for key in ("share handshake", "share stateless")]
    return None if None in shares else min(share[0] for share in shares if share) / 100


def era_gap(output: str) -> float | None:
    got = numbers("era gap", output)
    return None if got is None else min(got[0], 1 / got[0])


def http_table(output: str) -> dict[str, dict[str, list[float]]]:
    """http_bench's table: row label -> column name -> the row's figures (a label may repeat: N-client rows last)."""
    lines = output.splitlines()
    header = next((i for i, line in enumerate(lines) if line.strip().startswith("ours (handshake)")), None)
    if header is None:
        return {}
    names = re.split(r"\s{2,}", lines[header][28:].strip())  # (names hold single spaces; columns are wider)
    table: dict[str, dict[str, list[float]]] = {}
    for line in lines[header + 1 :]:
        if not line.strip() or line.startswith("\n") or len(line) < 28:
            break
        values = line[28:].split()
        if len(values) != len(names):
            break
        for name, value in zip(names, values, strict=True):
            table.setdefault(line[:28].strip(), {}).setdefault(name, []).append(float(value))
    return table


HOSTS = ("ours", "gunicorn")
"""http_bench's columns of our server: embedded, and under gunicorn gthread."""


def http_vs(label: str, sdk: Callable[[str], bool], lower_is_better: bool) -> Callable[[str], float | None]:
    """Ours / the best chosen SDK column in the N-clients row ``label``, the worse of the two eras and of the two
    hosting modes (embedded, gunicorn gthread) when both are printed."""

    def read(output: str) -> float | None:
        row = http_table(output).get(label)
        if not row or "ours (handshake)" not in row or "ours (stateless)" not in row:
            return None
        theirs = [values[-1] for name, values in row.items() if sdk(name)]
        if not theirs:
            return None
        best = min(theirs) if lower_is_better else max(theirs)
        ours = [
            row[f"{host} ({era})"][-1]
            for host in HOSTS
            for era in ("handshake", "stateless")
            if f"{host} ({era})" in row
        ]
        return max(ours) / best if lower_is_better else min(ours) / best

    return read


ROWS = [
    Row("import vs import pydantic", "import", first("import"), 1.5, True, first("import floor"), "one model"),
    Row("stdio spawn+handshake vs SDK", "stdio", stdio_ratio("connect"), 0.25, True,
        floor_share("connect floor"), "pydantic echo child"),
    Row("cli end to end vs SDK script", "cli", first("cli"), 0.3, True, first("cli floor"), "pydantic client"),
    Row("stdio server RSS vs SDK", "stdio", stdio_ratio("rss"), 0.4, True,
        floor_share("rss floor"), "pydantic echo child"),
    Row("stdio calls/s vs bare loop", "stdio", worse_share, 0.4, False, loop_share_floor, "pydantic echo child"),
    Row("stdio eras within 10%", "stdio", era_gap, 0.9, False),
    Row("HTTP N clients calls/s vs SDK", "http",
        http_vs("N clients at once, calls/s", lambda name: name.startswith("SDK "), False), 1.5, False,
        first("http calls floor"), "requests' send alone"),
    Row("HTTP N clients p99 vs SDK", "http",
        http_vs("p99 (ms)", lambda name: name.startswith("SDK "), True), 1.0, True,
        first("http p99 floor"), "requests' send alone"),
    Row("HTTP server CPU/call vs SDK json", "http",
        http_vs("server CPU per call (us)", lambda name: name.startswith("SDK json"), True), 0.3, True,
        first("http cpu floor"), "bare WSGI app, gunicorn"),
]  # fmt: skip


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_script(script: str, arguments: list[str], sdk_python: str | None) -> str:
    command = [sys.executable, str(HERE / script), *arguments]
    if sdk_python is not None:
        command += ["--sdk-python", sdk_python]
    # Bytecode caches written (the scripts' warm-up runs write them): a start-up figure is not one of compiling.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        print(f"  {script} failed (exit {done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
    return done.stdout


def verdict(row: Row, value: float) -> str:
    met = value <= row.goal if row.lower_is_better else value >= row.goal
    return "met" if met else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each script; medians are printed")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls in each script")
    parser.add_argument("--only", help="a comma-separated subset of: " + ", ".join(SCRIPTS))
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else list(SCRIPTS)
    unknown = set(chosen) - set(SCRIPTS)
    if unknown:
        parser.error(f"unknown scripts: {', '.join(sorted(unknown))}")

    started, before = time.monotonic(), load()
    for run in range(args.runs):
        for name in chosen:
            script, full, quick = SCRIPTS[name]
            print(f"run {run + 1}/{args.runs}: {script} (load {load()})", file=sys.stderr, flush=True)
            output = run_script(script, quick if args.quick else full, args.sdk_python)
            for row in ROWS:
                if row.script != name:
                    continue
                value = row.figure(output)
                if value is not None:
                    row.runs.append(value)
                bound = row.floor(output) if row.floor is not None else None
                if bound is not None:
                    row.floors.append(bound)

    print(f"speed table: medians of {args.runs} runs{' (quick)' if args.quick else ''}; ratios ours / theirs")
    print(f"load average before {before}, after {load()}; {time.monotonic() - started:.0f} s")
    print(f"{'row':34}{'median':>8}  {'goal':>7}  {'':8}runs")
    for row in ROWS:
        if row.script not in chosen:
            continue
        goal = f"{'<=' if row.lower_is_better else '>='} {row.goal:g}"
        if not row.runs:
            print(f"{row.name:34}{'?':>8}  {goal:>7}  {'?':8}(not found in {SCRIPTS[row.script][0]}'s output)")
            continue
        median = statistics.median(row.runs)
        runs = ", ".join(f"{value:.2f}" for value in row.runs)
        print(f"{row.name:34}{median:8.2f}  {goal:>7}  {verdict(row, median):8}{runs}")
        if row.floors:
            print(f"{'  floor: ' + row.floor_note:34}{statistics.median(row.floors):8.2f}")


if __name__ == "__main__":
    main()
