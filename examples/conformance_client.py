"""The client that the official MCP conformance suite tests: one behaviour per scenario.

The suite starts a mock server for a scenario, then runs this script with
the server's URL as its last argument, the scenario's name in the
environment variable ``MCP_CONFORMANCE_SCENARIO`` and the protocol revision
of the run in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` (harness 0.2)::

    npx @modelcontextprotocol/conformance client \\
        --command "python examples/conformance_client.py" --scenario tools_call

The script connects with mcp_sync's Streamable HTTP client in its default
era, ``"auto"``: it probes with ``server/discover`` and speaks 2026-07-28
(stateless: ``_meta`` on every request, no initialize) when the server does,
the initialize handshake otherwise, so each run exercises the negotiation
too. It does what the scenario asks and exits 0 on success and 1 on any
failure. A scenario it does not know gets a connection and a tool listing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import requests

from mcp_sync import MCPClient, MCPError
from mcp_sync.client.auth import ClientCredentials, EnterpriseAuthorization, OAuth, SigningKey, WorkloadIdentity
from mcp_sync.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitResult,
    Root,
    TextContent,
)

log = logging.getLogger("conformance-client")

TIMEOUT = 20.0
"""Seconds any one request may take; the suite kills the client after 30."""

_SAMPLES: dict[str, Any] = {
    "string": "us-west1",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "object": {},
    "array": [],
}


def accept(params: ElicitRequestFormParams) -> ElicitResult:
    """Accept every form without filling in a field: the client adds the schema's defaults itself (SEP-1034)."""
    log.info("elicitation %r accepted", params.message)
    return ElicitResult(action="accept", content={})


def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    """Answer a sampling request with a fixed message."""
    return CreateMessageResult(role="assistant", content=TextContent(text="a sampled answer"), model="conformance")


CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""This client's metadata document, as the harness expects it (used where the server supports them)."""


class FollowRedirect:
    """The harness's authorization server approves at once: fetch the URL and take its redirect, unfollowed."""

    redirect_uri = "http://127.0.0.1:3000/callback"

    def authorize(self, url: str, timeout: float) -> str:
        response = requests.get(url, allow_redirects=False, timeout=timeout)
        location = response.headers.get("Location")
        if response.status_code not in (301, 302, 303, 307) or not location:
            raise RuntimeError(f"the authorization server answered {response.status_code}, not a redirect")
        return location


def oauth(context: dict[str, Any], *, dpop: bool = False) -> OAuth:
    """The OAuth of a scenario: pre-registered when the harness gives credentials, else it registers itself."""
    return OAuth(
        client_name="mcp-sync-conformance-client",
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
        interaction=FollowRedirect(),
        dpop=dpop,
    )


ENTERPRISE = ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow")
"""SEP-990's scenario, as harness 0.2 and harness 0.1.16 name it."""


def authorization(scenario: str, context: dict[str, Any]) -> OAuth:
    """The auth of a scenario: the extensions' grants without a person, else :func:`oauth` (with DPoP for SEP-1932).

    ``auth/wif-jwt-bearer`` sends the context's ``valid_jwt``; the tests set
    ``MCP_SYNC_WIF_ASSERTION`` to another of its JWTs (``expired_jwt``,
    ``wrong_audience_jwt``) and ``MCP_SYNC_WIF_SCOPE`` to a scope the server
    refuses, to see the refusals surface without a retry.
    """
    if scenario.startswith("auth/client-credentials-"):
        if "private_key_pem" in context:
            key = SigningKey(context["private_key_pem"], context.get("signing_algorithm"))
            return ClientCredentials(context["client_id"], client_key=key)
        return ClientCredentials(context["client_id"], context["client_secret"])
    if scenario in ENTERPRISE:
        return EnterpriseAuthorization(
            context["client_id"],
            context["client_secret"],
            id_token=context["idp_id_token"],
            idp_issuer=context["idp_issuer"],
            idp_token_endpoint=context.get("idp_token_endpoint"),
            idp_client_id=context.get("idp_client_id"),
        )
    if scenario == "auth/wif-jwt-bearer":
        scope = os.environ.get("MCP_SYNC_WIF_SCOPE")
        return WorkloadIdentity(
            context[os.environ.get("MCP_SYNC_WIF_ASSERTION", "valid_jwt")],
            client_id=context.get("client_id"),
            scopes=scope.split() if scope else None,
        )
    return oauth(context, dpop=scenario.startswith("auth/dpop"))


