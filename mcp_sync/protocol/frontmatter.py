"""The YAML frontmatter of a SKILL.md, read with a YAML subset and no YAML library.

The subset is what Agent Skills frontmatter uses: a mapping of keys to
strings, and keys (such as ``metadata``) that open one level of nested
mapping of strings. A string may be written

- plain (``name: pdf-processing``), also over several more-indented lines,
  which are folded into one (YAML's line folding);
- single- or double-quoted, on one line;
- as a literal (``|``) or folded (``>``) block scalar, with a chomping
  indicator (``-``, ``+``) and an indentation indicator;

and a line may end in a ``# comment``. What YAML would read as anything else
than a string (a number, a boolean, null, a list, an anchor, a tag), or what
this reader does not follow (tabs in indentation, deeper nesting, multi-line
quoted strings), raises ``ValueError``: it refuses rather than guesses, so
a server and a client that both read a SKILL.md here never read it
differently from a YAML library (``tests/protocol/test_frontmatter.py`` holds it to
PyYAML).

>>> parse_frontmatter("---\\nname: x\\ndescription: >-\\n  Fills in\\n  PDF forms.\\nmetadata:\\n  author: me\\n---\\n")
{'name': 'x', 'description': 'Fills in PDF forms.', 'metadata': {'author': 'me'}}
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_frontmatter"]

_FRONTMATTER = re.compile(r"^---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
_KEY = re.compile(r"^([A-Za-z0-9_.\-/]+):(?:[ \t]+(.*))?$")
_BLOCK_HEADER = re.compile(r"^([|>])([-+][1-9]?|[1-9][-+]?)?(?:[ \t]+#.*)?$")
_SINGLE_QUOTED = re.compile(r"^'((?:[^']|'')*)'(?:[ \t]+#.*)?$")
# Only from the start of a run of blanks: searched from each blank of a long run, it took quadratic time.
_COMMENT = re.compile(r"(?<![ \t])[ \t]+#.*$")
_NOT_A_STRING = re.compile(
    r"^(?:true|false|yes|no|on|off|y|n|null|~|[-+]?[0-9.][0-9_.:eE+\-]*|[-+]?\.inf|\.nan)$", re.I
)
_INDICATORS = tuple("[]{}&*!|>%@`,#?:-\"'")


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter at the start of a SKILL.md, as a dict; ``ValueError`` when missing or not understood.

    >>> parse_frontmatter("---\\nname: pdf\\ndescription: 'Fill PDFs'  # short\\n---\\nBody\\n")
    {'name': 'pdf', 'description': 'Fill PDFs'}
    """
    found = _FRONTMATTER.match(text.removeprefix("\ufeff"))
    if found is None:
        raise ValueError("no frontmatter: SKILL.md must begin with a --- delimited YAML block")
    return _Reader(re.split(r"\r?\n", found.group(1))).top_level()  # not splitlines(): it drops a last empty line


