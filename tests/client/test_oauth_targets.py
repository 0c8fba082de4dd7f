"""Where a hostile MCP server can send the OAuth client: neither to this machine's neighbours nor into a shell.

The URLs of a sign-in come from the server being connected to. These tests
point them at the cloud metadata service, private networks and this
machine (by name and by address, and by a name that answers another address
the second time: DNS rebinding), and at authorization endpoints that broke
other MCP clients (CVE-2025-6514: a crafted ``authorization_endpoint`` run by
the OS's URL opener). The resolver and ``connect()`` of this process are
recorded by :class:`Network`: names resolve to the addresses a test gives,
and only connections to 127.x go out (any other is recorded and refused on
the spot, so no packet leaves); every refusal is asserted to happen before
any ``connect()`` to the refused address. The authorization servers are
``servers/scripted_auth.py`` on 127.0.0.1, over HTTPS under a name where
the test needs one (a certificate made here, naming only that name).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from servers.scripted_auth import Reply, ScriptedAuth

from mcp_sync import MCPError
from mcp_sync.client.auth import ClientCredentials, OAuth
from mcp_sync.client.auth.targets import Neighbours, network
from mcp_sync.runtime.http import new_session

TIMEOUT = 10.0
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
REDIRECT = "http://127.0.0.1:8976/callback"
PUBLIC = "93.184.215.14"
"""A public address: a server said to be on the Internet resolves to it (nothing ever connects there)."""


class Network:
    """This process's resolver and ``connect()``, recorded; names in :attr:`names` resolve as the test says.

    ``names[name]`` is the list of answers, one per lookup (the last one
    repeats). ``lookups`` are the names looked up that way; ``connects`` the
    address of every ``connect()``. Only 127.x is really connected to: any
    other address is recorded and refused at once.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: dict[str, list[list[str]]] = {}
        self.lookups: list[str] = []
        self.connects: list[str] = []
        real_getaddrinfo = socket.getaddrinfo
        real_connect = socket.socket.connect

        def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:
            answers = self.names.get(host)
            if answers is None:
                return real_getaddrinfo(host, port, family, type, proto, flags)
            self.lookups.append(host)
            if not answers:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            addresses = answers.pop(0) if len(answers) > 1 else answers[0]
            found = []
            for address in addresses:
                if ":" in address:
                    found.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port or 0, 0, 0)))
                else:
                    found.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 0)))
            return found

        def connect(sock: socket.socket, address: Any) -> None:
            self.connects.append(address[0])
            if not ipaddress.ip_address(address[0]).is_loopback:
                raise ConnectionRefusedError(111, "refused by the test: nothing leaves this machine")
            real_connect(sock, address)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket.socket, "connect", connect)

    def resolve(self, name: str, *answers: list[str]) -> None:
        self.names[name] = list(answers)


@pytest.fixture
def net(monkeypatch: pytest.MonkeyPatch) -> Network:
    return Network(monkeypatch)


@pytest.fixture
def auth() -> Iterator[ScriptedAuth]:
    with ScriptedAuth() as server:
        yield server


class Robot:
    """A person who approves every sign-in at once; ``urls`` are the authorization URLs shown to them."""

    def __init__(self, auth: ScriptedAuth) -> None:
        self.auth = auth
        self.redirect_uri = REDIRECT
        self.urls: list[str] = []

    def authorize(self, url: str, timeout: float) -> str:
        self.urls.append(url)
        return self.auth.approve(url)


def reason(error: pytest.ExceptionInfo[MCPError]) -> str:
    data = error.value.data
    assert isinstance(data, dict), data
    return str(data["reason"])


def challenge_to(url: str) -> str:
    return f'Bearer resource_metadata="{url}"'


# ------------------------------------------------------------------------- the network rule


