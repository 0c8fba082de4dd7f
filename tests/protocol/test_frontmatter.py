"""The SKILL.md frontmatter reader (:mod:`mcp_sync.protocol.frontmatter`), held to PyYAML.

Every text the reader accepts must read exactly as PyYAML's ``safe_load``
reads it; what it does not follow it refuses. The accepted cases below must
be accepted (so refusing everything cannot pass), and a seeded generator of
frontmatter-like texts checks "equal to PyYAML, or refused" on thousands more.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from mcp_sync.protocol.frontmatter import parse_frontmatter

ACCEPTED = [
    "name: x\ndescription: plain words",
    "# a comment\nname: x\n\ndescription: \"say \\\"hi\\\"\"\nlicense: 'it''s MIT'\nmetadata:\n  a: b",
    "a: x # comment\nb: 'q' # comment\nc: \"x # y\"  # comment\nd: x#y\ne: x:y\nf: # then nested\n  g: h",
    "a: x\n  # a comment ends a plain string\nb: z",
    "a: |\n  line one\n  line two\n",
    "a: |-\n  x\n  y\n\n\nb: c",
    "a: |+\n  x\n  y\n\n\nb: c",
    "a: >\n  folded\n  words\n\n  new paragraph\n",
    "a: >-\n\n  x\n  y\n",
    "a: |\n\n  after a blank line\n",
    "a: |2\n   one more space\n  y\n",
    "a: |-2\n   x\n",
    "a: |  # a comment on the header\n  x\n",
    "a: |\nb: c",
    "a: |+\n\n\nb: c",
    "a: >+\n  x\n\n",
    "a: |\n  x\n    more indented, kept\n",
    "a: a long plain\n  description that goes on\n\n  over a blank line\nb: c",
    "metadata:\n  k: |\n    text\n    more\n  j: >-\n    folded\n    text\n  i: plain\n    continued",
    "name: pdf-processing\ndescription: Extract text and tables from PDF files.\nlicense: Apache-2.0\n"
    "compatibility: Requires python3\nallowed-tools: Bash(git:*) Read\nmetadata:\n  author: example-org\n"
    '  version: "1.0"',
]
REFUSED = [
    "  a: b",  # indented with nothing to belong to
    "m:\n  a:\n    b: c",  # two levels
    "m:\n  a: b\n    c: d",  # nested, at two indentations
    "m:",  # null
    "m: # nothing",
    "a: x\na: y",  # twice
    "m:\n  a: x\n  a: y",
    "- item",
    '"a": x',
    'a: "open',
    'a: "x" y',
    "a: 'open",
    "a: 'it's'",
    "a: true",
    "a: 1",
    "a: 2024-01-01",
    "a: ~",
    "a: [1]",
    "a: {b: c}",
    "a: &anchor x",
    "a: !tag x",
    "a: -x",
    "a: b: c",
    "a: x\n  b: c",
    "a: >\n  x\n    more indented",
    "a: |\n    x\n  y",
    "a: |\n  x\n   \n  y",
    "a: |\n\tx",
    "a: 'multi\n  line'",
]


def wrap(body: str) -> str:
    return f"---\n{body}\n---\nThe skill's instructions.\n"


@pytest.mark.parametrize("body", ACCEPTED)
def test_what_is_read_is_what_yaml_reads(body: str) -> None:
    assert parse_frontmatter(wrap(body)) == yaml.safe_load(body + "\n")


@pytest.mark.parametrize("body", REFUSED)
def test_what_is_not_understood_is_refused(body: str) -> None:
    with pytest.raises(ValueError, match=r"frontmatter line|tab in the indentation"):
        parse_frontmatter(wrap(body))


def test_the_block_is_found_or_refused() -> None:
    assert parse_frontmatter("\ufeff---\r\nname: x\r\n---") == {"name": "x"}
    for text in ("no block", "---\nname: x\n", "name: x\n---\n"):
        with pytest.raises(ValueError, match="no frontmatter"):
            parse_frontmatter(text)


def test_errors_name_the_files_line() -> None:
    cases = {
        "name: x\n  b: c": 2,  # the plain scalar that began on line 2
        "name: x\n\n- item": 4,
        "a: |\n    x\n  y": 4,
        "m:\n  a: x\n  a: y": 4,
        "a: 'open": 2,
    }
    for body, line in cases.items():
        with pytest.raises(ValueError, match=f"^frontmatter line {line}:"):
            parse_frontmatter(wrap(body))


KEYS = ["name", "description", "license", "meta.data", "x-y"]
SCALARS = ["word", "two words", "x:y", "a#b", "'quoted'", "'it''s'", '"dq \\" x"', '"a # b"', "1.0", "yes", "-x", "~"]
HEADERS = ["|", "|-", "|+", ">", ">-", ">+", "|2", ">1-", "| # c"]
CONTENT = ["text", "more text", "", "  deeper", "x: y", "# not a comment here"]


def generated(rng: random.Random) -> str:
    """A frontmatter-like body: keys with plain/quoted/block values, nested maps, comments and blank lines."""
    lines: list[str] = []
    for _ in range(rng.randint(1, 4)):
        indent = " " * rng.choice([0, 0, 0, 2])
        key = rng.choice(KEYS)
        kind = rng.random()
        if kind < 0.45:
            lines.append(f"{indent}{key}: {rng.choice(SCALARS)}" + rng.choice(["", "", " # c"]))
            lines.extend(f"{indent}  {rng.choice(CONTENT)}" for _ in range(rng.choice([0, 0, 1, 2])))
        elif kind < 0.8:
            lines.append(f"{indent}{key}: {rng.choice(HEADERS)}")
            width = rng.choice([1, 2, 2, 3])
            for _ in range(rng.randint(0, 4)):
                text = rng.choice(CONTENT)
                lines.append(f"{indent}{' ' * width}{text}" if text else rng.choice(["", indent]))
        else:
            lines.append(f"{indent}{key}:")
            for _ in range(rng.randint(0, 2)):
                lines.append(f"{indent}  {rng.choice(KEYS)}: {rng.choice(SCALARS)}")
        if rng.random() < 0.2:
            lines.append(rng.choice(["", "# comment", "  # indented comment"]))
    return "\n".join(lines)


def test_generated_frontmatter_reads_as_yaml_or_is_refused() -> None:
    rng = random.Random(2640)
    accepted = 0
    for _ in range(4000):
        body = generated(rng)
        try:
            ours: Any = parse_frontmatter(wrap(body))
        except ValueError:
            continue
        accepted += 1
        assert ours == yaml.safe_load(body + "\n"), body
    assert accepted > 500  # the generator reaches well past the refusals
