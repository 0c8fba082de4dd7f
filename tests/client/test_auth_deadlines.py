"""Authorization servers that send their headers a byte at a time, against the OAuth client's total deadline.

``requests`` bounds each read, not the whole: an answer whose status line
and headers come one byte every 0.2 s held a sign-in, a refresh or a
metadata lookup for as long as the server liked (measured: 20 s for a
60-byte header with a timeout of 0.5 s). Each exchange now ends once
:data:`~mcp_sync.client.auth.oauth.HTTP_TIMEOUT` has passed in all, with the
error an answer trickled after its headers gets. The peers are real sockets
on 127.0.0.1 (``servers/trickler.py``, ``servers/scripted_auth.py``); each
call runs under :func:`helpers.finish_within`, so that a hang fails the
test at a generous bound instead of holding it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests
from helpers import finish_within
from servers.scripted_auth import Reply, ScriptedAuth
from servers.trickler import Trickler

from mcp_sync import MCPError
from mcp_sync.client.auth import OAuth
from mcp_sync.client.auth import oauth as oauth_module
from mcp_sync.client.auth.models import as_json

BOUND = 5.0
"""Far more than the 0.5 s deadline; far less than the 14 s the dribbled headers take."""
HEAD_PACE = 0.2
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
TOKENS = b'{"access_token": "slow", "token_type": "Bearer"}'


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oauth_module, "HTTP_TIMEOUT", 0.5)


@pytest.fixture
def auth() -> Iterator[ScriptedAuth]:
    with ScriptedAuth() as server:
        yield server


@pytest.fixture
def slow() -> Iterator[Trickler]:
    trickler = Trickler(TOKENS, head_pace=HEAD_PACE)
    yield trickler
    trickler.close()


def signing_in(auth: ScriptedAuth) -> OAuth:
    class Robot:
        redirect_uri = "http://127.0.0.1:8976/callback"

        def authorize(self, url: str, timeout: float) -> str:
            return auth.approve(url)

    return OAuth(interaction=Robot())


def reason(refused: pytest.ExceptionInfo[MCPError]) -> str:
    assert isinstance(refused.value.data, dict)
    return str(refused.value.data["reason"])


def test_a_token_endpoint_dribbling_its_headers_fails_the_sign_in(auth: ScriptedAuth, slow: Trickler) -> None:
    auth.metadata["token_endpoint"] = slow.url + "/token"
    oauth = signing_in(auth)
    with pytest.raises(MCPError, match=r"did not finish within 0\.5 s") as refused:
        finish_within(BOUND, lambda: oauth.login(auth.resource))
    assert reason(refused) == "unreachable"
    assert slow.requests == 1 and slow.head_sent < len(slow.head)


def test_a_registration_endpoint_dribbling_its_headers_fails_the_sign_in(auth: ScriptedAuth, slow: Trickler) -> None:
    auth.metadata["registration_endpoint"] = slow.url + "/register"
    oauth = signing_in(auth)
    with pytest.raises(MCPError, match="did not finish") as refused:
        finish_within(BOUND, lambda: oauth.login(auth.resource))
    assert reason(refused) == "unreachable" and auth.received("/token") == []


def test_metadata_dribbling_its_headers_is_skipped(auth: ScriptedAuth, slow: Trickler) -> None:
    header = f'Bearer resource_metadata="{slow.url}/prm"'
    auth.on("POST", "/mcp", Reply(401, headers={"WWW-Authenticate": header}), auth._serve_resource)
    oauth = signing_in(auth)
    answer = finish_within(BOUND, lambda: requests.post(auth.resource, json=PING, auth=oauth, timeout=BOUND))
    assert answer.status_code == 200  # on to the well-known URL, which answers at once
    assert slow.requests == 1 and slow.head_sent < len(slow.head)


def test_a_refresh_whose_answer_dribbles_its_headers_is_given_up_on(auth: ScriptedAuth, slow: Trickler) -> None:
    oauth = signing_in(auth)
    kept = oauth.login(auth.resource)
    assert kept is not None and kept.refresh_token is not None
    key = f"tokens {auth.resource}"
    oauth.store.save(key, as_json(kept.model_copy(update={"expires_at": time.time() - 1})))
    auth.metadata["token_endpoint"] = slow.url + "/token"
    # The refresh is given up on (the tokens forgotten), then the sign-in it falls back on too.
    with pytest.raises(MCPError, match="did not finish") as refused:
        finish_within(BOUND, lambda: requests.post(auth.resource, json=PING, auth=oauth, timeout=BOUND))
    assert reason(refused) == "unreachable"
    assert oauth.tokens(auth.resource) is None and slow.requests == 2


def test_a_resource_dribbling_the_headers_of_its_challenge_fails_the_login(slow: Trickler) -> None:
    oauth = OAuth(interaction=None)
    with pytest.raises(MCPError, match="did not finish") as refused:
        finish_within(BOUND, lambda: oauth.login(slow.url + "/mcp"))
    assert reason(refused) == "unreachable"
