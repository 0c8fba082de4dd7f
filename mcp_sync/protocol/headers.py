"""The HTTP headers of 2026-07-28 that mirror a request's body: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``.

One codec, and one mapping, for both roles. The client keeps only the
tools whose ``x-mcp-header`` annotations :func:`header_declarations`
accepts (:func:`screen_tools`) and sends :func:`request_headers`; the
server finds what ``Mcp-Name`` mirrors with :func:`named_param`, reads a
value with :func:`header_text` and checks the ``Mcp-Param-*`` headers
against the body with :func:`param_headers_problem`. An invalid annotation raises
:class:`InvalidHeaderDeclaration` here, always: a server that wants "no
headers to check" for such a tool catches it.

>>> header_value("us-west1"), header_value(" padded "), header_value(42), header_value(True)
('us-west1', '=?base64?IHBhZGRlZCA=?=', '42', 'true')
>>> header_text("=?base64?SGVsbG8sIOS4lueVjA==?=")
'Hello, 世界'
>>> header_declarations({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}})
{'Region': ('region',)}
>>> request_headers("tools/call", {"name": "deploy", "arguments": {"region": "eu"}}, {"Region": ("region",)})
{'Mcp-Method': 'tools/call', 'Mcp-Name': 'deploy', 'Mcp-Param-Region': 'eu'}
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .tasks import NAMED_BY_TASK_ID

__all__ = [
    "HEADER_ANNOTATION",
    "NAMED_BY",
    "TOKEN",
    "InvalidHeaderDeclaration",
    "header_declarations",
    "header_text",
    "header_value",
    "mirrored_argument",
    "named_param",
    "param_header_problem",
    "param_headers_problem",
    "request_headers",
    "screen_tools",
]

HEADER_ANNOTATION = "x-mcp-header"
"""The input-schema keyword that mirrors a tool argument into an ``Mcp-Param-{Name}`` header."""
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a parameter, and which parameter."""
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP field-name token (RFC 9110 ``1*tchar``)."""

_HEADER_TYPES = ("string", "integer", "boolean")
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
"""The Base64 form of a value; a plain string that looks like it must be encoded."""
_PLAIN = re.compile(r"[\x20-\x7e]*")
"""What a client sends as it is: printable ASCII (no tabs, which a server would strip)."""
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


class InvalidHeaderDeclaration(ValueError):
    """A tool's ``x-mcp-header`` annotation breaks the rules, so the tool must not be used over HTTP."""


def header_declarations(schema: Any) -> dict[str, tuple[str, ...]]:
    """A tool input schema's ``x-mcp-header`` annotations: header name -> property path.

    Raises :class:`InvalidHeaderDeclaration` saying why when an annotation
    is not a token, is repeated (ignoring case), sits on a property that is
    not a string, integer or boolean, or is not reached from the root
    through ``properties`` alone.

    >>> header_declarations({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}})
    Traceback (most recent call last):
    ...
    mcp_sync.protocol.headers.InvalidHeaderDeclaration: x-mcp-header 'N' is on property n of type 'number'
    """
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        properties = node.get("properties")
        for name, prop in properties.items() if isinstance(properties, Mapping) else ():
            if not isinstance(prop, Mapping):
                continue
            where = ".".join((*path, name))
            if HEADER_ANNOTATION in prop:
                declared = prop[HEADER_ANNOTATION]
                if not isinstance(declared, str) or not TOKEN.fullmatch(declared):
                    raise InvalidHeaderDeclaration(
                        f"x-mcp-header {declared!r} on property {where} is not a header name"
                    )
                if prop.get("type") not in _HEADER_TYPES:
                    raise InvalidHeaderDeclaration(
                        f"x-mcp-header {declared!r} is on property {where} of type {prop.get('type')!r}"
                    )
                if declared.lower() in (other.lower() for other in found):
                    raise InvalidHeaderDeclaration(f"x-mcp-header {declared!r} is declared twice")
                found[declared] = (*path, name)
            walk(prop, (*path, name))

    if isinstance(schema, Mapping):
        walk(schema, ())
    stray = _annotations(schema) - len(found)
    if stray:
        raise InvalidHeaderDeclaration(f"{stray} x-mcp-header annotation(s) where no chain of properties reaches")
    return found


def _annotations(node: Any) -> int:
    """How many ``x-mcp-header`` keywords a schema holds, wherever they are (counted, not identified:
    one property object shared by two places of a schema counts twice, as it would once parsed from JSON)."""
    if isinstance(node, Mapping):
        return sum((key == HEADER_ANNOTATION) + _annotations(value) for key, value in node.items())
    if isinstance(node, list):
        return sum(_annotations(item) for item in node)
    return 0


