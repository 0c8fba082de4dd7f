"""Import benchmark: ``from mcp_sync import MCPClient, MCPServer`` against the official SDK's equivalent and pydantic.

The row of the speed table it measures: our import within 1.5 times
``import pydantic``, and beside the SDK's ``from mcp import Client`` plus its
server class (``from mcp.server.mcpserver import MCPServer``) in its own
Python. A floor beside them: pydantic with one model declared
(``defer_build=True``), for any package that declares a pydantic model at
import pays for pydantic's model machinery on the first one.

Every statement runs in a fresh interpreter (``python -c``), interleaved
with the others round after round, after one warm-up run each (so that
bytecode caches exist). Two figures per statement, medians over the rounds:

- ``wall - bare``: the wall time of the whole process minus that of
  ``python -c pass`` in the same interpreter (startup and teardown
  included, as a user's script feels it);
- ``in-process``: the time of the import statement alone, measured inside
  the interpreter with ``time.perf_counter``.

``import pydantic`` runs in each interpreter (their pydantic versions may
differ; both are printed). Then the modules that take longest under
``-X importtime`` during our import (the median of three runs), by their own
time and by their time including what they import, and the own time summed
by top-level package: where to look for what to make lazy. Modules that the
interpreter imports at startup (``site``, ``.pth`` files) are left out.

With ``--instructions``, each statement also runs once under callgrind
(``valgrind --tool=callgrind``): the instructions it costs beyond
``python -c pass``, and the same ratios, figures the machine's load does not
move (this takes about a minute).

Usage::

    python bench/import_bench.py [--rounds 15] [--top 10] [--sdk-python PATH] [--instructions]

Without ``--sdk-python`` the SDK is installed into the peers' cache (see
``tests/peers.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from benchlib import callgrind_instructions  # noqa: E402

OURS = "from mcp_sync import MCPClient, MCPServer"
SDK = "from mcp import Client; from mcp.server.mcpserver import MCPServer"
PYDANTIC = "import pydantic"
ONE_MODEL = (
    "from pydantic import BaseModel, ConfigDict\n"
    "class One(BaseModel):\n"
    "    model_config = ConfigDict(defer_build=True)\n"
    "    x: int"
)
"""The floor of a package that declares one pydantic model at import: pydantic's model machinery loads for it."""
BARE = "pass"

TIMED = "import time\n_t = time.perf_counter()\n{statement}\nprint(time.perf_counter() - _t)"
"""An import timed inside the interpreter (``time`` is built in: importing it costs next to nothing)."""


