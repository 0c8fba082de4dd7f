"""The HTTP grammar rules (tokens, quoted strings, auth parameters), good and hostile input, and their time."""

from __future__ import annotations

import time

import pytest

from mcp_sync.protocol.grammar import B64TOKEN, VISIBLE, auth_params, blank_quoted, is_token, quote, unquote


@pytest.mark.parametrize("text", ["a", "Mcp-Param-X", "!#$%&'*+-.^_`|~09AZaz"])
def test_tokens(text: str) -> None:
    assert is_token(text)


@pytest.mark.parametrize("text", ["", "a b", "a,b", 'a"', "a=b", "caf\u00e9", "a\r\n", "(x)", "a/b"])
def test_not_tokens(text: str) -> None:
    assert not is_token(text)


@pytest.mark.parametrize(
    "value",
    ["", "plain", 'say "hi"', "back\\slash", '\\"', "a, b=c", "x" * 1000],
)
def test_quote_then_read_gives_the_value_back(value: str) -> None:
    quoted = quote(value)
    assert quoted.startswith('"') and quoted.endswith('"')
    assert auth_params(f"v={quoted}") == ({"v": value} if value else {"v": ""})
    assert unquote(quoted[1:-1]) == value


def test_quote_never_lets_a_header_break() -> None:
    quoted = quote("caf\u00e9\r\nSet-Cookie: a\x00\x7f\t")
    assert quoted == '"caf???Set-Cookie: a???"'
    assert all(" " <= char <= "~" for char in quoted)


def test_auth_params_first_wins_names_fold_and_junk_is_skipped() -> None:
    header = 'Realm="one", realm=two, scope="a b", =orphan, error=x"y, url=https://a.example/p?q=1, broken="open'
    assert auth_params(header) == {"realm": "one", "scope": "a b", "error": "x", "url": "https://a.example/p?q=1"}
    assert auth_params("") == {} and auth_params("no parameters here") == {}
    assert auth_params('a = "spaced" , b\t=\tbare') == {"a": "spaced", "b": "bare"}


def test_blank_quoted_keeps_positions_and_hides_what_is_quoted() -> None:
    text = 'Bearer x="DPoP \\" Bearer", DPoP'
    blank = blank_quoted(text)
    assert len(blank) == len(text) and "Bearer" not in blank[7:] and blank.endswith(", DPoP")
    assert blank_quoted('unclosed "quote') == 'unclosed "quote'


def test_b64token_and_visible() -> None:
    assert B64TOKEN.fullmatch("eyJ0.eyJz-_~+/==") and not B64TOKEN.fullmatch("a=b") and not B64TOKEN.fullmatch("")
    assert VISIBLE.fullmatch("a,Bearer!~") and not VISIBLE.fullmatch("a b") and not VISIBLE.fullmatch("\u00e9")


@pytest.mark.parametrize(
    "hostile",
    [
        "a" * 100_000,  # one name that never meets "="
        "a=" * 50_000,
        '"' + "\\a" * 50_000,  # a quoted string that never closes
        'a="' * 30_000,
        ", " * 50_000,
    ],
)
def test_hostile_headers_read_in_linear_time(hostile: str) -> None:
    started = time.perf_counter()
    auth_params(hostile)
    blank_quoted(hostile)
    assert time.perf_counter() - started < 2.0
