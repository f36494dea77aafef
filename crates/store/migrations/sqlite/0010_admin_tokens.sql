-- Bearer tokens of the admin API (issue 22), in the default database beside the signing keys:
-- an admin token is the operator's, not a tenant's, even when it is scoped to one tenant
-- (tenant_id set) rather than to every tenant (NULL). Only the SHA-256 of the token is kept.
CREATE TABLE admin_tokens (
    name        TEXT    NOT NULL PRIMARY KEY,
    tenant_id   TEXT,
    token_hash  BLOB    NOT NULL UNIQUE,
    created_at  BIGINT  NOT NULL,
    revoked_at  BIGINT
);