def test_the_network_of_an_address() -> None:
    assert network("8.8.8.8") == network("2606:4700::1111") == "the public Internet"
    assert network("127.0.0.1") == network("127.9.9.9") == network("::1") == "this machine"
    assert network("10.200.0.1") == network("::ffff:10.0.0.1") == "the private network 10.0.0.0/8"
    assert network("172.31.255.1") == "the private network 172.16.0.0/12" != network("192.168.0.1")
    assert network("169.254.1.1") == network("fe80::1") == "the link (link-local)"
    for nowhere in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "::ffff:169.254.169.254"):
        assert network(nowhere) == "nowhere a sign-in may go", nowhere
    for nowhere in ("0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255", "240.0.0.1", "192.0.2.1"):
        assert network(nowhere) == "nowhere a sign-in may go", nowhere


def test_the_mcp_servers_own_network_is_allowed_and_no_other(net: Network) -> None:
    net.resolve("mcp.corp.test", ["10.1.2.3"])
    net.resolve("localhost", ["::1", "127.0.0.1"])
    corp, local, public = (Neighbours(f"https://{host}/mcp") for host in ("mcp.corp.test", "localhost", PUBLIC))
    assert corp.allows("10.200.0.1") and corp.allows(PUBLIC) and not corp.allows("192.168.1.1")
    assert not corp.allows("127.0.0.1") and not corp.allows("169.254.169.254")
    assert local.allows("127.0.0.1") and local.allows("::1") and not local.allows("10.0.0.1")
    assert not public.allows("127.0.0.1") and not public.allows("10.0.0.1") and public.allows("8.8.8.8")
    assert net.lookups == ["mcp.corp.test", "localhost"]  # once each, and only when an address is not public
    net.resolve("gone.test")  # a name that does not resolve: no network of its own
    assert not Neighbours("https://gone.test/mcp").allows("127.0.0.1")


# -------------------------------------------------------- a hostile server's URLs, refused


def points(auth: ScriptedAuth, place: str, url: str) -> dict[str, str]:
    """Make ``auth`` (the MCP server, on 127.0.0.1) point its client's sign-in at ``url`` from ``place``."""
    if place == "challenge":
        auth.on("POST", "/mcp", Reply(401, headers={"WWW-Authenticate": challenge_to(url)}), auth._serve_resource)
    elif place == "authorization_servers":
        auth.resource_metadata["authorization_servers"] = [url]
    else:
        auth.metadata[place] = url
    return {"challenge": "/.well-known", "authorization_servers": "/.well-known"}.get(place, "")


TARGETS = [
    pytest.param("https://metadata.test", ["169.254.169.254"], "169.254.169.254", id="metadata-by-name"),
    pytest.param("https://[fd00:ec2::254]", None, "fd00:ec2::254", id="metadata-ipv6"),
    pytest.param("https://169.254.169.254", None, "169.254.169.254", id="metadata-by-ip"),
    pytest.param("https://router.test", ["192.168.1.1"], "192.168.1.1", id="private-by-name"),
    pytest.param("https://10.0.0.7", None, "10.0.0.7", id="private-by-ip"),
    pytest.param("https://any.test", ["0.0.0.0"], "0.0.0.0", id="unspecified"),
    pytest.param("https://mapped.test", ["::ffff:10.0.0.7"], "::ffff:10.0.0.7", id="ipv4-mapped"),
]


@pytest.mark.parametrize("origin, answers, address", TARGETS)
@pytest.mark.parametrize("place", ["challenge", "authorization_servers", "registration_endpoint", "token_endpoint"])
def test_a_server_cannot_send_the_sign_in_to_this_machines_neighbours(
    auth: ScriptedAuth, net: Network, place: str, origin: str, answers: list[str] | None, address: str
) -> None:
    host = origin.removeprefix("https://").strip("[]")
    if answers is not None:
        net.resolve(host, answers)
    paths = {
        "challenge": "/.well-known/oauth-protected-resource/mcp",
        "authorization_servers": "",
        "registration_endpoint": "/register",
        "token_endpoint": "/token",
    }
    points(auth, place, origin + paths[place])
    robot = Robot(auth)
    oauth = OAuth(interaction=robot)
    with pytest.raises(MCPError) as refused:
        requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT)
    assert reason(refused) == "private_network"
    assert f"at {address}:" in refused.value.message and "allow_private_networks=True" in refused.value.message
    assert address not in net.connects and set(net.connects) == {"127.0.0.1"}  # the MCP server's and its AS's
    assert oauth.tokens(auth.resource) is None
    if place != "token_endpoint":
        assert robot.urls == [] and auth.received("/token") == []


