"""The checks an MCP HTTP server makes before it looks at a message.

- content negotiation: :func:`accepts` reads an ``Accept`` header (RFC 9110);
- DNS rebinding protection: :func:`host_allowed` and :func:`origin_allowed`
  compare ``Host`` and ``Origin`` with allow-lists whose entries are
  ``name``, ``name:port``, ``name:*`` (any port, or none) or ``*``;
- bearer tokens: :func:`bearer_token`, :func:`token_scopes` and
  :func:`challenge` (the ``WWW-Authenticate`` value of RFC 6750 and RFC 9728);
- the request headers of 2026-07-28 that mirror the body: :func:`header_text`
  decodes an ``Mcp-Name`` or ``Mcp-Param-*`` value (plain, or
  ``=?base64?...?=``), :func:`header_declarations` reads the ``x-mcp-header``
  annotations of a tool's input schema and :func:`param_header_problem` says
  why an ``Mcp-Param-*`` header does not match its argument.

>>> accepts("application/json, text/event-stream", "text/event-stream")
True
>>> host_allowed("localhost:8000", LOOPBACK_HOSTS)
True
>>> host_allowed("evil.example.com", LOOPBACK_HOSTS)
False
>>> origin_allowed("http://127.0.0.1:8000", None, LOOPBACK_HOSTS)
True
>>> challenge(error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp")
'Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp"'
>>> header_text("=?base64?SGVsbG8sIOS4lueVjA==?=")
'Hello, 世界'
>>> header_declarations({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}})
{'Region': ('region',)}
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "LOOPBACK_HOSTS",
    "TokenVerifier",
    "accepts",
    "bearer_token",
    "challenge",
    "header_declarations",
    "header_text",
    "host_allowed",
    "origin_allowed",
    "param_header_problem",
    "token_expired",
    "token_principal",
    "token_scopes",
]

LOOPBACK_HOSTS = ("localhost:*", "127.0.0.1:*", "[::1]:*")
"""The ``Host`` values allowed by default: the loopback names, on any port."""

TokenVerifier = Callable[[str], "Mapping[str, Any] | None"]
"""Checks a bearer token: returns its claims (``sub``, ``scope``, ``exp``...), or ``None`` when invalid."""


def accepts(header: str | None, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (``type/subtype``).

    The most specific matching range decides, and ``q=0`` refuses. A missing
    or blank header admits everything (RFC 9110, section 12.5.1).

    >>> accepts("text/*;q=0, */*", "text/event-stream")
    False
    """
    if header is None or not header.strip():
        return True
    kind = media_type.split("/")[0]
    best: tuple[int, float] | None = None
    for part in header.split(","):
        media_range, *params = (field.strip().lower() for field in part.split(";"))
        specificity = {media_type: 3, f"{kind}/*": 2, "*/*": 1}.get(media_range)
        if specificity is None or (best is not None and best[0] >= specificity):
            continue
        best = (specificity, _quality(params))
    return best is not None and best[1] > 0


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` (a ``Host`` header: ``name`` or ``name:port``) matches one of ``patterns``."""
    host = host.strip().lower()
    for pattern in patterns:
        pattern = pattern.lower()
        if pattern in ("*", host):
            return True
        if pattern.endswith(":*"):
            prefix = pattern[:-1]
            if host == prefix[:-1] or (host.startswith(prefix) and host[len(prefix) :].isdigit()):
                return True
    return False


def origin_allowed(origin: str, allowed_origins: Sequence[str] | None, allowed_hosts: Sequence[str]) -> bool:
    """Whether a browser page at ``origin`` may call the server.

    With ``allowed_origins`` the origin must match one of them (the same
    patterns as hosts, e.g. ``https://app.example.com`` or
    ``http://localhost:*``); without, it must be an http(s) origin whose host
    passes ``allowed_hosts``. The opaque origin ``null`` passes only when listed.
    """
    origin = origin.strip()
    if allowed_origins is not None:
        return host_allowed(origin, allowed_origins)
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and host_allowed(parts.netloc, allowed_hosts)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it holds."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes granted by a token: its ``scope`` string, or its ``scopes``/``scp`` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    for key in ("scopes", "scp"):
        value = claims.get(key)
        if isinstance(value, (list, tuple)):
            return frozenset(str(v) for v in value)
    return frozenset()


def token_expired(claims: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the token's ``exp`` claim (seconds since the epoch), if any, has passed."""
    expires = claims.get("exp")
    if not isinstance(expires, (int, float)) or isinstance(expires, bool):
        return False
    return expires <= (time.time() if now is None else now)


def token_principal(claims: Mapping[str, Any]) -> str | None:
    """Who the token speaks for (``sub``, else ``client_id``): sessions are bound to it."""
    for key in ("sub", "client_id"):
        value = claims.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def challenge(**params: str | None) -> str:
    """A ``WWW-Authenticate`` value for the Bearer scheme with the given parameters (``None`` ones left out)."""
    quoted = [f'{name}="{_escape(value)}"' for name, value in params.items() if value is not None]
    return "Bearer " + ", ".join(quoted) if quoted else "Bearer"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


# ------------------------------------------------ headers mirroring the body

HEADER_ANNOTATION = "x-mcp-header"
"""The input-schema keyword that mirrors a tool argument into an ``Mcp-Param-{Name}`` header."""
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_HEADER_TYPES = ("string", "integer", "boolean")


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


def header_declarations(schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The ``x-mcp-header`` annotations of a tool's input schema: header name -> property path.

    An annotation is valid on a string, integer or boolean property reached
    from the root through ``properties`` only, with a token for a name that
    no other annotation repeats (ignoring case). One invalid annotation makes
    the whole tool definition invalid (clients drop such a tool): then there
    is nothing to check, and the result is empty.

    >>> header_declarations({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}})
    {}
    """
    found: dict[str, tuple[str, ...]] = {}
    names: set[str] = set()

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> bool:
        properties = node.get("properties")
        for name, prop in properties.items() if isinstance(properties, Mapping) else ():
            if not isinstance(prop, Mapping):
                continue
            if HEADER_ANNOTATION in prop:
                declared = prop[HEADER_ANNOTATION]
                if not (isinstance(declared, str) and _TOKEN.fullmatch(declared)):
                    return False
                if prop.get("type") not in _HEADER_TYPES or declared.lower() in names:
                    return False
                names.add(declared.lower())
                found[declared] = (*path, name)
            if not walk(prop, (*path, name)):
                return False
        return True

    if not walk(schema, ()) or _annotations(schema) != len(found):
        return {}  # an annotation that is invalid, or where no chain of properties reaches
    return found


def _annotations(node: Any) -> int:
    """How many ``x-mcp-header`` keywords a schema holds, wherever they are."""
    if isinstance(node, Mapping):
        return sum((key == HEADER_ANNOTATION) + _annotations(value) for key, value in node.items())
    if isinstance(node, list):
        return sum(_annotations(item) for item in node)
    return 0


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
