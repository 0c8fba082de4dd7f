"""The HTTP grammar rules mcp_sync reads and writes, each once: tokens, quoted strings, auth parameters.

Every rule of RFC 9110 (and of the OAuth RFCs that build on it) that both
roles need is here, so a header is read and written by the same rule on
the client and on the server:

* ``token`` (RFC 9110 section 5.6.2): ``1*tchar``, :data:`TOKEN`;
* ``quoted-string`` (section 5.6.4): :func:`quote`, :func:`unquote`,
  :data:`QUOTED_STRING`, :func:`blank_quoted`;
* ``auth-param`` (section 11.2): ``token BWS "=" BWS ( token / quoted-string )``,
  :func:`auth_params`;
* ``b64token`` (RFC 6750 section 2.1, RFC 9110's ``token68``): :data:`B64TOKEN`;
* a token that fits one header value whole (RFC 6749 appendix A.12, the
  space left out): :data:`VISIBLE`.

Reading is lenient where senders are (a bare value may hold any character
but space, comma and quote) and linear in the input whatever it holds: the
headers come from peers, some hostile.

>>> quote('say "hi"')
'"say \\\\"hi\\\\""'
>>> auth_params('realm="mcp", error=invalid_token, error="second"')
{'realm': 'mcp', 'error': 'invalid_token'}
"""

from __future__ import annotations

import re

__all__ = [
    "B64TOKEN",
    "QUOTED_STRING",
    "TCHAR",
    "TOKEN",
    "VISIBLE",
    "auth_params",
    "blank_quoted",
    "is_token",
    "quote",
    "unquote",
]

TCHAR = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
"""One ``tchar`` (RFC 9110 section 5.6.2), as a regular expression."""
TOKEN = re.compile(TCHAR + "+")
"""A ``token``: field names, auth schemes, parameter names (use ``fullmatch``)."""
QUOTED_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
"""A ``quoted-string``, read leniently: any character but ``"`` and ``\\`` inside, a backslash escaping any one."""
B64TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
"""RFC 6750's ``b64token`` (RFC 9110's ``token68``): what a bearer token is held to (use ``fullmatch``)."""
VISIBLE = re.compile(r"[\x21-\x7e]+")
"""Visible ASCII, no space (RFC 6749 appendix A.12 without the space): a value that is one token in a header."""

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)
# A name starts where no name character precedes it: else a long run of name characters with no "="
# is tried from each of its positions, and a hostile 64 KB header takes minutes to read.
_AUTH_PARAM = re.compile(rf'(?<!{TCHAR})({TCHAR}+)[ \t]*=[ \t]*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))')


def is_token(text: str) -> bool:
    """Whether ``text`` is one ``token``.

    >>> is_token("Mcp-Param-Region"), is_token("two words"), is_token("")
    (True, False, False)
    """
    return TOKEN.fullmatch(text) is not None


def quote(value: str) -> str:
    """``value`` as a ``quoted-string``; characters a header cannot carry (outside printable ASCII) become ``?``.

    A header carries printable ASCII only (RFC 6750 section 3 for
    ``error_description``): a message in another language, or with a line
    break, would make the answer fail (or split it in two).

    >>> quote("caf\\u00e9\\r\\nSet-Cookie: x")
    '"caf???Set-Cookie: x"'
    """
    printable = _UNPRINTABLE.sub("?", value)
    return '"' + printable.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unquote(inner: str) -> str:
    """The text of a quoted string's inside (between its quotes): each ``\\x`` read as ``x``.

    >>> unquote('a \\\\"b\\\\" \\\\\\\\')
    'a "b" \\\\'
    """
    return _QUOTED_PAIR.sub(r"\1", inner)


def blank_quoted(text: str) -> str:
    """``text`` with the inside of every quoted string blanked (same length): what is outside them, where it is.

    >>> blank_quoted('Bearer realm="Bearer, DPoP x=1", DPoP')
    'Bearer realm="                ", DPoP'
    """
    return QUOTED_STRING.sub(lambda quoted: '"' + " " * (len(quoted.group()) - 2) + '"', text)


def auth_params(text: str) -> dict[str, str]:
    """The ``name=value`` parameters of ``text`` (names lower-cased; the first of a repeated name kept).

    A value is a quoted string (unquoted here) or a bare run of characters
    other than space, comma and quote (senders put URLs and ``b64token``
    values there, not only tokens).

    >>> auth_params('Error="a \\\\"b\\\\"", scope=read, =x, broken="')
    {'error': 'a "b"', 'scope': 'read'}
    """
    params: dict[str, str] = {}
    for name, quoted, bare in _AUTH_PARAM.findall(text):
        params.setdefault(name.lower(), unquote(quoted) if quoted else bare)
    return params
