"""The RFC 6570 URI templates of resource templates: parsed once, here.

A resource template such as ``"users://{id}/profile"`` is read by one parser,
which gives both the names of its variables (matched against a decorated
function's parameters) and the regular expression that recognises the URIs
it stands for (and reads the variables' values back out of them).

Two kinds of expression are understood, the ones a URI can be matched
against without ambiguity:

* ``{name}`` -- simple expansion: one path segment (no ``/``, ``?`` or ``#``);
* ``{+name}`` -- reserved expansion: any non-empty text, slashes included.

Anything else is refused with ``ValueError`` when the template is parsed, so
a template that could never match is caught at registration rather than at
the first read: an empty ``{}``, an unclosed ``{`` or a stray ``}``, other
operators (``{#x}``, ``{?x}``, ...), several variables in one expression
(``{a,b}``), modifiers (``{x*}``, ``{x:3}``), names that are not Python
identifiers (they become function parameters) and a name used twice.

>>> template = UriTemplate.parse("files://{+path}/v{version}")
>>> template.variables
('path', 'version')
>>> template.match("files://docs/a/b.txt/v2")
{'path': 'docs/a/b.txt', 'version': '2'}
>>> template.match("files://docs/v2/extra") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["TemplateVariable", "UriTemplate", "template_pattern", "template_variables"]

_SEGMENT = r"[^/?#]+"
"""What a simple ``{name}`` matches: one path segment, stopping at the query and fragment."""
_ANYTHING = r".+"
"""What a reserved ``{+name}`` matches: the rest, slashes included."""


@dataclass(frozen=True)
class TemplateVariable:
    """One ``{name}`` or ``{+name}`` expression of a template."""

    name: str
    reserved: bool = False
    """Whether it is ``{+name}``, matching across ``/``."""

    @property
    def regex(self) -> str:
        """The named group that matches this variable's value."""
        return f"(?P<{self.name}>{_ANYTHING if self.reserved else _SEGMENT})"


@dataclass(frozen=True)
class UriTemplate:
    """A parsed URI template: literal text and variables, in order.

    Build one with :meth:`parse`. ``parts`` alternates literal strings and
    :class:`TemplateVariable` s as they appear in the template.

    >>> UriTemplate.parse("weather://{city}/today").variables
    ('city',)
    >>> UriTemplate.parse("weather://{city}/today").match("weather://Paris/today")
    {'city': 'Paris'}
    """

    template: str
    parts: tuple[str | TemplateVariable, ...]
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = "".join(re.escape(p) if isinstance(p, str) else p.regex for p in self.parts)
        # A frozen dataclass: the compiled pattern is derived data, set once here.
        object.__setattr__(self, "pattern", re.compile(regex + r"\Z"))

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        """Read ``template``; ``ValueError`` naming the problem when it is not one this module serves.

        >>> UriTemplate.parse("notes://{id}").parts
        ('notes://', TemplateVariable(name='id', reserved=False))
        >>> UriTemplate.parse("notes://{a,b}")
        Traceback (most recent call last):
        ...
        ValueError: URI template 'notes://{a,b}': unsupported expression {a,b} (only {name} and {+name})
        """
        parts: list[str | TemplateVariable] = []
        seen: set[str] = set()
        position = 0
        while position < len(template):
            opening = template.find("{", position)
            literal = template[position:] if opening < 0 else template[position:opening]
            if "}" in literal:
                raise ValueError(f"URI template {template!r}: '}}' without a matching '{{'")
            if literal:
                parts.append(literal)
            if opening < 0:
                break
            closing = template.find("}", opening)
            if closing < 0:
                raise ValueError(f"URI template {template!r}: '{{' is never closed")
            variable = _expression(template, template[opening + 1 : closing])
            if variable.name in seen:
                raise ValueError(f"URI template {template!r}: the variable {variable.name!r} appears twice")
            seen.add(variable.name)
            parts.append(variable)
            position = closing + 1
        return cls(template, tuple(parts))

    @property
    def variables(self) -> tuple[str, ...]:
        """The variable names, in order of appearance."""
        return tuple(p.name for p in self.parts if isinstance(p, TemplateVariable))

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values when ``uri`` is one of this template's URIs, else ``None``."""
        found = self.pattern.match(uri)
        return None if found is None else found.groupdict()


def _expression(template: str, text: str) -> TemplateVariable:
    """The variable of the expression ``{text}``, or ``ValueError`` when it is not ``name`` or ``+name``."""
    reserved = text.startswith("+")
    name = text[1:] if reserved else text
    # isidentifier also refuses "", "a,b", "#a", "a*", "a:3" and "a.b": every form that is not served.
    if not name.isidentifier():
        raise ValueError(f"URI template {template!r}: unsupported expression {{{text}}} (only {{name}} and {{+name}})")
    return TemplateVariable(name, reserved)


def template_variables(uri_template: str) -> list[str]:
    """The variable names of a URI template, e.g. ``["city"]`` for ``"weather://{city}"``.

    >>> template_variables("files://{+path}/v{version}")
    ['path', 'version']
    """
    return list(UriTemplate.parse(uri_template).variables)


def template_pattern(uri_template: str) -> re.Pattern[str]:
    """The regular expression matching the URIs of a template, with one named group per variable.

    >>> template_pattern("users://{id}").match("users://7").group("id")
    '7'
    """
    return UriTemplate.parse(uri_template).pattern
