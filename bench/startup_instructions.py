"""Instructions a stdio server process runs from its start to its exit, having answered a handshake, by callgrind.

The spawn-and-handshake row of ``stdio_bench.py`` is wall-clock time, which
swings by tens of percent between runs on a shared machine, while the
change a commit makes to it is a few percent. Almost all of that time is
the server process starting (our client spends about 2 ms of it), so this
counts the instructions of the server process alone, which load does not
move. Three programs, each fed a fixed input on stdin and run to its exit
when stdin ends:

- ours: ``examples/echo_server.py``, sent ``initialize`` and
  ``notifications/initialized`` (the handshake era);
- the SDK's: ``sdk_stdio_server.py`` under the SDK's Python, sent the same;
- the floor: the pydantic echo child of ``stdio_bench.py`` (pydantic
  imported, three models built, one line answered), sent one call.

Ours and the floor run from a virtualenv where ``pip install .`` put
mcp_sync (``benchlib.user_python``), with the tree on ``PYTHONPATH``, as the
SDK's runs from one where pip put ``mcp``. Each Python running an empty
program is counted too: the interpreter's start alone, which differs
between virtualenvs (their ``.pth`` files).

Every program is first run without valgrind and its answer checked. The
figures include each interpreter's start and its exit (ours freezes its
objects at exit rather than walking them, see ``serve_stdio``), and are
printed with ours and the floor as shares of the SDK's.

Usage::

    python bench/startup_instructions.py [--trees . /tmp/before] [--sdk-python PATH]

With several trees, ours is counted for each. Needs valgrind; about half a
minute per program.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from benchlib import callgrind_instructions, tree_environment, user_python  # noqa: E402
from stdio_bench import PYDANTIC_CHILD  # noqa: E402
from stdio_instructions import HANDSHAKE_CALL, INITIALIZE, INITIALIZED  # noqa: E402

HANDSHAKE = INITIALIZE + b"\n" + INITIALIZED + b"\n"
CALL = HANDSHAKE_CALL + b"\n"


def checked(command: list[str], stdin: bytes, env: dict[str, str], expected: dict[str, object]) -> list[str]:
    """``command``, after a run without valgrind showed that it answers ``stdin`` with ``expected``'s members."""
    out = subprocess.run(command, input=stdin, env=env, capture_output=True, timeout=120, check=True).stdout
    answer = json.loads(out.splitlines()[0])
    for key, value in expected.items():
        if answer.get(key) != value:
            raise SystemExit(f"{command}: expected {key}={value!r} in its first answer, got {answer}")
    return command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs="+", default=[str(ROOT)])
    parser.add_argument("--sdk-python", help="a Python with mcp installed (default: the peers' cache)")
    args = parser.parse_args()
    if args.sdk_python is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from peers import peer_python

        args.sdk_python = peer_python()
    plain = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    python = user_python()

    counts: dict[str, int] = {}
    # What each interpreter costs before any import, each from its virtualenv.
    counts["the SDK's python, an empty program"] = callgrind_instructions([args.sdk_python, "-c", "pass"], env=plain)
    counts["our python, an empty program"] = callgrind_instructions([python, "-c", "pass"], env=plain)
    sdk = checked([args.sdk_python, str(HERE / "sdk_stdio_server.py")], HANDSHAKE, plain, {"id": 1})
    counts["mcp SDK"] = callgrind_instructions(sdk, env=plain, stdin=HANDSHAKE)
    floor = checked([python, "-c", PYDANTIC_CHILD], CALL, plain, {"id": 7})
    counts["floor, a pydantic echo child"] = callgrind_instructions(floor, env=plain, stdin=CALL)
    for tree in args.trees:
        env = tree_environment(Path(tree).resolve(), plain)
        ours = checked([python, f"{tree}/examples/echo_server.py"], HANDSHAKE, env, {"id": 1})
        counts[f"mcp_sync ({tree})"] = callgrind_instructions(ours, env=env, stdin=HANDSHAKE)

    print("instructions of a stdio server process, start to exit, having answered a handshake (callgrind)")
    print(f"{'program':50}{'instructions':>16}{'of the SDK':>12}")
    for label, count in counts.items():
        print(f"{label:50}{count:16,}{count / counts['mcp SDK']:12.3f}")
    floor_count = counts["floor, a pydantic echo child"]
    for tree in args.trees:
        over = counts[f"mcp_sync ({tree})"] - floor_count
        print(f"mcp_sync ({tree}) over the floor: {over:,} instructions")


if __name__ == "__main__":
    main()
