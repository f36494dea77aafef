// node-oidc-provider set up as close to fieldauth as it allows, for
// `fieldauth-bench --target node-oidc-provider` (see docs/comparison.md).
//
// Two listeners on loopback:
// - the provider on --port, with fieldauth's paths (`/oauth/token`, …), which the bench measures;
// - a seeding endpoint on --seed-port, which the bench calls before each measured window only:
//   it makes refresh tokens and authorization codes through the provider's own models, so the
//   bench never drives node-oidc-provider's interactive login pages.
//
// Every place this differs from fieldauth says so in a comment starting with "Deviation".
//
// Run it the way the bench does:
//   NODE_ENV=production node server.mjs --port 3000 --seed-port 3001 \
//     --audience http://127.0.0.1:3002

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'seed-port': { type: 'string' },
    // The API the access tokens are for (their `aud`), as fieldauth's `--api-url`.
    audience: { type: 'string' },
  },
});
for (const name of ['port', 'seed-port', 'audience']) {
  if (!args[name]) {
    process.stderr.write(`server.mjs: --${name} is required\n`);
    process.exit(2);
  }
}
if (process.env.NODE_ENV !== 'production') {
  process.stderr.write('server.mjs: run with NODE_ENV=production\n');
  process.exit(2);
}

const ISSUER = `http://127.0.0.1:${args.port}`;
const AUDIENCE = args.audience;
// What the bench's `bench-spa` client is in fieldauth: a public client (no secret; the bench's
// token requests send `client_id` in the body and nothing else), PKCE, this redirect URI.
const CLIENT_ID = 'bench-spa';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
// The bench's LOGIN_SCOPE.
const SCOPE = 'openid profile email offline_access';

// fieldauth's lifetimes (crates/oauth/src/token/issue.rs, CODE_LIFETIME).
const ACCESS_TOKEN_TTL = 3600;
const ID_TOKEN_TTL = 600;
const REFRESH_TOKEN_TTL = 30 * 86400;
const CODE_TTL = 60;

// One RSA-2048 key, made at start as fieldauth's first key is; RS256 for ID tokens and
// access tokens alike.
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: crypto.randomUUID(),
  alg: 'RS256',
  use: 'sig',
};

// The users: what fieldauth reads from its `users` table, here a Map. The seeding endpoint
// adds `bench-000`, `bench-001`, … as the bench asks for them.
// Deviation: fieldauth reads the user from its database on every exchange and refresh.
const accounts = new Map();

function addAccount(accountId) {
  if (!accounts.has(accountId)) {
    const index = accountId.replace(/^bench-/, '');
    accounts.set(accountId, {
      sub: accountId,
      name: `Bench User ${Number(index)}`,
      preferred_username: accountId,
      email: `${accountId}@example.com`,
      // fieldauth never verifies addresses and says so.
      email_verified: false,
    });
  }
}

// Deviation: the store. The default adapter is in memory too, but it is an LRU that keeps
// about 1,000 entries, so the pool of codes the bench makes before the warm-up (thousands)
// would be evicted before use. This one is the same idea without the cap: one Map, expiry
// checked on read, and an index of each grant's tokens for revocation. No database at all,
// where fieldauth writes every code, grant and refresh token to SQLite or PostgreSQL.
const store = new Map();
const grantMembers = new Map();

class MapAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
    store.set(key, { payload, expiresAt });
    if (payload.grantId) {
      let members = grantMembers.get(payload.grantId);
      if (!members) {
        members = new Set();
        grantMembers.set(payload.grantId, members);
      }
      members.add(key);
    }
  }

  async find(id) {
    const key = this.key(id);
    const entry = store.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.forget(key, entry.payload);
      return undefined;
    }
    return entry.payload;
  }

  async findByUid() {
    // Sessions are never made: the bench has no browser here.
    return undefined;
  }

  async findByUserCode() {
    return undefined;
  }

  async consume(id) {
    const entry = store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    const key = this.key(id);
    const entry = store.get(key);
    if (entry) this.forget(key, entry.payload);
  }

  async revokeByGrantId(grantId) {
    const members = grantMembers.get(grantId);
    if (!members) return;
    for (const key of members) store.delete(key);
    grantMembers.delete(grantId);
  }

  forget(key, payload) {
    store.delete(key);
    if (payload.grantId) grantMembers.get(payload.grantId)?.delete(key);
  }
}