class _Reader:
    """A cursor over the frontmatter's lines (numbered from 2: line 1 is the opening ``---``)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.index = 0

    def fail(self, why: str, index: int) -> ValueError:
        """The error for the line at ``index`` (the file's line ``index + 2``)."""
        return ValueError(f"frontmatter line {index + 2}: {why}")

    def top_level(self) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self._skip_to_content():
            indent, key, raw = self._entry()
            if indent:
                raise self.fail("indented with no mapping to belong to", self.index - 1)
            if key in result:
                raise self.fail(f"{key!r} is given twice", self.index - 1)
            result[key] = self._nested() if raw is None else self._value(raw, 0)
        return result

    def _nested(self) -> dict[str, str]:
        """The one-level mapping under a key with no value: the more-indented ``key: value`` lines that follow."""
        result: dict[str, str] = {}
        indent: int | None = None
        while self._skip_to_content() and _indent(self.lines[self.index]) > 0:
            line_indent, key, raw = self._entry()
            if indent is None:
                indent = line_indent
            if line_indent != indent or raw is None:
                raise self.fail("only one level of nesting, at one indentation, is understood", self.index - 1)
            if key in result:
                raise self.fail(f"{key!r} is given twice", self.index - 1)
            result[key] = self._value(raw, indent)
        if indent is None:  # YAML reads ``key:`` alone as null, which is no string
            raise self.fail("a key with no value", self.index - 1)
        return result

    def _skip_to_content(self) -> bool:
        """Move past blank and comment lines; whether a line is left."""
        while self.index < len(self.lines):
            stripped = self.lines[self.index].strip()
            if stripped and not stripped.startswith("#"):
                return True
            self.index += 1
        return False

    def _entry(self) -> tuple[int, str, str | None]:
        """``(indent, key, raw value)`` of the ``key: value`` line at the cursor, which moves past it."""
        line = self.lines[self.index]
        found = _KEY.match(line.strip())
        if found is None:
            raise self.fail("not a 'key: value' line", self.index)
        self.index += 1
        raw = (found.group(2) or "").strip()
        return _indent(line), found.group(1), (None if not raw or raw.startswith("#") else raw)

    def _value(self, raw: str, indent: int) -> str:
        """The string that starts as ``raw`` on a key's line at ``indent``, reading on as far as it goes."""
        start = self.index - 1
        header = _BLOCK_HEADER.match(raw)
        if header is not None:
            return self._block(header.group(1), header.group(2) or "", indent, start)
        if raw[0] == '"':
            try:
                value, end = json.JSONDecoder().raw_decode(raw)  # a JSON string is a YAML double-quoted one
            except ValueError as exc:
                raise self.fail("a double-quoted string must close on its line, with JSON's escapes", start) from exc
            if raw[end:].strip() and not _COMMENT.fullmatch(raw[end:]):
                raise self.fail("text after a quoted string", start)
            return str(value)
        if raw[0] == "'":
            single = _SINGLE_QUOTED.match(raw)
            if single is None:
                raise self.fail("a single-quoted string must close on its line", start)
            return single.group(1).replace("''", "'")
        return self._plain(raw, indent, start)

    def _plain(self, first: str, indent: int, start: int) -> str:
        """A plain scalar: ``first``, and more-indented continuation lines folded onto it.

        A comment ends the scalar: after one, a continuation line is an error
        to YAML, so it is left to be refused as a line that belongs nowhere.
        """
        words = [_COMMENT.sub("", first)]
        blank = 0
        while words[0] == first and self.index < len(self.lines):
            line = self.lines[self.index]
            if not line.strip():
                blank += 1
            elif _indent(line) > indent and not line.strip().startswith("#"):
                words.append("\n" * blank or " ")
                words.append(line.strip())
                blank = 0
            else:
                break
            self.index += 1
        value = "".join(words)
        if value.startswith(_INDICATORS) or ": " in value or " #" in value or value.endswith(":"):
            raise self.fail(f"{value!r} is not a plain string (quote it)", start)
        if _NOT_A_STRING.match(value):
            raise self.fail(f"{value!r} would be read as a number, a boolean or null (quote it)", start)
        return value

    def _block(self, style: str, indicators: str, parent: int, start: int) -> str:
        """A literal (``|``) or folded (``>``) block scalar under a key at indentation ``parent``."""
        chomping = "".join(c for c in indicators if c in "-+")
        explicit = "".join(c for c in indicators if c.isdigit())
        width: int | None = parent + int(explicit) if explicit else None
        lines: list[str] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if line.strip():
                if _indent(line) <= parent:
                    break
                width = _indent(line) if width is None else width
                if _indent(line) < width:
                    raise self.fail("less indented than the block's first line", self.index)
            lines.append(line)
            self.index += 1
        if any(not line.strip() and len(line) > (width or parent) for line in lines):
            raise self.fail("a blank line longer than the block's indentation", start)  # content to YAML: not followed
        texts = [line[width:] if line.strip() and width is not None else "" for line in lines]
        while texts and not texts[-1]:
            texts.pop()
        trailing = len(lines) - len(texts)
        if style == ">":
            if any(text[:1] in (" ", "\t") for text in texts):
                raise self.fail("a folded block with more-indented lines is not understood", start)
            value = _fold(texts)
        else:
            value = "\n".join(texts)
        if not texts:  # an empty block: only "keep" keeps its line breaks
            return "\n" * trailing if chomping == "+" else ""
        if chomping == "-":
            return value
        return value + "\n" + ("\n" * trailing if chomping == "+" else "")


def _indent(line: str) -> int:
    """The spaces that indent ``line``; a tab among them is refused (YAML forbids tabs there)."""
    indent = len(line) - len(line.lstrip(" "))
    if line[indent : indent + 1] == "\t":
        raise ValueError(f"a tab in the indentation of {line!r}")
    return indent


def _fold(texts: list[str]) -> str:
    """The folding of a ``>`` block's lines: a break between two lines becomes a space, n empty lines n breaks."""
    parts: list[str] = []
    empty = 0
    for text in texts:
        if not text:
            empty += 1
            continue
        if parts:
            parts.append("\n" * empty or " ")
        else:
            parts.append("\n" * empty)
        parts.append(text)
        empty = 0
    return "".join(parts)
