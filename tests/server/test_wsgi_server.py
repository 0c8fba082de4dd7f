"""The embedded WSGI server, over real loopback sockets.

Clients are ``requests`` sessions and raw sockets (for what ``requests`` hides:
connection reuse, interim responses, malformed input, half-read streams).
Run this file directly for the keep-alive benchmark against a bare
``http.server`` handler: ``python tests/test_wsgi_server.py``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import select
import signal
import socket
import struct
import sys
import threading
import time
import wsgiref.validate
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
import requests

from mcp_sync.server.http.wsgi import ClientDisconnected, RequestBodyError, WSGIServer, serve

WAIT = 5.0
"""The bound on every wait in these tests."""

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


def ok_app(environ: Environ, start_response: StartResponse) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def echo_app(environ: Environ, start_response: StartResponse) -> list[bytes]:
    """Answers with the request body and a few environ values in headers."""
    body = environ["wsgi.input"].read()
    start_response(
        "200 OK",
        [
            ("Content-Type", "application/octet-stream"),
            ("X-Path", environ["PATH_INFO"]),
            ("X-Query", environ["QUERY_STRING"]),
            ("X-Remote-Port", environ["REMOTE_PORT"]),
        ],
    )
    return [body]


@contextlib.contextmanager
def serving(app: Any, host: str = "127.0.0.1", **options: Any) -> Iterator[WSGIServer]:
    server = WSGIServer(app, host, **options)
    with server:
        yield server


def session() -> requests.Session:
    s = requests.Session()
    s.trust_env = False  # never a proxy: loopback only
    return s


class Raw:
    """A raw HTTP client on one socket."""

    def __init__(self, server: WSGIServer) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=WAIT)
        self.rfile = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def response(self, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        """Read one response: status code, headers (lower-case names), body."""
        status_line = self.rfile.readline()
        if not status_line:
            raise EOFError("the server closed the connection")
        code = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := self.rfile.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if head_only or code == 100 or code == 204 or code == 304:
            body = b""
        elif "content-length" in headers:
            body = self.rfile.read(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            parts = []
            while (size := int(self.rfile.readline().strip(), 16)) > 0:
                parts.append(self.rfile.read(size))
                assert self.rfile.read(2) == b"\r\n"
            assert self.rfile.readline() == b"\r\n"
            body = b"".join(parts)
        else:
            body = self.rfile.read()
        return code, headers, body

    def request(self, data: bytes, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        self.send(data)
        return self.response(head_only)

    def at_eof(self) -> bool:
        """Whether the server has closed the connection (waits at most WAIT seconds)."""
        try:
            return self.rfile.read(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()


@contextlib.contextmanager
def raw(server: WSGIServer) -> Iterator[Raw]:
    client = Raw(server)
    try:
        yield client
    finally:
        client.close()


GET = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n"


# --- keep-alive and connection handling -------------------------------------------------------


def test_a_session_reuses_one_connection_for_many_requests() -> None:
    with serving(echo_app) as server, session() as s:
        ports = {s.get(f"{server.url}/n{i}").headers["X-Remote-Port"] for i in range(20)}
        assert len(ports) == 1


def test_keep_alive_on_a_raw_connection_and_pipelining() -> None:
    with serving(echo_app) as server, raw(server) as client:
        assert client.request(GET)[2] == b""
        client.send(b"POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: t\r\n\r\n")
        first, second = client.response(), client.response()
        assert (first[0], first[1]["x-path"], first[2]) == (200, "/a", b"abc")
        assert (second[1]["x-path"], second[1]["x-remote-port"]) == ("/b", first[1]["x-remote-port"])


def test_connection_close_is_honoured() -> None:
    with serving(ok_app) as server, raw(server) as client:
        code, headers, body = client.request(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert (code, headers["connection"], body) == (200, "close", b"ok")
        assert client.at_eof()


def test_http_1_0_closes_unless_asked_to_keep_alive() -> None:
    def streaming(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        yield b"one "
        yield b"two"

    with serving(ok_app) as server:
        with raw(server) as client:
            code, headers, body = client.request(b"GET / HTTP/1.0\r\n\r\n")
            assert (code, headers["connection"], body) == (200, "close", b"ok")
            assert client.at_eof()
        with raw(server) as client:
            request = b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            assert client.request(request)[1]["connection"] == "keep-alive"
            assert client.request(request)[2] == b"ok"
    with serving(streaming) as server, raw(server) as client:
        # No chunked coding in HTTP/1.0: the body ends with the connection.
        code, headers, body = client.request(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert "transfer-encoding" not in headers
        assert (headers["connection"], body) == ("close", b"one two")


def test_idle_connections_are_closed_after_the_timeout() -> None:
    with serving(ok_app, idle_timeout=0.2) as server, raw(server) as client:
        assert client.request(GET)[2] == b"ok"
        started = time.monotonic()
        assert client.at_eof()
        assert time.monotonic() - started < WAIT - 1


def test_a_connection_reset_by_the_client_ends_its_thread(caplog: pytest.LogCaptureFixture) -> None:
    """A reset (not a close) reaches the connection's blocked read as an error: the connection ends there."""
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server.http")
    with serving(ok_app) as server:
        client = Raw(server)
        assert client.request(GET)[2] == b"ok"
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() resets
        client.close()
        deadline = time.monotonic() + WAIT
        while "ended: ConnectionResetError" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "ended: ConnectionResetError" in caplog.text


