-- Every tenant-owned table leads its primary key with tenant_id, and nothing references
-- another tenant's row: a tenant can live on its own shard (docs/tenancy.md).
-- Times are Unix seconds. Secrets are stored as SHA-256 hashes (BYTEA), passwords as Argon2id PHC strings.

CREATE TABLE tenants (
    tenant_id   TEXT    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL
);

CREATE TABLE clients (
    tenant_id      TEXT    NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    client_id      TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    client_type    TEXT    NOT NULL CHECK (client_type IN ('public', 'confidential')),
    secret_hash    BYTEA,
    redirect_uris  TEXT    NOT NULL, -- JSON array of exact URIs
    scopes         TEXT    NOT NULL, -- space-delimited allowed scopes
    created_at     BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, client_id),
    CHECK ((client_type = 'confidential') = (secret_hash IS NOT NULL))
);

CREATE TABLE users (
    tenant_id      TEXT    NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    user_id        TEXT    NOT NULL, -- the OpenID `sub`
    username       TEXT    NOT NULL,
    password_hash  TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    email          TEXT    NOT NULL,
    created_at     BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    CONSTRAINT users_username_key UNIQUE (tenant_id, username)
);

CREATE TABLE organizations (
    tenant_id          TEXT    NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    organization_guid  TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, organization_guid)
);

CREATE TABLE memberships (
    tenant_id          TEXT    NOT NULL,
    user_id            TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, user_id, organization_guid),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, organization_guid)
        REFERENCES organizations (tenant_id, organization_guid) ON DELETE CASCADE
);

-- A pending authorization request, from GET /oauth/authorize to the consent POST. The forms
-- carry a random handle (stored hashed); the request is bound to the browser by the hash of
-- its cookie, and to the user once one has signed in for it or brought a session.
CREATE TABLE authorization_requests (
    tenant_id       TEXT    NOT NULL,
    request_hash    BYTEA    NOT NULL,
    client_id       TEXT    NOT NULL,
    redirect_uri    TEXT    NOT NULL,
    scope           TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    nonce           TEXT,
    code_challenge  TEXT    NOT NULL,
    login_hint      TEXT,
    browser_hash    BYTEA    NOT NULL,
    csrf_hash       BYTEA    NOT NULL,
    user_id         TEXT,
    auth_time       BIGINT,
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    consumed_at     BIGINT,
    PRIMARY KEY (tenant_id, request_hash),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE
);
CREATE INDEX authorization_requests_expiry ON authorization_requests (tenant_id, expires_at);

-- The server-side record behind a signed-in browser's cookie.
CREATE TABLE browser_sessions (
    tenant_id     TEXT    NOT NULL,
    session_hash  BYTEA    NOT NULL,
    user_id       TEXT    NOT NULL,
    auth_time     BIGINT  NOT NULL,
    created_at    BIGINT  NOT NULL,
    expires_at    BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, session_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX browser_sessions_expiry ON browser_sessions (tenant_id, expires_at);

-- A grant: what one redeemed authorization code issued, the token family of spec §5.7. Its
-- access tokens name it, so revoking it (code replay, refresh-token reuse, revocation)
-- ends them too; its refresh tokens rotate within it.
CREATE TABLE grants (
    tenant_id          TEXT    NOT NULL,
    grant_id           TEXT    NOT NULL,
    client_id          TEXT    NOT NULL,
    user_id            TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    scope              TEXT    NOT NULL,
    auth_time          BIGINT  NOT NULL,
    created_at         BIGINT  NOT NULL,
    revoked_at         BIGINT,
    revoked_reason     TEXT,
    PRIMARY KEY (tenant_id, grant_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);

CREATE TABLE refresh_tokens (
    tenant_id    TEXT    NOT NULL,
    token_hash   BYTEA    NOT NULL,
    grant_id     TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    consumed_at  BIGINT,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, grant_id) REFERENCES grants (tenant_id, grant_id) ON DELETE CASCADE
);
CREATE INDEX refresh_tokens_grant ON refresh_tokens (tenant_id, grant_id);

CREATE TABLE authorization_codes (
    tenant_id          TEXT    NOT NULL,
    code_hash          BYTEA    NOT NULL,
    client_id          TEXT    NOT NULL,
    redirect_uri       TEXT    NOT NULL,
    user_id            TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    scope              TEXT    NOT NULL,
    nonce              TEXT,
    code_challenge     TEXT    NOT NULL,
    auth_time          BIGINT  NOT NULL,
    created_at         BIGINT  NOT NULL,
    expires_at         BIGINT  NOT NULL,
    redeemed_at        BIGINT,
    grant_id           TEXT, -- what the redemption issued, revoked if the code is replayed
    PRIMARY KEY (tenant_id, code_hash),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX authorization_codes_expiry ON authorization_codes (tenant_id, expires_at);

-- Failed sign-ins counted per account (kind 'account', key the username) and per client
-- address (kind 'address'), for the delay-then-lock throttle. A row resets once its window
-- has passed.
CREATE TABLE signin_failures (
    tenant_id         TEXT    NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('account', 'address')),
    subject           TEXT    NOT NULL,
    failures          BIGINT  NOT NULL,
    first_failure_at  BIGINT  NOT NULL,
    last_failure_at   BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, kind, subject)
);

-- The issuer is global, so signing keys are the one table without a tenant.
CREATE TABLE signing_keys (
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- creation order: the newest signs
    kid          TEXT    NOT NULL UNIQUE,
    algorithm    TEXT    NOT NULL CHECK (algorithm = 'RS256'),
    private_key  BYTEA    NOT NULL, -- PKCS#8 DER
    created_at   BIGINT  NOT NULL,
    retired_at   BIGINT
);