def test_a_server_on_the_internet_cannot_point_at_this_machine_unless_allowed(auth: ScriptedAuth, net: Network) -> None:
    net.resolve("mcp.public.test", [PUBLIC])
    server = "https://mcp.public.test/mcp"
    auth.resource_metadata["resource"] = server
    challenge = challenge_to(auth.url + "/.well-known/oauth-protected-resource/mcp")
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=Robot(auth)).begin(server, challenge)
    assert reason(refused) == "private_network" and "an address of this machine" in refused.value.message
    assert net.connects == [] and auth.received() == []
    url = OAuth(interaction=Robot(auth), allow_private_networks=True).begin(server, challenge)
    assert url.startswith(auth.url + "/authorize?") and net.connects  # the caller allowed it
    assert net.lookups == ["mcp.public.test"]  # the first time only: the opt-out looks nothing up


def test_a_server_on_a_private_network_may_use_that_network_and_no_other(net: Network) -> None:
    net.resolve("mcp.corp.test", ["10.1.2.3"])
    net.resolve("as.corp.test", ["10.9.9.9"])
    net.resolve("as.home.test", ["192.168.1.1"])
    server = "https://mcp.corp.test/mcp"
    oauth = OAuth(interaction=None, redirect_uri=REDIRECT)
    with pytest.raises(MCPError) as tried:
        oauth.begin(server, challenge_to("https://as.corp.test/prm"))
    # Allowed, so tried (the test's connect() refuses to really go there): nothing answers.
    assert reason(tried) == "unreachable" and "10.9.9.9" in net.connects and "10.1.2.3" in net.connects
    with pytest.raises(MCPError) as refused:
        oauth.begin(server, challenge_to("https://as.home.test/prm"))
    assert reason(refused) == "private_network" and "192.168.1.1" not in net.connects
    assert "an address of the private network 192.168.0.0/16" in refused.value.message
    net.resolve("gone.test")  # a name that does not resolve: that metadata is not there, as when unreachable
    with pytest.raises(MCPError) as gone:
        oauth.begin(server, challenge_to("https://gone.test/prm"))
    assert reason(gone) == "unreachable" and "gone.test" in net.lookups


# ----------------------------------------------------------------- where the check looks


def certificate(tmp_path: Path, *names: str) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate naming ``names`` only (no address), as the CA file to trust and a server context."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, context


def test_a_name_that_answers_another_address_the_second_time_reaches_nothing_unchecked(
    net: Network, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DNS rebinding: as.test is 127.0.0.1 (this machine, as the MCP server is) for its metadata, then the cloud
    # metadata service for the registration. Each connection is looked up once and goes where it was checked.
    cert, tls = certificate(tmp_path, "mcp.test", "as.test")
    for bundle in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(bundle, raising=False)  # requests would take it over the session's verify
    with ScriptedAuth(tls=tls, name="mcp.test") as auth:
        net.resolve("mcp.test", ["127.0.0.1"])
        net.resolve("as.test", ["127.0.0.1"], ["169.254.169.254"])
        issuer = auth.url.replace("mcp.test", "as.test")
        auth.resource_metadata["authorization_servers"] = [issuer]
        auth.metadata.update(issuer=issuer, registration_endpoint=issuer + "/register")
        session = new_session()
        session.verify = str(cert)  # the certificate names the hosts only: TLS checks the name, not the address
        robot = Robot(auth)
        try:
            with pytest.raises(MCPError) as refused:
                oauth = OAuth(interaction=robot, session=session)
                requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT, verify=str(cert))
        finally:
            session.close()
    assert reason(refused) == "private_network" and "as.test at 169.254.169.254" in refused.value.message
    assert "169.254.169.254" not in net.connects and net.lookups.count("as.test") == 2
    assert auth.received("/.well-known/oauth-authorization-server")  # reached over HTTPS, by its name
    assert robot.urls == [] and auth.received("/register") == []


