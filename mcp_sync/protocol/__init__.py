"""The protocol layer: what both roles agree on, as models, data and pure functions, each rule once.

Pydantic and the standard library only: no I/O and no threads. The modules:

- ``types/``: the pydantic models of every MCP wire shape, by feature (its docstring has the conventions);
- ``messages``: the per-method envelopes, the typed error responses and the unions of messages by direction;
- ``jsonrpc``: one JSON text decoded into a message (or into how to refuse it), and a message encoded;
- ``batch``: JSON-RPC batches, which revision 2025-03-26 alone allows;
- ``errors``: the codes, ``MCPError`` and its two subclasses, and ``validate`` (validation errors as ``MCPError``);
- ``versions``: the known revisions in order (compared by position, never as strings) and what each lacks;
- ``stateless``: the 2026-07-28 era as data: its ``_meta`` keys, the methods of each kind, how to tell the era;
- ``headers``: the codec of the ``Mcp-*`` headers that mirror a request's body;
- ``grammar``: the HTTP token, quoted-string and auth-param rules;
- ``oauth``: well-known URLs, ``WWW-Authenticate`` challenges, bearer credentials, scopes, loopback;
- ``schema``: the one reader of JSON schemas (``type``, ``enum``, ``anyOf``/``oneOf``);
- ``tasks``: tasks on the wire, the ``io.modelcontextprotocol/tasks`` extension and the 2025-11-25 form;
- ``apps``: the MCP Apps extension (``io.modelcontextprotocol/ui``): ``_meta.ui`` of tools and resources, visibility;
- ``skills`` and ``frontmatter``: the skills extension's wire models, and SKILL.md frontmatter read without YAML;
- ``rendering``: the seam through which the wire models display richly, filled in from above.

May import: ``protocol``.
Must not import: ``runtime``, ``transports``, ``display``, ``client``, ``server``, ``llm``, ``apps``,
nor the composition level.
"""