@pytest.mark.parametrize(
    "head",
    [b"Content-Length: 10\r\n\r\nabc", b"Transfer-Encoding: chunked\r\n\r\na\r\nabc"],
    ids=["length", "chunked"],
)
def test_a_body_that_stops_coming_is_a_client_error(head: bytes) -> None:
    """A read of the body that runs out of time (idle_timeout) fails it: 400, and the connection closes."""
    with serving(echo_app, idle_timeout=0.2) as server, raw(server) as client:
        code, headers, body = client.request(b"POST / HTTP/1.1\r\nHost: t\r\n" + head)
        assert code == 400 and headers["connection"] == "close" and b"ended" in body
        assert client.at_eof()


def test_empty_lines_before_a_request_are_ignored() -> None:
    with serving(ok_app) as server, raw(server) as client:
        assert client.request(b"\r\n\n" + GET)[0] == 200


def test_a_client_that_leaves_mid_request_is_dropped() -> None:
    with serving(ok_app) as server:
        for partial in (b"GET / HTT", b"GET / HTTP/1.1\r\nHost: t\r\nX-Half: a"):
            with raw(server) as client:
                client.send(partial)
                client.sock.shutdown(socket.SHUT_WR)
                assert client.at_eof()


# --- streaming responses ----------------------------------------------------------------------