def test_each_address_of_a_name_is_checked_before_it_is_tried(auth: ScriptedAuth, net: Network) -> None:
    # localhost answers 127.0.0.2 first (nothing listens there), then 127.0.0.1: tried in turn, as urllib3 does.
    net.resolve("localhost", ["127.0.0.2", "127.0.0.1"])
    local = auth.url.replace("127.0.0.1", "localhost")
    auth.metadata["token_endpoint"] = local + "/token"
    oauth = OAuth(interaction=Robot(auth))
    assert requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT).status_code == 200
    assert net.connects.count("127.0.0.2") == 1
    # The first address answers: the second is neither checked nor tried.
    net.resolve("localhost", ["127.0.0.1", "169.254.169.254"])
    oauth.logout(auth.resource)
    assert requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT).status_code == 200
    # Then 127.0.0.2 (refused), and the metadata service: checked before it is tried, so never tried.
    net.resolve("localhost", ["127.0.0.2", "169.254.169.254"])
    oauth.logout(auth.resource)
    with pytest.raises(MCPError) as refused:
        requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT)
    assert reason(refused) == "private_network" and "169.254.169.254" not in net.connects
    assert net.connects.count("127.0.0.2") == 2


def test_a_kept_connection_is_judged_by_the_address_it_reached(net: Network) -> None:
    net.resolve("mcp.public.test", [PUBLIC])
    with ScriptedAuth(keep_alive=True) as auth:
        oauth = OAuth(interaction=Robot(auth))
        try:
            assert oauth.http.get(auth.url + "/nothing", timeout=TIMEOUT).status_code == 404  # kept, unchecked
            assert oauth.begin(auth.resource).startswith(auth.url + "/authorize?")
            # The unchecked connection was closed, and one connection made, checked, served every request since.
            assert net.connects == ["127.0.0.1", "127.0.0.1"] and len(auth.received()) > 3
            auth.resource_metadata["resource"] = "https://mcp.public.test/mcp"
            challenge = challenge_to(auth.url + "/.well-known/oauth-protected-resource/mcp")
            with pytest.raises(MCPError) as refused:
                oauth.begin("https://mcp.public.test/mcp", challenge)  # the kept connection, to this machine
            received = len(auth.received())
            assert reason(refused) == "private_network" and net.connects == ["127.0.0.1", "127.0.0.1"]
            auth.resource_metadata["resource"] = auth.resource
            assert oauth.begin(auth.resource)  # the refused connection was closed: a new one, checked
            assert net.connects == ["127.0.0.1"] * 3 and len(auth.received()) > received
        finally:
            oauth.http.close()


def test_a_session_of_other_adapters_is_checked_on_a_lookup_of_its_own(auth: ScriptedAuth, net: Network) -> None:
    net.resolve("metadata.test", ["169.254.169.254"])
    points(auth, "token_endpoint", "https://metadata.test/token")
    plain = requests.Session()  # its adapters are not ClosableAdapters: the check sees no connection
    oauth = OAuth(interaction=Robot(auth), session=plain)
    try:
        with pytest.raises(MCPError) as refused:
            requests.post(auth.resource, json=PING, auth=oauth, timeout=TIMEOUT)
    finally:
        plain.close()
    assert reason(refused) == "private_network" and "169.254.169.254" not in net.connects
    assert auth.received("/register")  # the authorization server on this machine, as its MCP server, was used


