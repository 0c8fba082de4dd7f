"""The adapter of the sessions mcp_sync makes finds a URL's pool once and skips parsing cookies nobody set.

:class:`mcp_sync.runtime.http.LeanAdapter` keeps, per URL, the connection
pool requests' adapter would look up on every request. These tests check
against a real server on 127.0.0.1 that what requests does is kept: the
connection is reused, closing the adapter forgets its pools, cookies the server sets
reach the session, the response says what it answers, and a request through
a proxy goes there.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
import requests

from mcp_sync.runtime.http import LeanAdapter, new_session
from tests.helpers import KeepAliveJSONHandler


class Peers(http.server.ThreadingHTTPServer):
    """Notes the client's address of each request: one address per connection."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.peers: list[tuple[str, int]] = []


class Handler(KeepAliveJSONHandler):
    server: Peers

    def do_GET(self) -> None:
        self.server.peers.append(self.client_address)
        cookie = {"Set-Cookie": "seen=1; Path=/"} if self.path == "/cookie" else None
        self._send(200, {"path": self.path}, cookie)


@pytest.fixture
def server() -> Iterator[Peers]:
    peers = Peers()
    thread = threading.Thread(target=peers.serve_forever, daemon=True)
    thread.start()
    try:
        yield peers
    finally:
        peers.shutdown()
        peers.server_close()
        thread.join(5.0)


def url_of(server: Peers, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def loopback_session() -> requests.Session:
    session = new_session()
    session.trust_env = False  # no proxy of the environment's: these requests go to 127.0.0.1, or where they say
    return session


def test_requests_to_one_url_share_a_connection_and_answer_as_requests_would(server: Peers) -> None:
    session = loopback_session()
    assert isinstance(session.get_adapter("http://127.0.0.1/"), LeanAdapter)
    url = url_of(server, "/a?x=1")
    answers = [session.get(url, timeout=5.0) for _ in range(3)]
    assert len(set(server.peers)) == 1  # one connection, kept
    answer = answers[-1]
    assert (answer.status_code, answer.reason, answer.url) == (200, "OK", url)
    assert answer.json() == {"path": "/a?x=1"}  # sent to the URL's path, with its query
    assert answer.headers["content-type"] == "application/json"  # the headers ignore case, as requests' do
    assert answer.request.url == url
    assert answer.connection is session.get_adapter(url)
    assert not session.cookies
    session.close()


def test_closing_the_adapter_forgets_its_pools(server: Peers) -> None:
    session = loopback_session()
    url = url_of(server, "/a")
    assert session.get(url, timeout=5.0).status_code == 200
    session.get_adapter(url).close()  # as requests' adapter: the next request opens a new pool, and connection
    assert session.get(url, timeout=5.0).json() == {"path": "/a"}
    assert len(set(server.peers)) == 2
    session.close()


def test_many_urls_each_reach_their_own_path(server: Peers) -> None:
    session = loopback_session()
    # More URLs than the adapter keeps pools for: the oldest are forgotten, every request still goes where it says.
    for number in range(40):
        assert session.get(url_of(server, f"/n{number}"), timeout=5.0).json() == {"path": f"/n{number}"}
    assert len(set(server.peers)) == 1  # one host: one pool, whatever the path
    session.close()


def test_cookies_the_server_sets_reach_the_session(server: Peers) -> None:
    session = loopback_session()
    answer = session.get(url_of(server, "/cookie"), timeout=5.0)
    assert answer.cookies.get("seen") == "1"
    assert session.cookies.get("seen") == "1"
    session.close()


def test_through_a_proxy_requests_finds_the_pool(server: Peers) -> None:
    # The "proxy" is the server itself: a GET through an HTTP proxy names the whole URL, which the handler echoes.
    session = loopback_session()
    url = "http://mcp-sync.invalid/through"
    proxy = url_of(server, "")
    answer = session.get(url, timeout=5.0, proxies={"http": proxy})
    assert answer.json() == {"path": url}
    session.close()