const provider = new Provider(ISSUER, {
  adapter: MapAdapter,
  jwks: { keys: [signingKey] },
  clients: [{
    client_id: CLIENT_ID,
    token_endpoint_auth_method: 'none',
    redirect_uris: [REDIRECT_URI],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    id_token_signed_response_alg: 'RS256',
  }],
  // fieldauth's paths, so the bench sends the same requests to both servers.
  routes: {
    authorization: '/oauth/authorize',
    token: '/oauth/token',
    userinfo: '/oauth/userinfo',
    jwks: '/oauth/jwks',
    revocation: '/oauth/revoke',
  },
  scopes: ['openid', 'offline_access', 'profile', 'email'],
  // The ID token carries what fieldauth puts in it for these scopes.
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    email: ['email', 'email_verified'],
  },
  async findAccount(_ctx, accountId) {
    const claims = accounts.get(accountId);
    if (!claims) return undefined;
    return { accountId, claims: async () => claims };
  },
  // RFC 7636 with S256 (the only method this version accepts), required of every client.
  pkce: { required: () => true },
  // A new refresh token on every use; the old one is spent, and presenting it again revokes
  // the grant, as in fieldauth.
  rotateRefreshToken: true,
  ttl: {
    AccessToken: ACCESS_TOKEN_TTL,
    AuthorizationCode: CODE_TTL,
    IdToken: ID_TOKEN_TTL,
    RefreshToken: REFRESH_TOKEN_TTL,
    Grant: REFRESH_TOKEN_TTL,
    Interaction: 3600,
    Session: 86400,
  },
  features: {
    // The login and consent pages are not measured (no Argon2id here: nothing to compare).
    devInteractions: { enabled: false },
    // RFC 9068 JWT access tokens, as fieldauth issues: one resource server, the API, whose
    // URL is every access token's `aud`. The codes and refresh tokens are granted that
    // resource, and `useGrantedResource` makes the token endpoint use it without a
    // `resource` parameter (the bench sends none, as it sends none to fieldauth).
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: SCOPE,
        audience: AUDIENCE,
        accessTokenFormat: 'jwt',
        accessTokenTTL: ACCESS_TOKEN_TTL,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
    // Deviation: fieldauth's access tokens also carry `tenant`, `organization_guid`,
    // `auth_time` and `grant_id`, and its ID tokens `azp`, `auth_time` and `at_hash`;
    // node-oidc-provider's carry its own set. Each JWT is a few hundred bytes either way;
    // the RSA signature costs the same.
  },
  // 32 random bytes, as fieldauth's cookie keys would be; no cookie is set in the bench.
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
});

// Failures are logged (one line each); successes are not, as `--server-log warn` in fieldauth.
provider.on('server_error', (_ctx, error) => {
  process.stderr.write(`server_error: ${error?.stack ?? error}\n`);
});
provider.on('grant.error', (_ctx, error) => {
  process.stderr.write(`grant.error: ${error?.error ?? ''} ${error?.error_description ?? ''}\n`);
});

// --- the seeding endpoint (not measured: the bench calls it before each window) ---

const client = await provider.Client.find(CLIENT_ID);
if (!client) throw new Error(`client ${CLIENT_ID} not loaded`);

const epoch = () => Math.floor(Date.now() / 1000);

// A grant of every scope to the API for one user, as a consent in fieldauth makes.
async function makeGrant(accountId) {
  addAccount(accountId);
  const grant = new provider.Grant({ accountId, clientId: CLIENT_ID });
  grant.addOIDCScope(SCOPE);
  grant.addResourceScope(AUDIENCE, SCOPE);
  return grant.save();
}

// The first refresh token of a rotation chain, as a code exchange with offline_access issues.
// Deviation: it carries a nonce, as a chain started by a code exchange does in
// node-oidc-provider, which then repeats it in every refresh's ID token; fieldauth puts no
// nonce in a refresh's ID token (OpenID Connect Core §12.2).
async function makeRefreshToken(accountId) {
  const grantId = await makeGrant(accountId);
  const token = new provider.RefreshToken({
    accountId,
    authTime: epoch(),
    client,
    expiresWithSession: false,
    grantId,
    gty: 'authorization_code',
    nonce: crypto.randomBytes(16).toString('base64url'),
    resource: AUDIENCE,
    rotations: 0,
    scope: SCOPE,
  });
  return token.save();
}

// A code with its PKCE pair, as the consent redirect of fieldauth hands one out; its own
// grant, as each consent in fieldauth makes its own.
async function makeCode(accountId) {
  const grantId = await makeGrant(accountId);
  const verifier = crypto.randomBytes(32).toString('base64url');
  const code = new provider.AuthorizationCode({
    accountId,
    authTime: epoch(),
    client,
    codeChallenge: crypto.hash('sha256', verifier, 'base64url'),
    codeChallengeMethod: 'S256',
    expiresWithSession: false,
    grantId,
    nonce: crypto.randomBytes(16).toString('base64url'),
    redirectUri: REDIRECT_URI,
    resource: AUDIENCE,
    scope: SCOPE,
  });
  return { code: await code.save(), code_verifier: verifier };
}

const MAX_BATCH = 10000;

async function seed(url) {
  const account = url.searchParams.get('account') ?? '';
  const count = Number(url.searchParams.get('count'));
  if (!/^bench-\d{3,}$/.test(account) || !Number.isInteger(count) || count < 1 || count > MAX_BATCH) {
    return [400, { error: `expected account=bench-NNN and count=1..${MAX_BATCH}` }];
  }
  switch (url.pathname) {
    case '/seed/refresh-tokens': {
      const tokens = [];
      for (let i = 0; i < count; i += 1) tokens.push(await makeRefreshToken(account));
      return [200, { refresh_tokens: tokens }];
    }
    case '/seed/codes': {
      const codes = [];
      for (let i = 0; i < count; i += 1) codes.push(await makeCode(account));
      return [200, { codes }];
    }
    default:
      return [404, { error: 'not found' }];
  }
}

const seeder = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  let status;
  let body;
  if (req.method === 'GET' && url.pathname === '/readyz') {
    [status, body] = [200, { ready: true, oidc_provider: provider.constructor.name }];
  } else if (req.method === 'POST') {
    try {
      [status, body] = await seed(url);
    } catch (error) {
      process.stderr.write(`seeding failed: ${error?.stack ?? error}\n`);
      [status, body] = [500, { error: 'seeding failed' }];
    }
  } else {
    [status, body] = [405, { error: 'method not allowed' }];
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
});

const server = provider.listen(Number(args.port), '127.0.0.1');
// Deviation from node's 5 s default: the bench keeps its connections open, idle between a
// paced connection's requests; fieldauth (axum::serve) sets no idle timeout either.
server.keepAliveTimeout = 120_000;
seeder.listen(Number(args['seed-port']), '127.0.0.1');

// The bench stops the server with SIGTERM and expects a clean exit.
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