def test_through_a_proxy_the_proxy_connects_and_is_not_refused(net: Network) -> None:
    # A proxy on this machine (or the office network) carries the sign-in of a server on the Internet: its own
    # address is not the authorization server's, and the target's is the proxy's to look up (nothing here does).
    net.resolve("mcp.public.test", [PUBLIC])
    net.resolve("localhost")  # a lookup here would fail
    server = "https://mcp.public.test/mcp"
    with ScriptedAuth(keep_alive=True) as auth:
        auth.resource_metadata["resource"] = server
        session = new_session()
        session.proxies = {"http": auth.url}  # the scripted server answers the absolute URLs a proxy is sent by path
        oauth = OAuth(interaction=Robot(auth), session=session)
        target = auth.url.replace("127.0.0.1", "localhost")
        try:
            for _ in range(2):  # the second time over the connection to the proxy kept from the first
                url = oauth.begin(server, challenge_to(target + "/.well-known/oauth-protected-resource/mcp"))
                assert url.startswith(auth.url + "/authorize?")
        finally:
            session.close()
    assert "localhost" not in net.lookups and net.connects == ["127.0.0.1"]


def test_a_machine_to_machine_grant_takes_the_opt_out(auth: ScriptedAuth, net: Network) -> None:
    net.resolve("mcp.public.test", [PUBLIC])
    auth.resource_metadata["resource"] = "https://mcp.public.test/mcp"
    challenge = challenge_to(auth.url + "/.well-known/oauth-protected-resource/mcp")
    for allowed in (False, True):
        grant = ClientCredentials("job", client_secret="s", allow_private_networks=allowed)
        with pytest.raises(MCPError) as failed:
            grant.begin("https://mcp.public.test/mcp", challenge)  # no interaction: begin stops after discovery
        assert (reason(failed) == "private_network") is not allowed


# ------------------------------------------------------------------- the authorization URL

UNSAFE_ENDPOINTS = [
    "https://auth.example/authorize$(calc.exe)",
    "https://auth.example/authorize`id`",
    "https://auth.example/authorize&calc.exe",
    "https://auth.example/authorize|calc.exe",
    "https://auth.example/authorize;calc.exe",
    "https://auth.example/a b",
    'https://auth.example/a"b',
    "https://auth.example/a'b",
    "https://auth.example/a\nb",
    "https://auth.example/a\tb",
    "https://auth.example/a<b>",
    "https://auth.example/a\\b",
    "https://auth.example/a^b!c",
    "https://auth.example/a%zzb",
    "https://auth.example/authorize#fragment",
    "https://auth.example/authorize?a=$(id)",
    "https://auth.example/authorize?a=b?c",
    "https://auth.exampl\u00e9/authorize",
]
UNSAFE_SCHEMES = [
    "a:$(cmd.exe /c whoami > c:\\temp\\pwned.txt)",  # CVE-2025-6514's payload
    "file:///etc/passwd",
    "javascript:alert(1)",
    "ms-settings:",
    "http://auth.example/authorize",
    "data:text/html,<script>alert(1)</script>",
]


@pytest.mark.parametrize("endpoint", UNSAFE_ENDPOINTS + UNSAFE_SCHEMES)
def test_an_authorization_endpoint_no_shell_may_split_is_refused_before_anything_opens(
    auth: ScriptedAuth, endpoint: str
) -> None:
    auth.metadata["authorization_endpoint"] = endpoint
    robot = Robot(auth)
    with pytest.raises(MCPError) as refused:
        OAuth(interaction=robot).login(auth.resource)
    # A scheme other than https (or http to this machine) is refused when the metadata is read (as before).
    assert reason(refused) == ("insecure_url" if endpoint in UNSAFE_SCHEMES else "unsafe_url")
    assert robot.urls == [] and auth.received("/register") == []
    with pytest.raises(MCPError) as begun:
        OAuth(interaction=None, redirect_uri=REDIRECT).begin(auth.resource)
    assert reason(begun) == reason(refused)


@pytest.mark.parametrize(
    "endpoint", ["/authorize", "/authorize?p=b2c_1_signin", "/o/oauth2/v2/auth", "/authorize?tenant=a%2Fb&x=1"]
)
def test_an_ordinary_authorization_endpoint_is_opened(auth: ScriptedAuth, endpoint: str) -> None:
    auth.metadata["authorization_endpoint"] = auth.url + endpoint
    url = OAuth(interaction=None, redirect_uri=REDIRECT).begin(auth.resource)
    assert url.startswith(auth.url + endpoint) and "state=" in url
