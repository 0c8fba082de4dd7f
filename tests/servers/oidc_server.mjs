// A real OAuth 2.1 / OpenID Connect authorization server for the end-to-end tests: panva's
// `oidc-provider` (npm), configured as an MCP authorization server would be. Nobody here wrote the
// server; this file only configures it.
//
//   NODE_PATH=<dir holding node_modules/oidc-provider> node oidc_server.mjs \
//       --resource http://127.0.0.1:8000/mcp [--resource ...] [--opaque-resource URL ...] \
//       [--port 0] [--access-ttl 3600]
//
// It prints one line `listening http://127.0.0.1:PORT` to stdout once it accepts connections
// (with --port 0, the default, the system picks the port; the issuer is that URL). Everything
// else (oidc-provider's notices and warnings, request errors) goes to stderr.
//
// What it offers:
// - discovery at /.well-known/oauth-authorization-server (RFC 8414) and
//   /.well-known/openid-configuration;
// - open Dynamic Client Registration at /reg (RFC 7591, no initial access token);
// - the authorization code flow with PKCE S256 required for every client, and the RFC 9207 `iss`
//   parameter in every authorization response;
// - resource indicators (RFC 8707): a `resource` given with --resource yields a JWT access token
//   (header typ at+jwt, RS256) whose `aud` is that resource and whose `scope` holds the requested
//   scopes among `mcp:read mcp:write admin`; a resource given with --opaque-resource yields an opaque
//   access token (the same audience and scopes) for resource servers that introspect; any other
//   resource is refused with `invalid_target`;
// - token introspection (RFC 7662) at /token/introspection for confidential clients (any
//   registered client with a secret may introspect any token; oidc-provider answers 400
//   unsupported_token_type for JWT access tokens, which it does not introspect), and token
//   revocation (RFC 7009) at /token/revocation;
// - the client credentials grant for a client registered with it (a secret, no redirect URI):
//   with `resource`, a JWT access token for it as above;
// - refresh tokens when `offline_access` is granted to a client registered with the refresh_token
//   grant; OpenID Connect's rule applies: `offline_access` is dropped from an authorization request
//   without `prompt=consent`. Public clients' refresh tokens rotate on every use;
// - every token request (code or refresh) must repeat `resource`: without it the access token is an
//   opaque one for the userinfo endpoint (useGrantedResource stays false, the default);
// - access tokens that live --access-ttl seconds;
// - for a native client (application_type native), a loopback redirect URI
//   http://127.0.0.1:PORT/path matches the registered one whatever the port (RFC 8252 7.3;
//   oidc-provider does this itself); a web client's redirect URIs must match exactly;
// - the provider's own development login and consent pages (devInteractions), driven over HTTP:
//   GET /auth?...            -> 303 /interaction/UID (login page: a form posting to
//                               /interaction/UID with prompt=login, login=ANY, password=ANY)
//   POST /interaction/UID    -> 303 /auth/UID -> 303 /interaction/UID2 (consent page: a form
//                               posting prompt=consent)
//   POST /interaction/UID2   -> 303 /auth/UID2 -> 303 REDIRECT_URI?code=...&state=...&iss=...
//   (GET /interaction/UID/abort instead ends at REDIRECT_URI?error=access_denied&...);
// - POST /_test/verify (not oidc-provider's: what a resource server does) with a form field
//   `token`: the token is verified with `jose` (the JOSE library oidc-provider itself uses)
//   against the provider's JWKS, issuer, an accepted resource as audience, and expiry; the answer
//   is 200 with the claims, or 401 with {"error": "invalid_token", "error_description": ...}.
//
// Keys (a fresh RSA key per run), cookie keys and all state live in memory and die with the process.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

// oidc-provider's notices go through console.info (stdout): keep stdout for the ready line.
console.info = console.error;

const { values: options } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    resource: { type: 'string', multiple: true, default: [] },
    'opaque-resource': { type: 'string', multiple: true, default: [] },
    'access-ttl': { type: 'string', default: '3600' },
  },
});

const port = Number(options.port);
const accessTtl = Number(options['access-ttl']);
const resources = new Set(options.resource);
const opaqueResources = new Set(options['opaque-resource']);
if (!Number.isInteger(port) || port < 0 || !Number.isInteger(accessTtl) || accessTtl < 1 || !(resources.size + opaqueResources.size)) {
  console.error('usage: node oidc_server.mjs --resource URL [--resource URL ...] [--opaque-resource URL ...] [--port N] [--access-ttl SECONDS]');
  process.exit(2);
}

// ES modules ignore NODE_PATH; require.resolve honours it, so resolve there and import the files.
const require = createRequire(import.meta.url);
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const { default: Provider, errors } = await load('oidc-provider');
const jose = await load('jose');

const RESOURCE_SCOPE = 'mcp:read mcp:write admin';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  scopes: ['openid', 'offline_access', ...RESOURCE_SCOPE.split(' ')],
  async findAccount(ctx, sub) {
    return { accountId: sub, async claims() { return { sub }; } };
  },
  pkce: { required: () => true },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: true, initialAccessToken: false },
    rpInitiatedLogout: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // The defaults, spelled out: a single registered resource is not assumed, and a token
      // request without `resource` does not reuse the granted one (it gets a userinfo token).
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => false,
      async getResourceServerInfo(ctx, indicator) {
        if (opaqueResources.has(indicator)) {
          return { scope: RESOURCE_SCOPE, audience: indicator, accessTokenTTL: accessTtl, accessTokenFormat: 'opaque' };
        }
        if (!resources.has(indicator)) {
          throw new errors.InvalidTarget(`unknown resource ${indicator}`);
        }
        return {
          scope: RESOURCE_SCOPE,
          audience: indicator,
          accessTokenTTL: accessTtl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  ttl: {
    AccessToken: accessTtl,
    AuthorizationCode: 60,
    Grant: 24 * 60 * 60,
    IdToken: 60 * 60,
    Interaction: 10 * 60,
    RefreshToken: 24 * 60 * 60,
    Session: 24 * 60 * 60,
  },
});

provider.on('server_error', (ctx, error) => console.error('server_error', error));

const publicKeys = jose.createLocalJWKSet({
  keys: [Object.fromEntries(Object.entries(signingKey).filter(([name]) => ['kty', 'n', 'e', 'kid', 'use', 'alg'].includes(name)))],
});

async function verify(request, response) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const token = new URLSearchParams(Buffer.concat(chunks).toString()).get('token') ?? '';
  let status = 200;
  let body;
  try {
    const { payload } = await jose.jwtVerify(token, publicKeys, {
      issuer,
      audience: [...resources],
      typ: 'at+jwt',
      algorithms: ['RS256'],
      clockTolerance: 0,
    });
    body = payload;
  } catch (error) {
    status = 401;
    body = { error: 'invalid_token', error_description: `${error.code ?? error.name}: ${error.message}` };
  }
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}

const callback = provider.callback();
server.on('request', (request, response) => {
  if (request.method === 'POST' && request.url === '/_test/verify') {
    verify(request, response).catch((error) => {
      console.error(error);
      response.destroy();
    });
  } else {
    callback(request, response);
  }
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

process.stdout.write(`listening ${issuer}\n`);
