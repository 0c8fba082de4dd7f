"""Where a sign-in may send its requests, and its person: the guards against the URLs a hostile server gives.

The URLs of a sign-in (protected-resource and authorization-server
metadata, registration, the token endpoint, the authorization endpoint)
come from the MCP server being connected to, or from where it points. Two
rules keep a hostile server from turning them against this machine:

**Addresses** (:class:`Neighbours`). Each address a request of the sign-in
connects to is checked before anything is sent there (see
:func:`~mcp_sync.runtime.http.bounded_request`): the host is looked up once
and the addresses found are the ones connected to, so a name that answers
differently the second time (DNS rebinding) gets nothing past it. Allowed:

- a public address;
- an address of this machine (loopback), of a private network (10/8,
  172.16/12, 192.168/16, 100.64/10, fc00::/7, each a network of its own)
  or of the link (169.254/16, fe80::/10), when one of the MCP server's own
  addresses (its host looked up) is in that same network: a server on
  127.0.0.1 may have its authorization server on this machine, one on
  10.1.2.3 anywhere in 10/8;
- never the cloud metadata services (169.254.169.254, fd00:ec2::254,
  169.254.170.2, 100.100.100.200), nor an unspecified, multicast, broadcast,
  reserved or documentation address.

``OAuth(allow_private_networks=True)`` turns the check off.

**The authorization URL** (:func:`check_openable`): the one URL a browser
is sent to must be ``https`` (or ``http`` to this machine) and made of
characters no shell and no URL opener takes as more than one argument.

>>> Neighbours("http://127.0.0.1:8000/mcp").allows("127.0.0.1"), Neighbours("https://93.184.215.14/mcp").allows("10.0.0.1")
(True, False)
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

from ...protocol.errors import MCPError
from ...protocol.oauth import secure_url
from ...runtime.http import looked_up
from .discovery import auth_error

__all__ = ["Neighbours", "check_openable"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_NETWORKS = (
    ("this machine", ("127.0.0.0/8", "::1/128")),
    ("the private network 10.0.0.0/8", ("10.0.0.0/8",)),
    ("the private network 172.16.0.0/12", ("172.16.0.0/12",)),
    ("the private network 192.168.0.0/16", ("192.168.0.0/16",)),
    ("the shared network 100.64.0.0/10", ("100.64.0.0/10",)),
    ("the private network fc00::/7", ("fc00::/7",)),
    ("the link (link-local)", ("169.254.0.0/16", "fe80::/10")),
)
"""The networks an address may share with the MCP server's: the name of each, and its ranges."""
_RANGES = [(name, ipaddress.ip_network(cidr)) for name, ranges in _NETWORKS for cidr in ranges]
_METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200")}
"""Cloud metadata services (AWS, GCP, Azure, OCI; AWS over IPv6; ECS tasks; Alibaba): they hand out credentials."""

PUBLIC = "the public Internet"
NOWHERE = "nowhere a sign-in may go"


def network(address: str) -> str:
    """The network ``address`` is on: :data:`PUBLIC`, one of the local networks by name, or :data:`NOWHERE`.

    >>> network("8.8.8.8"), network("::ffff:10.1.2.3"), network("169.254.169.254"), network("0.0.0.0")
    ('the public Internet', 'the private network 10.0.0.0/8', 'nowhere a sign-in may go', 'nowhere a sign-in may go')
    """
    ip: Address = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if ip in _METADATA or ip.is_multicast or ip.is_unspecified:
        return NOWHERE
    if ip.is_global:
        return PUBLIC
    return next((name for name, cidr in _RANGES if ip in cidr), NOWHERE)


class Neighbours:
    """The addresses the requests of a sign-in to the MCP server ``server_url`` may connect to (see the module).

    The server's host is looked up the first time an address off the
    public Internet is judged (a host that cannot be looked up has no
    network: only public addresses are allowed then).
    """

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self._own: set[str] | None = None

    def own_networks(self) -> set[str]:
        """The networks of the MCP server's addresses."""
        if self._own is None:
            try:
                found = looked_up(urlsplit(self.server_url).hostname or "")
            except (socket.gaierror, UnicodeError):
                found = []
            self._own = {network(address) for address in found} - {NOWHERE}
        return self._own

    def allows(self, address: str) -> bool:
        """Whether a request of the sign-in may connect to ``address``."""
        where = network(address)
        return where == PUBLIC or (where != NOWHERE and where in self.own_networks())

    def check(self, url: str, address: str) -> None:
        """Raise ``UNAUTHORIZED`` (``reason="private_network"``) unless ``url`` may be fetched from ``address``."""
        if self.allows(address):
            return
        raise refused_address(url, address, self.server_url)


def refused_address(url: str, address: str, server_url: str) -> MCPError:
    """The error of a request refused for where it would connect (the check of :class:`Neighbours`)."""
    where = network(address)
    on = "an address no sign-in goes to" if where == NOWHERE else f"an address of {where}"
    return auth_error(
        "private_network",
        f"refused to connect to {urlsplit(url).hostname} at {address}: {on}, which the MCP server {server_url} "
        "is not on (a server may not send its client there; OAuth(allow_private_networks=True) allows it)",
        url=url,
        address=address,
    )


_OPENABLE = re.compile(r"[A-Za-z0-9\-._~:/\[\]%]+(\?[A-Za-z0-9\-._~=&+%]*)?")
"""An authorization URL with nothing a shell or URL opener splits on: no space, quote, ``$``, backtick, ``|``, ``;``,
``<>``, ``(){}``, ``!``, ``^``, ``\\``, ``#``, control or non-ASCII character; ``&`` only between query parameters."""
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def check_openable(url: str, issuer: str) -> None:
    """Raise ``UNAUTHORIZED`` (``reason="unsafe_url"``) unless ``url`` is fit to send a browser to.

    It must be ``https`` (or ``http`` to this machine) and match a strict
    character set (see :data:`_OPENABLE`): an authorization endpoint such as
    ``https://a.example/$(calc)`` or ``file:///...`` is refused before
    anything is opened or shown.

    >>> check_openable("https://auth.example/authorize?client_id=a&state=b", "https://auth.example")
    >>> try:
    ...     check_openable("https://auth.example/x&calc.exe", "https://auth.example")
    ... except MCPError as refused:
    ...     print(refused.data)
    {'reason': 'unsafe_url'}
    """
    if secure_url(url) and _OPENABLE.fullmatch(url) and not _BAD_ESCAPE.search(url):
        return
    raise auth_error(
        "unsafe_url",
        f"the authorization server {issuer} names an authorization endpoint a browser must not be sent to "
        "(only https, or http to this machine, and no character a shell or URL opener could split on): "
        "the sign-in is refused",
    )
