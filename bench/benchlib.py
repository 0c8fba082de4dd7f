"""Small helpers shared by the benchmark scripts (no dependencies beyond the standard library)."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


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


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user and system) a process has used so far, from /proc; 0.0 for ``None``."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(parent: int) -> list[int]:
    """The process ids of ``parent``'s direct children, from /proc (a process gone meanwhile is left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def child_rss_kib(parent: int | None = None) -> int:
    """Total resident size of the direct children of ``parent`` (default: this process)."""
    return sum(rss_kib(pid) for pid in child_pids(os.getpid() if parent is None else parent))


TEXT_ONLY: dict[str, Any] = {
    "content": ["text"],
    "structuredContent": False,
    "isError": False,
    "outputSchema": False,
    "inputSchema": {"text": "string", "required": ["text"]},
}
"""The shape every side's ``echo`` must have: one text block, no structured copy, no output schema."""

WORKLOAD = "echo(text: str) returns text content only, no structuredContent and no outputSchema, on both sides"
"""How the ``echo`` tool is declared, for the benchmarks' headers."""

PYDANTIC_RESULT_MODELS = """from typing import Literal
from pydantic import BaseModel
class Text(BaseModel):
    type: Literal["text"] = "text"
    text: str
class Result(BaseModel):
    content: list[Text]
    isError: bool = False
"""
"""Source of the two pydantic models an echo call's text-only result fits, for the floors' scripts (``-c`` code):
the pydantic echo child builds its result with them, the pydantic client reads the call's result into them."""


def echo_shape(result: dict[str, Any], tool: dict[str, Any] | None) -> dict[str, Any]:
    """The shape of an ``echo`` result (wire JSON) and of the tool's declaration (``None``: not listed)."""
    shape: dict[str, Any] = {
        "content": [block.get("type") for block in result.get("content", [])],
        "structuredContent": "structuredContent" in result,
        "isError": bool(result.get("isError")),
    }
    if tool is not None:
        schema = tool.get("inputSchema", {})
        properties = {name: spec.get("type") for name, spec in schema.get("properties", {}).items()}
        shape["outputSchema"] = "outputSchema" in tool
        shape["inputSchema"] = {**properties, "required": sorted(schema.get("required", []))}
    return shape


def check_echo_shapes(shapes: dict[str, dict[str, Any]]) -> None:
    """Exit with a message unless every side's ``echo`` has the :data:`TEXT_ONLY` shape.

    A side whose tool is not listed (a bare HTTP server) is checked on its result alone.
    """
    wrong = {name: shape for name, shape in shapes.items() if any(TEXT_ONLY[k] != v for k, v in shape.items())}
    if wrong:
        lines = [f"  {name}: {json.dumps(shape, sort_keys=True)}" for name, shape in shapes.items()]
        raise SystemExit(
            "the echo tools differ in shape, so the sides would not do the same work:\n"
            + "\n".join(lines)
            + f"\nexpected on every side: {json.dumps(TEXT_ONLY, sort_keys=True)}"
        )


def callgrind_instructions(
    command: list[str], *, children: bool = False, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> int:
    """The instructions ``valgrind --tool=callgrind`` counts for a run of ``command``: a figure load does not move.

    With ``children`` every process the command starts is counted too
    (``--trace-children``), and the figure is their sum. ``stdin`` is what
    the command reads on its standard input (by default, this process's).
    The hash seed is fixed, so that two runs of one program count alike.
    Needs valgrind; under it a program runs some fifty times slower.
    """
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out.%p"  # (one file per process)
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        if children:
            valgrind.append("--trace-children=yes")
        environment = {**(os.environ if env is None else env), "PYTHONHASHSEED": "0"}
        subprocess.run(
            [*valgrind, *command], check=True, env=environment, capture_output=True, timeout=1800, input=stdin
        )
        totals = [total for path in Path(scratch).glob("callgrind.out.*") if (total := _callgrind_total(path))]
    if not totals:
        raise RuntimeError(f"callgrind wrote no totals for {command}")
    return sum(totals)


def _callgrind_total(path: Path) -> int | None:
    """The instructions a callgrind file counts (its ``summary:`` or ``totals:`` line, which agree)."""
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return None


@functools.cache
def user_python() -> str:
    """The python of a virtualenv where ``pip install .`` put mcp_sync, as on a user's machine; made on first use.

    The processes whose start a row times (our server, ``mcp-sync call``, the
    floors' children) run there, with ``PYTHONPATH`` naming the tree measured
    (:func:`tree_environment`), so that the tree's code runs, not the copy
    installed. The SDK runs from a virtualenv made the same way (see
    ``tests/peers.py``). The development virtualenv is no place to time a
    start: its ``.pth`` files (the editable install's import hook, coverage's
    start-up hook) cost each process started from it some 50M instructions
    (about 10 ms) that no user's install does.

    Kept in the peers' cache (``tests/peers.py``'s ``cache_dir``), one per
    content of ``setup.cfg`` and Python version.
    """
    # Imported here, not at the top: this module is also imported under the SDK's Python, which has no pytest.
    sys.path.insert(0, str(ROOT / "tests"))
    from peers import cache_dir

    cache = cache_dir()
    key = hashlib.sha256((ROOT / "setup.cfg").read_bytes() + sys.version.encode()).hexdigest()[:12]
    venv = cache / f"venv-mcp_sync-{key}"
    python = venv / "bin" / "python"
    with open(cache / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another benchmark making it meanwhile: wait for it
        if not (venv / ".complete").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
            pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)]
            subprocess.run(pip, check=True, timeout=900)
            (venv / ".complete").write_text("pip install . done\n")
    return str(python)


def tree_environment(tree: Path = ROOT, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``PYTHONPATH`` naming ``tree``: a process of
    :func:`user_python` then runs that tree's mcp_sync. Bytecode caches are written and used, as at a user's."""
    env = {**(os.environ if base is None else base), "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