def header_value(value: Any) -> str | None:
    """What an ``Mcp-Name`` or ``Mcp-Param-*`` header carries for ``value`` (``None``: no header).

    Booleans are ``true``/``false``, numbers decimal text; a string is sent
    as it is when it is printable ASCII without surrounding spaces and does
    not look like the Base64 sentinel, and as ``=?base64?...?=`` otherwise.
    Null, and values of other types, have no header.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if not isinstance(value, str):
        return None
    if _PLAIN.fullmatch(value) and value == value.strip(" ") and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def screen_tools(
    tools: Iterable[Any], warn: Callable[[str, str], None]
) -> tuple[list[Any], dict[str, dict[str, tuple[str, ...]]]]:
    """The tools of a listing whose ``x-mcp-header`` annotations are valid, and each one's annotations.

    ``warn(tool_name, reason)`` is told of each tool left out.
    """
    kept: list[Any] = []
    declarations: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool in tools:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        try:
            found = header_declarations(tool.get("inputSchema") if isinstance(tool, Mapping) else None)
        except InvalidHeaderDeclaration as exc:
            warn(str(name), str(exc))
            continue
        kept.append(tool)
        declarations[str(name)] = found
    return kept, declarations


def header_text(value: str) -> str | None:
    """The value an ``Mcp-Name`` or ``Mcp-Param-*`` header carries; ``None`` when it is malformed.

    Surrounding spaces and tabs are not part of a field value (RFC 9110).
    ``=?base64?...?=`` is Base64 (canonical, padded) of UTF-8 text; any other
    value is taken literally and may hold only visible ASCII, spaces and tabs.

    >>> header_text("  us-west1 "), header_text("=?base64?SGVsbG8?="), header_text("SGVsbG8=")
    ('us-west1', None, 'SGVsbG8=')
    """
    value = value.strip(" \t")
    if not _FIELD_VALUE.fullmatch(value):
        return None
    sentinel = _SENTINEL.fullmatch(value)
    if sentinel is None:
        return value
    encoded = sentinel.group(1)
    if not _BASE64.fullmatch(encoded):
        return None
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except UnicodeDecodeError:  # the strict pattern above leaves only this
        return None


def param_header_problem(name: str, header: str | None, value: Any) -> str | None:
    """Why header ``Mcp-Param-{name}`` (``None``: not sent) does not match the argument ``value``; ``None`` if it does.

    An argument that is absent or null has no header; any other needs one
    equal to it: strings exactly, numbers numerically, booleans as
    ``true``/``false``.

    >>> param_header_problem("Region", "us-west1", "us-west1") is None, param_header_problem("N", "42", 42.0) is None
    (True, True)
    >>> param_header_problem("Region", None, "us-west1")
    'header Mcp-Param-Region is missing, but the argument has a value'
    """
    field = f"Mcp-Param-{name}"
    if value is None:
        return None if header is None else f"header {field} is sent, but the argument has no value"
    if header is None:
        return f"header {field} is missing, but the argument has a value"
    text = header_text(header)
    if text is None:
        return f"header {field} is not a valid value"
    if isinstance(value, bool):
        matches = text == ("true" if value else "false")
    elif isinstance(value, (int, float)):
        matches = _NUMBER.fullmatch(text) is not None and float(text) == value
    else:
        matches = text == value
    return None if matches else f"header {field} ({text!r}) does not match the argument ({value!r})"


def named_param(method: str) -> str | None:
    """The parameter that the ``Mcp-Name`` header of ``method`` mirrors (``None``: the method sends none).

    >>> named_param("resources/read"), named_param("tasks/get"), named_param("tools/list")
    ('uri', 'taskId', None)
    """
    return NAMED_BY.get(method) or ("taskId" if method in NAMED_BY_TASK_ID else None)


def mirrored_argument(arguments: Any, path: tuple[str, ...]) -> Any:
    """The tool argument at ``path`` (a declared header's property path) in ``arguments``; ``None`` when absent.

    >>> mirrored_argument({"target": {"region": "eu"}}, ("target", "region")), mirrored_argument({}, ("region",))
    ('eu', None)
    """
    value = arguments
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def request_headers(
    method: str, params: Mapping[str, Any] | None, declared: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, str]:
    """The headers that mirror a 2026-07-28 request's body: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-{Name}``.

    ``Mcp-Name`` carries the parameter :func:`named_param` says, when it is
    there; a ``tools/call`` carries an ``Mcp-Param-{Name}`` for each header
    its tool ``declared`` (:func:`header_declarations`) whose argument has a
    value. Values are encoded with :func:`header_value`.

    >>> request_headers("prompts/get", {"name": "greet"})
    {'Mcp-Method': 'prompts/get', 'Mcp-Name': 'greet'}
    """
    params = params or {}
    headers = {"Mcp-Method": method}
    named = named_param(method)
    name = header_value(params.get(named)) if named is not None else None
    if name is not None:
        headers["Mcp-Name"] = name
    arguments = params.get("arguments")
    for header, path in (declared or {}).items() if method == "tools/call" else ():
        text = header_value(mirrored_argument(arguments, path))
        if text is not None:
            headers[f"Mcp-Param-{header}"] = text
    return headers


def param_headers_problem(
    declared: Mapping[str, tuple[str, ...]], arguments: Any, header: Callable[[str], str | None]
) -> str | None:
    """Why the ``Mcp-Param-*`` headers of a ``tools/call`` do not match its ``arguments``; ``None`` if they do.

    ``declared`` is the tool's :func:`header_declarations`; ``header(field)``
    is the request's header ``field`` (``None``: not sent). The server's side
    of :func:`request_headers`, checked with :func:`param_header_problem`.

    >>> sent = {"Mcp-Param-Region": "us"}
    >>> param_headers_problem({"Region": ("region",)}, {"region": "eu"}, sent.get)
    "header Mcp-Param-Region ('us') does not match the argument ('eu')"
    """
    for name, path in declared.items():
        problem = param_header_problem(name, header(f"Mcp-Param-{name}"), mirrored_argument(arguments, path))
        if problem is not None:
            return problem
    return None