def connect(url: str) -> MCPClient:
    """A client connected over Streamable HTTP, with every provider set, in the era it negotiates."""
    from mcp_sync.client import http_client

    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return http_client(
        url,
        auth=authorization(os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), context),
        transport="streamable",  # the suite speaks Streamable HTTP only
        name="mcp-sync-conformance-client",
        version="1.0.0",
        timeout=TIMEOUT,
        elicitation_provider=accept,
        sampling_provider=sample,
        roots_provider=lambda: [Root(uri="file:///tmp", name="tmp")],
    )


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a sample value of its type for each required property."""
    properties = schema.get("properties") or {}
    return {
        name: _SAMPLES.get(str((properties.get(name) or {}).get("type")), "x") for name in schema.get("required") or ()
    }


def checked(client: MCPClient, name: str, arguments: dict[str, Any] | None = None) -> str:
    """Call a tool; its text, or RuntimeError when it reports an error."""
    result = client.call_tool(name, arguments or {})
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.text}")
    log.info("%s: %s", name, result.text)
    return result.text


def handshake(client: MCPClient) -> None:
    """``initialize`` (and any scenario only about connecting): connect, then list the tools."""
    tools = client.list_tools().tools
    log.info("connected to %s (%s); %d tools", client.server_info.name, client.protocol_version, len(tools))


def call_every_tool(client: MCPClient) -> None:
    """Authorization scenarios: list the tools, then call each (a call may need more scopes than the listing)."""
    for tool in client.list_tools().tools:
        checked(client, tool.name, arguments_for(tool.input_schema))


def call_add_numbers(client: MCPClient) -> None:
    """``tools_call``: find ``add_numbers`` and call it with two numbers."""
    names = [tool.name for tool in client.list_tools().tools]
    if "add_numbers" not in names:
        raise RuntimeError(f"the server has no add_numbers tool (it has {names})")
    checked(client, "add_numbers", {"a": 5, "b": 3})


def elicitation_defaults(client: MCPClient) -> None:
    """``elicitation-sep1034-client-defaults``: the tool elicits; we accept with the schema's defaults."""
    checked(client, "test_client_elicitation_defaults")


def reconnection(client: MCPClient) -> None:
    """``sse-retry``: the server closes the call's stream early; the result comes after we reconnect."""
    checked(client, "test_reconnection")


def request_state(client: MCPClient) -> None:
    """``sep-2322-client-request-state``: input rounds with and without state, an unrelated call between them.

    The unrelated tool is called from inside the elicitation that answers
    the first tool's round, so that it goes out while that round is open.
    """
    inner = client.elicitation_provider
    assert inner is not None
    unrelated: list[str] = []

    def elicit_then_call(params: ElicitRequestFormParams) -> ElicitResult:
        if not unrelated:
            unrelated.append(checked(client, "test_mrtr_unrelated"))
        return inner(params)

    client.set_elicitation_provider(elicit_then_call)
    checked(client, "test_mrtr_echo_state")
    checked(client, "test_mrtr_no_state")
    checked(client, "test_mrtr_no_result_type")


def standard_headers(client: MCPClient) -> None:
    """``http-standard-headers``: every kind of request, so that each one's Mcp-Method and Mcp-Name are seen."""
    for tool in client.list_tools().tools:
        checked(client, tool.name, arguments_for(tool.input_schema))
    for resource in client.list_resources().resources:
        client.read_resource(resource.uri)
    for prompt in client.list_prompts().prompts:
        client.get_prompt(prompt.name)


def custom_headers(client: MCPClient) -> None:
    """``http-custom-headers``: the calls the scenario lists, whose arguments the tools mirror into headers."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    for call in context.get("toolCalls", []):
        checked(client, call["name"], call.get("arguments"))


def invalid_tool_headers(client: MCPClient) -> None:
    """``http-invalid-tool-headers``: call every tool the client kept (those with invalid headers are left out)."""
    for tool in client.tools():
        checked(client, tool.name, arguments_for(tool.input_schema))


def schema_preservation(client: MCPClient) -> None:
    """``json-schema-2020-12-preservation``: echo a tool's input schema back through another tool, verbatim."""
    tools = {tool.name: tool for tool in client.list_tools().tools}
    checked(client, "json_schema_echo", {"schema": tools["json_schema_2020_12_tool"].input_schema})


def skills_listed(client: MCPClient) -> None:
    """``sep-2640-client-no-prefetch``: list the skills and read none of their files (no skill is loaded)."""
    log.info("skills: %s", [skill.name for skill in client.list_skills()])


def skills_loaded(client: MCPClient) -> None:
    """``sep-2640-client-verify-*``: load each skill, then read its other files; every read is verified.

    A SKILL.md whose size, digest or frontmatter is not its entry's raises
    :class:`~mcp_sync.client.skills.SkillVerificationError` before any other
    file of the skill is read.
    """
    for skill in client.list_skills():
        loaded = client.load_skill(skill)
        for uri in loaded.files():
            log.info("%s: %d bytes", uri, len(client.read_skill_file(skill, uri)))


SCENARIOS: dict[str, Callable[[MCPClient], None]] = {
    "initialize": handshake,
    "tools_call": call_add_numbers,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": reconnection,
    "request-metadata": handshake,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": handshake,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2640-client-no-prefetch": skills_listed,
    "sep-2640-client-verify-digest": skills_loaded,
    "sep-2640-client-verify-size": skills_loaded,
    "sep-2640-client-verify-frontmatter": skills_loaded,
}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    if len(argv) < 2:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=NAME {argv[0]} SERVER_URL", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario) or (call_every_tool if scenario.startswith("auth/") else None)
    if run is None:
        log.info("scenario %r is not one this client knows: connecting only", scenario)
        run = handshake
    try:
        with connect(url) as client:
            run(client)
    except (MCPError, RuntimeError, OSError) as exc:
        log.error("scenario %s failed: %s", scenario, exc)
        return 1
    log.info("scenario %s done", scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
