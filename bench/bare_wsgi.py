"""The floor of gunicorn itself for ``http_bench.py``: a bare WSGI app answering every POST a fixed JSON body.

It reads the request's body and answers the same text-only ``tools/call``
result the ceiling does, with ``Content-Length``: what any WSGI app pays for
being hosted by gunicorn, without MCP. ``http_bench.py`` runs it as
``gunicorn -k gthread ... bare_wsgi:application`` with ``bench/`` on the path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", HEADERS)
    return [BODY]