def test_chunks_are_sent_as_the_application_yields_them() -> None:
    go_on = threading.Event()

    def events(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"data: first\n\n"
        assert go_on.wait(WAIT)
        yield b""  # skipped: an empty chunk would end the chunked body
        yield b"data: second\n\n"

    with serving(events) as server, raw(server) as client:
        client.send(GET)
        assert client.rfile.readline() == b"HTTP/1.1 200 OK\r\n"
        while (line := client.rfile.readline()) != b"\r\n":
            assert line != b""
        assert client.rfile.readline() == b"d\r\n"
        assert client.rfile.read(15) == b"data: first\n\n\r\n"  # while the application waits
        go_on.set()
        assert client.rfile.read(24) == b"e\r\ndata: second\n\n\r\n0\r\n\r\n"
        assert client.request(GET)[2] == b"data: first\n\ndata: second\n\n"


def test_requests_sees_server_sent_events_one_by_one() -> None:
    steps = [threading.Event() for _ in range(3)]

    def events(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        for i, step in enumerate(steps):
            yield f"data: {i}\n\n".encode()
            assert step.wait(WAIT)

    with serving(events) as server, session() as s, s.get(server.url, stream=True, timeout=WAIT) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"
        for i, chunk in enumerate(response.iter_content(chunk_size=None)):
            assert chunk == f"data: {i}\n\n".encode()
            steps[i].set()


def test_a_content_length_response_is_sent_as_is() -> None:
    def sized(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Length", "11")])
        yield b"hello "
        yield b"world"

    with serving(sized) as server, raw(server) as client:
        _, headers, body = client.request(GET)
        assert (headers["content-length"], body) == ("11", b"hello world")
        assert "transfer-encoding" not in headers
        assert client.request(GET)[2] == b"hello world"


def test_the_write_callable() -> None:
    def writer(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        write = start_response("200 OK", [])
        write(b"")
        write(b"written ")
        return iter([b"then ", b"returned"])

    with serving(writer) as server, session() as s:
        response = s.get(server.url)
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.content == b"written then returned"


def test_head_requests_get_headers_only() -> None:
    def streaming(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        yield b"a body"
        raise AssertionError("not iterated further once the head is out")

    with serving(ok_app) as server, raw(server) as client:
        code, headers, _ = client.request(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", head_only=True)
        assert (code, headers["content-length"]) == (200, "2")
        assert client.request(GET)[2] == b"ok"  # nothing was left on the connection
    with serving(streaming) as server, raw(server) as client:
        code, headers, _ = client.request(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", head_only=True)
        assert headers["transfer-encoding"] == "chunked"
        assert client.request(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", head_only=True)[0] == 200


@pytest.mark.parametrize("status", ["204 No Content", "304 Not Modified"])
def test_statuses_without_a_body(status: str) -> None:
    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response(status, [("Content-Length", "4")] if status.startswith("304") else [])
        yield b"body"

    with serving(app) as server, raw(server) as client:
        code, headers, _ = client.request(GET)
        assert "transfer-encoding" not in headers
        assert client.request(GET)[0] == code  # no stray body bytes


def test_the_date_header_is_the_application_s_if_it_sets_one() -> None:
    def dated(environ: Environ, start_response: StartResponse) -> list[bytes]:
        start_response("200 OK", [("Date", "Thu, 01 Jan 1970 00:00:00 GMT")])
        return []

    with serving(dated) as server, serving(ok_app) as other, session() as s:
        assert s.get(server.url).headers["Date"] == "Thu, 01 Jan 1970 00:00:00 GMT"
        assert s.get(other.url).headers["Date"].endswith(" GMT")


def test_an_empty_response() -> None:
    def empty(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        yield from ()

    with serving(empty) as server, raw(server) as client:
        assert client.request(GET)[1]["content-length"] == "0"


# --- request bodies ---------------------------------------------------------------------------


def test_a_chunked_request_body_is_decoded() -> None:
    def parts() -> Iterator[bytes]:
        yield b"hello "
        yield b"chunked world"

    with serving(echo_app) as server, session() as s:
        response = s.post(server.url, data=parts())
        assert response.content == b"hello chunked world"


def test_chunk_extensions_and_trailers_on_a_raw_connection() -> None:
    def lines(environ: Environ, start_response: StartResponse) -> list[bytes]:
        body = environ["wsgi.input"]
        first = body.readline()
        limited = body.readline(3)
        rest = list(body)
        start_response("200 OK", [])
        return [repr((first, limited, rest, "CONTENT_LENGTH" in environ)).encode()]

    request = (
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;name=value\r\nab\nc\r\n3 \r\nde\n\r\n2\r\nfg\r\n0\r\nTrailer: yes\r\n\r\n"
    )
    with serving(lines) as server, raw(server) as client:
        assert client.request(request)[2] == repr((b"ab\n", b"cde", [b"\n", b"fg"], False)).encode()
        assert client.request(GET)[0] == 200


def test_content_length_bodies_read_every_way() -> None:
    def reader(environ: Environ, start_response: StartResponse) -> list[bytes]:
        body = environ["wsgi.input"]
        got = [body.read(2), body.readline(), body.readlines(1), body.readlines(), body.read(), body.read(None)]
        start_response("200 OK", [])
        return [repr(got).encode()]

    with serving(reader) as server, raw(server) as client:
        _, _, body = client.request(b"PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 13\r\n\r\nabcd\ne\nf\ng\nhi")
        assert body == repr([b"ab", b"cd\n", [b"e\n"], [b"f\n", b"g\n", b"hi"], b"", b""]).encode()


def test_an_unread_body_is_discarded_and_the_connection_kept() -> None:
    with serving(ok_app) as server, raw(server) as client:
        assert client.request(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde")[2] == b"ok"
        chunked = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        assert client.request(chunked)[2] == b"ok"
        assert client.request(GET)[2] == b"ok"


def test_a_large_unread_body_closes_the_connection() -> None:
    size = 64 << 20
    with serving(ok_app) as server, raw(server) as client:
        failures: list[OSError] = []

        def upload() -> None:
            client.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % size)
            try:
                for _ in range(size >> 16):
                    client.sock.sendall(bytes(1 << 16))
            except OSError as error:
                failures.append(error)

        sender = threading.Thread(target=upload)
        sender.start()
        sender.join(WAIT * 4)
        assert failures, "the server kept reading the unwanted body"
        with contextlib.suppress(ConnectionResetError):
            client.response()


def test_expect_100_continue() -> None:
    with serving(echo_app) as server, raw(server) as client:
        code, _, _ = client.request(b"POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        assert code == 100
        client.send(b"hi")
        assert client.response()[2] == b"hi"


def test_a_truncated_body_read_by_the_application_is_a_bad_request() -> None:
    with serving(echo_app) as server:
        for request in (
            b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc",
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2",
        ):
            with raw(server) as client:
                client.send(request)
                client.sock.shutdown(socket.SHUT_WR)
                code, headers, body = client.response()
                assert (code, headers["connection"]) == (400, "close"), body


def test_a_truncated_body_left_unread_closes_the_connection() -> None:
    with serving(ok_app) as server, raw(server) as client:
        client.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        client.sock.shutdown(socket.SHUT_WR)
        assert client.response()[2] == b"ok"
        assert client.at_eof()


# --- malformed requests -----------------------------------------------------------------------


MALFORMED = [
    (b"garbage\r\n\r\n", 400),
    (b"GET /\r\n\r\n", 400),
    (b"GET / HTTP/1.1 extra\r\n\r\n", 400),
    (b"GET /a\x01b HTTP/1.1\r\nHost: t\r\n\r\n", 400),
    (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
    (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
    (b"GET / HTTP/1.1\r\nHost: t\r\nno colon\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n folded\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: t\r\nX-Bad: a\x00b\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    (b"GET /" + b"a" * 65536 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: t\r\nX-Long: " + b"a" * 65536 + b"\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: t\r\n" + b"X-Many: 1\r\n" * 100 + b"\r\n", 431),
]


@pytest.mark.parametrize(
    ("request_bytes", "code"), MALFORMED, ids=[f"{i}-{code}" for i, (_, code) in enumerate(MALFORMED)]
)
def test_malformed_requests_are_refused(request_bytes: bytes, code: int) -> None:
    with serving(ok_app) as server, raw(server) as client:
        client.send(request_bytes)
        got, headers, body = client.response()
        assert (got, headers["connection"]) == (code, "close"), body
        assert body.startswith(str(code).encode())
        assert client.at_eof()


def test_ninety_nine_extra_headers_are_fine() -> None:
    with serving(ok_app) as server, raw(server) as client:
        assert client.request(b"GET / HTTP/1.1\r\nHost: t\r\n" + b"X-Many: 1\r\n" * 99 + b"\r\n")[0] == 200


# --- environ ----------------------------------------------------------------------------------


def test_environ_passes_wsgiref_validation() -> None:
    seen: list[Environ] = []

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        seen.append(environ)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"valid"]

    with serving(wsgiref.validate.validator(app)) as server, session() as s:
        assert s.post(f"{server.url}/p?q=1", data=b"x", headers={"Content-Type": "text/plain"}).content == b"valid"
        assert s.get(server.url).content == b"valid"
    environ = seen[0]
    assert environ["REQUEST_METHOD"] == "POST"
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"], environ["QUERY_STRING"]) == ("", "/p", "q=1")
    assert (environ["CONTENT_TYPE"], environ["CONTENT_LENGTH"]) == ("text/plain", "1")
    assert (environ["SERVER_NAME"], environ["SERVER_PORT"]) == ("127.0.0.1", str(server.port))
    assert (environ["SERVER_PROTOCOL"], environ["REMOTE_ADDR"]) == ("HTTP/1.1", "127.0.0.1")
    assert environ["wsgi.version"] == (1, 0)
    assert environ["wsgi.url_scheme"] == "http"
    assert environ["wsgi.multithread"] is True
    assert environ["wsgi.multiprocess"] is False
    assert environ["wsgi.run_once"] is False
    assert environ["wsgi.errors"].errors is sys.stderr  # under the validator's wrapper
    assert "HTTP_USER_AGENT" in environ
    assert "HTTP_CONTENT_TYPE" not in environ


def test_paths_queries_and_headers_in_environ() -> None:
    seen: list[Environ] = []

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        seen.append(environ)
        start_response("200 OK", [])
        return []

    with serving(app) as server, raw(server) as client:
        client.request(
            b"GET /a%20b/%C3%A9%2F?x=%20y HTTP/1.1\r\nHost: t\r\nX-Twice: 1\r\nX-Twice: 2\r\n"
            b"Cookie: a=1\r\nCookie: b=2\r\nX_Under: sneaky\r\nX-Trimmed:  \tv \t\r\n\r\n"
        )
        client.request(b"GET http://example.com/abs?k=v HTTP/1.1\r\nHost: example.com\r\n\r\n")
        client.request(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n")
        client.request(b"GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n")
    first, absolute, star, bare = seen
    assert first["PATH_INFO"] == "/a b/\xc3\xa9/"  # PEP 3333: bytes as latin-1
    assert first["QUERY_STRING"] == "x=%20y"
    assert first["REQUEST_URI"] == "/a%20b/%C3%A9%2F?x=%20y"
    assert (first["HTTP_X_TWICE"], first["HTTP_COOKIE"]) == ("1,2", "a=1; b=2")
    assert "HTTP_X_UNDER" not in first
    assert first["HTTP_X_TRIMMED"] == "v"
    assert (absolute["PATH_INFO"], absolute["QUERY_STRING"]) == ("/abs", "k=v")
    assert (star["REQUEST_METHOD"], star["PATH_INFO"]) == ("OPTIONS", "*")
    assert (bare["PATH_INFO"], bare["QUERY_STRING"]) == ("/", "")


# --- application errors -----------------------------------------------------------------------


def failing_before_start(environ: Environ, start_response: StartResponse) -> list[bytes]:
    raise RuntimeError("boom")


def body_before_start(environ: Environ, start_response: StartResponse) -> list[bytes]:
    return [b"no status"]


def starts_twice(environ: Environ, start_response: StartResponse) -> list[bytes]:
    start_response("200 OK", [])
    start_response("200 OK", [])
    return []


def bad_start(status: str, headers: list[tuple[str, str]]) -> Callable[[Environ, StartResponse], list[bytes]]:
    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        start_response(status, headers)
        return []

    return app


def failing_in_iteration(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
    start_response("200 OK", [])
    raise RuntimeError("boom before the first chunk")
    yield b""  # a generator


@pytest.mark.parametrize(
    "app",
    [
        failing_before_start,
        body_before_start,
        starts_twice,
        failing_in_iteration,
        bad_start("200", []),
        bad_start("OK 200", []),
        bad_start("200 OK", [("X-Bad", "a\r\nInjected: yes")]),
        bad_start("200 OK", [("Bad Name", "a")]),
        bad_start("200 OK", [("Connection", "close")]),
        bad_start("200 OK", [("Transfer-Encoding", "chunked")]),
        bad_start("200 OK", [("Content-Length", "-1")]),
    ],
)
def test_application_errors_before_the_head_are_500(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    with serving(app) as server, raw(server) as client:
        code, headers, body = client.request(GET)
        assert (code, headers["connection"]) == (500, "close")
        assert b"boom" not in body
        assert client.at_eof()
    assert "the WSGI application failed" in caplog.text


def test_an_application_error_mid_stream_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    closed = threading.Event()

    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        try:
            yield b"partial"
            raise RuntimeError("boom mid-stream")
        finally:
            closed.set()

    with serving(app) as server, session() as s:
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            s.get(server.url)
        assert closed.wait(WAIT)
    assert "boom mid-stream" in caplog.text


def test_exc_info_replaces_the_head_before_it_is_sent() -> None:
    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("bad input")
        except ValueError:
            start_response("422 Unprocessable Entity", [("Content-Type", "text/plain")], sys.exc_info())
        return [b"sorry"]

    with serving(app) as server, session() as s:
        response = s.get(server.url)
        assert (response.status_code, response.content) == (422, b"sorry")


def test_exc_info_after_the_head_reraises(caplog: pytest.LogCaptureFixture) -> None:
    outcome: list[BaseException] = []

    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        yield b"started"
        try:
            raise ValueError("too late")
        except ValueError:
            try:
                start_response("500 Internal Server Error", [], sys.exc_info())
            except ValueError as error:
                outcome.append(error)
                raise

    with serving(app) as server, session() as s, pytest.raises(requests.exceptions.ChunkedEncodingError):
        s.get(server.url)
    assert str(outcome[0]) == "too late"


def test_exc_info_of_none_is_a_first_call() -> None:
    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        start_response("200 OK", [], (None, None, None))
        return [b"fine"]

    with serving(app) as server, session() as s:
        assert s.get(server.url).content == b"fine"


def test_a_body_longer_than_its_content_length(caplog: pytest.LogCaptureFixture) -> None:
    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        start_response("200 OK", [("Content-Length", "3")])
        return [b"abcdef"]

    with serving(app) as server, raw(server) as client:
        _, headers, body = client.request(GET)
        assert (headers["content-length"], body) == ("3", b"abc")
        assert client.at_eof()
    assert "more bytes than its Content-Length" in caplog.text


def test_a_body_shorter_than_its_content_length(caplog: pytest.LogCaptureFixture) -> None:
    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Length", "10")])
        yield b"abc"

    with serving(app) as server, raw(server) as client:
        client.send(GET)
        assert client.rfile.read().endswith(b"\r\n\r\nabc")  # then the server closes
    assert "7 bytes fewer than its Content-Length" in caplog.text


def test_a_failing_close_method_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Body:
        def __iter__(self) -> Iterator[bytes]:
            yield b"body"

        def close(self) -> None:
            raise RuntimeError("close failed")

    def app(environ: Environ, start_response: StartResponse) -> Body:
        start_response("200 OK", [])
        return Body()

    with serving(app) as server, session() as s:
        assert s.get(server.url).content == b"body"
        assert s.get(server.url).content == b"body"
    assert "close() method of a WSGI response failed" in caplog.text


# --- disconnects and shutdown -----------------------------------------------------------------


def test_a_client_disconnect_mid_stream_closes_the_iterator() -> None:
    client_gone = threading.Event()
    closed = threading.Event()
    sent: list[int] = []

    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        try:
            yield b"data: hello\n\n"
            assert client_gone.wait(WAIT)
            for i in range(100_000):
                sent.append(i)
                yield b"data: %d\n\n" % i
        finally:
            closed.set()

    with serving(app) as server:
        with raw(server) as client:
            client.send(GET)
            assert client.rfile.readline().startswith(b"HTTP/1.1 200")
        client_gone.set()
        assert closed.wait(WAIT)
        assert len(sent) < 100_000


def test_write_raises_client_disconnected() -> None:
    client_gone = threading.Event()
    raised: list[BaseException] = []

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        write = start_response("200 OK", [])
        write(b"first")
        assert client_gone.wait(WAIT)
        try:
            for _ in range(100_000):
                write(b"more")
        except ClientDisconnected as error:
            raised.append(error)
            raise
        return []

    with serving(app) as server:
        with raw(server) as client:
            client.send(GET)
            assert client.rfile.readline().startswith(b"HTTP/1.1 200")
        client_gone.set()
    assert isinstance(raised[0], ConnectionError)


def test_close_during_a_stream_returns_promptly() -> None:
    wake = threading.Event()
    closed = threading.Event()

    def events(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        try:
            yield b"data: waiting\n\n"
            while wake.wait(WAIT):  # an application waiting on its event queue
                yield b"data: woken\n\n"
        finally:
            closed.set()

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return events(environ, start_response) if environ["PATH_INFO"] == "/events" else ok_app(environ, start_response)

    server = WSGIServer(app).start()
    server.on_close(wake.set)
    with raw(server) as client, raw(server) as idle:
        client.send(b"GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
        assert client.rfile.readline().startswith(b"HTTP/1.1 200")
        assert idle.request(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")[2] == b"ok"
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 1.0
        assert closed.is_set()
        assert idle.at_eof()
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp-sync")]
    server.close()  # idempotent


def test_close_gives_up_on_a_stream_nothing_wakes(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    waiting = threading.Event()

    def app(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [])
        yield b"x"
        waiting.set()
        release.wait(WAIT)
        yield b"y"

    server = WSGIServer(app).start()
    with raw(server) as client:
        client.send(GET)
        assert waiting.wait(WAIT)
        started = time.monotonic()
        server.close(timeout=0.2)
        assert time.monotonic() - started < 1.0
        release.set()
    assert "still running after close()" in caplog.text


def test_close_from_inside_the_application() -> None:
    holder: list[WSGIServer] = []
    done = threading.Event()

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        holder[0].close()
        done.set()
        start_response("200 OK", [])
        return [b"bye"]

    server = WSGIServer(app).start()
    holder.append(server)
    with raw(server) as client:
        client.send(GET)
        assert done.wait(WAIT)
        with contextlib.suppress(EOFError, ConnectionResetError):
            client.response()
    server.close()


def test_on_close_callbacks_run_once_and_failures_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []
    server = WSGIServer(ok_app)

    @server.on_close
    def failing() -> None:
        raise RuntimeError("callback failed")

    server.on_close(lambda: calls.append("called"))
    server.close()
    server.close()
    assert calls == ["called"]
    assert "on_close callback failed" in caplog.text


def test_close_without_start_releases_the_port() -> None:
    server = WSGIServer(ok_app)
    port = server.port
    server.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
    with pytest.raises(RuntimeError):
        server.start()


def test_a_server_starts_once() -> None:
    with serving(ok_app) as server:
        with pytest.raises(RuntimeError):
            server.start()
        with pytest.raises(RuntimeError):
            server.serve_forever()
        assert repr(server) == f"<WSGIServer {server.url}>"


@pytest.mark.parametrize("options", [{"max_connections": 0}, {"idle_timeout": 0}])
def test_invalid_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WSGIServer(ok_app, **options)


# --- the connection limit ---------------------------------------------------------------------


def reset_by_peer(client: Raw) -> bool:
    """Whether the server has closed this socket for good: data sent now is answered with a reset."""
    try:
        client.sock.sendall(b"anyone there?")
    except (BrokenPipeError, ConnectionResetError):
        return True  # the reset came back already, from what was sent before
    poller = select.poll()
    poller.register(client.sock, select.POLLERR)
    return bool(poller.poll(WAIT * 1000))


@pytest.mark.skipif(not hasattr(select, "poll"), reason="needs select.poll")
def test_connections_beyond_the_limit_get_503() -> None:
    with contextlib.ExitStack() as clients:
        with serving(ok_app, max_connections=1) as server:

            def connect() -> Raw:
                return clients.enter_context(raw(server))

            first = connect()
            assert first.request(GET)[2] == b"ok"
            second = connect()
            code, headers, _ = second.request(GET)
            assert (code, headers["connection"]) == (503, "close")
            assert second.at_eof()
            # At most max_connections refused sockets linger: taking in the third closes the second.
            third = connect()
            assert third.request(GET)[0] == 503
            assert reset_by_peer(second)
            third.send(b"read and dropped")
            fourth = connect()
            fourth.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            assert fourth.request(GET)[0] == 503
            fourth.close()  # a reset, not a close
            assert first.request(GET)[2] == b"ok"
            with session() as s:
                assert s.get(server.url).status_code == 503
            last = connect()
            assert last.request(GET)[0] == 503
        assert last.at_eof()  # closed by close() while it lingered


def test_a_failing_accept_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    server = WSGIServer(ok_app)
    real = server._listener

    class FlakyListener:
        failed = False

        def accept(self) -> tuple[socket.socket, Any]:
            if not self.failed:
                self.failed = True
                raise OSError(errno.EMFILE, "Too many open files")
            return real.accept()

        def fileno(self) -> int:
            return real.fileno()

        def close(self) -> None:
            real.close()

    server._listener = FlakyListener()  # type: ignore[assignment]
    with server, session() as s:
        assert s.get(server.url).content == b"ok"
    assert "Too many open files" in caplog.text


# --- other ways to run ------------------------------------------------------------------------


def ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_ipv6() -> None:
    with serving(echo_app, "::1") as server, session() as s:
        assert server.url == f"http://[::1]:{server.port}"
        assert s.post(server.url + "/six", data=b"v6").content == b"v6"


needs_signals = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs signal.pthread_kill")


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, as in a terminal.

    A process started in the background by a non-interactive shell (as CI
    may run the suite) inherits SIGINT ignored, and Python then leaves it so.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt_main_after(request: Callable[[], bytes], results: list[bytes]) -> threading.Thread:
    def run() -> None:
        try:
            results.append(request())
        finally:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@needs_signals
@pytest.mark.usefixtures("ctrl_c_raises")
def test_serve_forever_stops_on_ctrl_c() -> None:
    assert threading.current_thread() is threading.main_thread()
    server = WSGIServer(ok_app)
    results: list[bytes] = []
    client = interrupt_main_after(lambda: session().get(server.url, timeout=WAIT).content, results)
    server.serve_forever()
    client.join(WAIT)
    assert results == [b"ok"]
    with pytest.raises(OSError):
        socket.create_connection((server.host, server.port), timeout=WAIT).close()


def test_serve_forever_returns_when_closed_from_another_thread() -> None:
    server = WSGIServer(ok_app)
    results: list[bytes] = []

    def run() -> None:
        with session() as s:
            results.append(s.get(server.url, timeout=WAIT).content)
        server.close()

    client = threading.Thread(target=run)
    client.start()
    server.serve_forever()
    client.join(WAIT)
    assert results == [b"ok"]


@needs_signals
@pytest.mark.usefixtures("ctrl_c_raises")
def test_serve_logs_its_url_and_serves_until_ctrl_c(caplog: pytest.LogCaptureFixture) -> None:
    found = threading.Event()
    urls: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("serving on "):
                urls.append(record.getMessage().removeprefix("serving on "))
                found.set()

    def request() -> bytes:
        assert found.wait(WAIT)
        with session() as s:
            return s.get(urls[0], timeout=WAIT).content

    handler = Catch()
    logger = logging.getLogger("mcp_sync.server.http")
    logger.addHandler(handler)
    caplog.set_level(logging.INFO, logger="mcp_sync.server.http")
    results: list[bytes] = []
    try:
        client = interrupt_main_after(request, results)
        serve(ok_app, port=0, max_connections=4)
        client.join(WAIT)
    finally:
        logger.removeHandler(handler)
    assert results == [b"ok"]
    assert "interrupted" in caplog.text


def test_request_body_error_is_an_os_error() -> None:
    assert issubclass(RequestBodyError, OSError)
    assert issubclass(ClientDisconnected, ConnectionError)


# --- benchmark: python tests/test_wsgi_server.py [requests] [rounds] ---------------------------


def _benchmark(count: int, rounds: int) -> None:
    """Sequential GETs on one keep-alive ``requests`` session, against this server and against
    ``http.server`` with a bare handler; client and server share this process. Requests per
    second of wall-clock time, and per second of this process's CPU time (steadier on a busy
    machine)."""
    import statistics
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Bare(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # without it, Nagle and delayed ACKs cap it near 25 requests/s

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    def loop(url: str) -> tuple[float, float]:
        with session() as s:
            s.get(url)
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                assert s.get(url).content == b"ok"
            return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)

    def ours() -> tuple[float, float]:
        with WSGIServer(ok_app) as server:
            return loop(server.url + "/")

    def bare() -> tuple[float, float]:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Bare)
        thread = threading.Thread(target=httpd.serve_forever)
        thread.start()
        try:
            return loop(f"http://127.0.0.1:{httpd.server_address[1]}/")
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join()

    results: dict[str, list[tuple[float, float]]] = {"mcp_sync.wsgi_server": [], "http.server, bare handler": []}
    for _ in range(rounds):  # interleaved, so that machine noise hits both alike
        results["mcp_sync.wsgi_server"].append(ours())
        results["http.server, bare handler"].append(bare())
    medians = {}
    for name, rates in results.items():
        wall = statistics.median(rate for rate, _ in rates)
        cpu = statistics.median(rate for _, rate in rates)
        medians[name] = (wall, cpu)
        print(f"{name:26} {wall:6.0f} requests/s wall-clock, {cpu:6.0f} per CPU-second (medians of {rounds})")
    (ours_wall, ours_cpu), (bare_wall, bare_cpu) = medians.values()
    print(f"ratio to the bare handler: {ours_wall / bare_wall:.2f} wall-clock, {ours_cpu / bare_cpu:.2f} CPU")


if __name__ == "__main__":
    _benchmark(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 9)