def environment(ours: bool) -> dict[str, str]:
    """Our interpreter imports this tree's ``mcp_sync``; the SDK's runs without a PYTHONPATH."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up run writes the bytecode caches
    return env


def run_once(python: str, statement: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of ``python -c`` running the timed statement, and the seconds it reports for the import."""
    started = time.perf_counter()
    out = subprocess.run(
        [python, "-c", TIMED.format(statement=statement)], env=env, capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - started
    return wall, float(out.stdout.strip().splitlines()[-1])


def version_of(python: str, env: dict[str, str], package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=False)
    return out.stdout.strip() or "?"


def import_times(python: str, statement: str, env: dict[str, str], runs: int) -> dict[str, tuple[int, int]]:
    """Each module's median (self, cumulative) microseconds under ``-X importtime``."""
    samples: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _ in range(runs):
        out = subprocess.run(
            [python, "-X", "importtime", "-c", statement], env=env, capture_output=True, text=True, check=True
        )
        for line in out.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, cumulative, name = line[len("import time:") :].split("|")
            samples[name.strip()].append((int(own), int(cumulative)))
    return {
        name: (int(statistics.median(s[0] for s in got)), int(statistics.median(s[1] for s in got)))
        for name, got in samples.items()
    }


def print_instructions(cases: dict[str, tuple[str, str, dict[str, str]]], pairs: list[tuple[str, str, str]]) -> None:
    """Each statement's instructions beyond its interpreter's ``pass``, under callgrind, and the ratios."""
    counted = {
        name: callgrind_instructions([python, "-c", statement], env=env)
        for name, (python, statement, env) in cases.items()
    }
    net = {
        name: counted[name] - counted["bare (ours)" if env is cases["bare (ours)"][2] else "bare (SDK)"]
        for name, (_, _, env) in cases.items()
    }
    print("\ninstructions (callgrind, millions; beyond `python -c pass`):")
    for name in cases:
        print(f"  {name:18}{counted[name] / 1e6:10.1f}{net[name] / 1e6:10.1f}")
    print("ratios of instructions:")
    for label, top, bottom in pairs:
        print(f"  {label:36}{net[top] / net[bottom]:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions with callgrind")
    args = parser.parse_args()
    if args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()

    ours_env, sdk_env = environment(True), environment(False)
    cases = {
        "bare (ours)": (sys.executable, BARE, ours_env),
        "pydantic (ours)": (sys.executable, PYDANTIC, ours_env),
        "one model (ours)": (sys.executable, ONE_MODEL, ours_env),
        "mcp_sync": (sys.executable, OURS, ours_env),
        "bare (SDK)": (args.sdk_python, BARE, sdk_env),
        "pydantic (SDK)": (args.sdk_python, PYDANTIC, sdk_env),
        "SDK": (args.sdk_python, SDK, sdk_env),
    }
    for python, statement, env in cases.values():
        run_once(python, statement, env)  # bytecode caches written, files in the page cache
    walls: dict[str, list[float]] = defaultdict(list)
    inside: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        for name, (python, statement, env) in cases.items():
            wall, own = run_once(python, statement, env)
            walls[name].append(wall)
            inside[name].append(own)
    wall_ms = {name: statistics.median(samples) * 1000 for name, samples in walls.items()}
    inside_ms = {name: statistics.median(samples) * 1000 for name, samples in inside.items()}
    net = {
        name: wall_ms[name] - wall_ms["bare (ours)" if env is ours_env else "bare (SDK)"]
        for name, (_, _, env) in cases.items()
    }

    print(f"Imports in fresh interpreters, medians of {args.rounds} interleaved rounds")
    our_pydantic = version_of(sys.executable, ours_env, "pydantic")
    print(f"  ours: {sys.executable} (Python {sys.version.split()[0]}, pydantic {our_pydantic})")
    sdk_versions = ", ".join(f"{p} {version_of(args.sdk_python, sdk_env, p)}" for p in ("mcp", "pydantic"))
    print(f"  SDK:  {args.sdk_python} ({sdk_versions})")
    print(f"  mcp_sync: {OURS}\n  SDK:      {SDK}\n")
    print(f"{'':18}{'wall (ms)':>12}{'wall - bare':>14}{'in-process':>14}")
    for name in cases:
        print(f"{name:18}{wall_ms[name]:12.1f}{net[name]:14.1f}{inside_ms[name]:14.1f}")
    print("\nratios (wall - bare; in-process):")
    pairs = [
        ("mcp_sync / pydantic (goal <= 1.5)", "mcp_sync", "pydantic (ours)"),
        ("one pydantic model / pydantic", "one model (ours)", "pydantic (ours)"),
        ("SDK / pydantic", "SDK", "pydantic (SDK)"),
        ("SDK / mcp_sync", "SDK", "mcp_sync"),
    ]
    for label, top, bottom in pairs:
        print(f"  {label:36}{net[top] / net[bottom]:6.2f}x; {inside_ms[top] / inside_ms[bottom]:6.2f}x")
    if args.instructions:
        print_instructions(cases, pairs)

    startup = import_times(sys.executable, BARE, ours_env, 1)  # what site imports before any statement runs
    modules = import_times(sys.executable, OURS, ours_env, 3)
    modules = {name: times for name, times in modules.items() if name not in startup}
    for title, index in (("own time", 0), ("time including what it imports", 1)):
        print(f"\nour import under -X importtime, the {args.top} slowest modules by {title} (median of 3 runs, ms):")
        ranked = sorted(modules.items(), key=lambda item: item[1][index], reverse=True)[: args.top]
        for name, (own, cumulative) in ranked:
            print(f"  {own / 1000:8.1f} own {cumulative / 1000:8.1f} cumulative  {name}")
    packages: dict[str, int] = defaultdict(int)
    for name, (own, _) in modules.items():
        packages[name.split(".")[0]] += own
    ranked_packages = sorted(packages.items(), key=lambda item: item[1], reverse=True)[: args.top]
    print(f"\nour import, own time summed by top-level package, the {args.top} largest (ms):")
    print("  " + "; ".join(f"{name} {own / 1000:.1f}" for name, own in ranked_packages))
    total = sum(own for own, _ in modules.values())
    mcp_sync_own = sum(own for name, (own, _) in modules.items() if name.startswith("mcp_sync"))
    print(
        f"\n  all modules: {total / 1000:.1f} ms own time, of which mcp_sync.* {mcp_sync_own / 1000:.1f} ms "
        f"in {sum(name.startswith('mcp_sync') for name in modules)} modules ({len(modules)} modules in all)"
    )


if __name__ == "__main__":
    main()
