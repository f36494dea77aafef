-- Grants, refresh tokens and authorization codes keyed by their primary key alone (WITHOUT
-- ROWID). In a rowid table each row is written twice over, in the table's b-tree under its
-- rowid and in the primary key's own index, so every insert dirtied a page of each, and a
-- WAL commit writes every page it dirties as a 4 KiB frame: a code exchange wrote two pages
-- more than it needs, a refresh one (docs/performance.md). Keyed by the primary key, the row
-- lives in that key's b-tree, a lookup by hash reads one b-tree instead of two, and the other
-- indexes point at the key. The rows are small (under 400 bytes), as such tables should be.
-- PostgreSQL's tables are heaps with the key beside them either way: no change there.
--
-- SQLite changes a table's kind only by building it again. refresh_tokens references grants
-- with ON DELETE CASCADE, so its rows are set aside before grants is dropped (dropping a
-- parent deletes its children's rows) and come back once grants is built again. The columns
-- keep their order, the migrations' ALTER TABLE ones included.

CREATE TABLE refresh_tokens_kept AS SELECT * FROM refresh_tokens;
DROP TABLE refresh_tokens;

CREATE TABLE grants_rebuilt (
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
    sid                TEXT,
    amr                TEXT,
    dpop_jkt           TEXT,
    PRIMARY KEY (tenant_id, grant_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO grants_rebuilt
    (tenant_id, grant_id, client_id, user_id, organization_guid, scope, auth_time, created_at,
     revoked_at, revoked_reason, sid, amr, dpop_jkt)
SELECT tenant_id, grant_id, client_id, user_id, organization_guid, scope, auth_time, created_at,
       revoked_at, revoked_reason, sid, amr, dpop_jkt
FROM grants;
DROP TABLE grants;
ALTER TABLE grants_rebuilt RENAME TO grants;
CREATE INDEX grants_created ON grants (created_at);
CREATE INDEX grants_by_user ON grants (tenant_id, user_id, created_at);
CREATE INDEX grants_by_client ON grants (tenant_id, client_id, created_at);
CREATE INDEX grants_by_sid ON grants (tenant_id, sid);

CREATE TABLE refresh_tokens (
    tenant_id       TEXT    NOT NULL,
    token_hash      BLOB    NOT NULL,
    grant_id        TEXT    NOT NULL,
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    consumed_at     BIGINT,
    successor_hash  BLOB,
    retried_at      BIGINT,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, grant_id) REFERENCES grants (tenant_id, grant_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO refresh_tokens
    (tenant_id, token_hash, grant_id, created_at, expires_at, consumed_at, successor_hash,
     retried_at)
SELECT tenant_id, token_hash, grant_id, created_at, expires_at, consumed_at, successor_hash,
       retried_at
FROM refresh_tokens_kept;
DROP TABLE refresh_tokens_kept;
CREATE INDEX refresh_tokens_grant ON refresh_tokens (tenant_id, grant_id);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);

CREATE TABLE authorization_codes_rebuilt (
    tenant_id          TEXT    NOT NULL,
    code_hash          BLOB    NOT NULL,
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
    sid                TEXT,
    amr                TEXT,
    PRIMARY KEY (tenant_id, code_hash),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO authorization_codes_rebuilt
    (tenant_id, code_hash, client_id, redirect_uri, user_id, organization_guid, scope, nonce,
     code_challenge, auth_time, created_at, expires_at, redeemed_at, grant_id, sid, amr)
SELECT tenant_id, code_hash, client_id, redirect_uri, user_id, organization_guid, scope, nonce,
       code_challenge, auth_time, created_at, expires_at, redeemed_at, grant_id, sid, amr
FROM authorization_codes;
DROP TABLE authorization_codes;
ALTER TABLE authorization_codes_rebuilt RENAME TO authorization_codes;
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);
