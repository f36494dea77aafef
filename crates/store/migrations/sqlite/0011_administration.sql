-- Administration (issue 22): what the admin API and the CLI change besides the rows' own
-- columns.
--
-- `disabled_at`: a disabled user cannot sign in and a disabled client cannot start a flow or
-- use the token endpoint. Disabling also revokes their grants and ends the user's browser
-- sessions in the same transaction, so enabling again brings back none of the old tokens.
ALTER TABLE users ADD COLUMN disabled_at BIGINT;
ALTER TABLE clients ADD COLUMN disabled_at BIGINT;

-- `revision`: raised by every administrative change of the row. With `created_at` it is the
-- record's ETag, and an update sent with If-Match applies only while both still match, in
-- the update's own statement, so two admins cannot overwrite each other silently.
ALTER TABLE tenants ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
ALTER TABLE clients ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
ALTER TABLE organizations ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;

-- A rotated client secret's predecessor, still accepted until `previous_secret_expires_at`
-- when the rotation gave a grace period (both NULL otherwise).
ALTER TABLE clients ADD COLUMN previous_secret_hash BLOB;
ALTER TABLE clients ADD COLUMN previous_secret_expires_at BIGINT;

-- Single-use links where a user sets a password (an invitation, or a recovery): one live link
-- per user, replaced by the next; only the SHA-256 of the link's random part is kept.
CREATE TABLE password_links (
    tenant_id   TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    token_hash  BLOB    NOT NULL,
    created_at  BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    CONSTRAINT password_links_token_key UNIQUE (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX password_links_expiry ON password_links (expires_at);

-- The admin API lists a user's or a client's grants, newest first, and disabling or deleting
-- either revokes them all; signing a user out everywhere ends their browser sessions.
CREATE INDEX grants_by_user ON grants (tenant_id, user_id, created_at);
CREATE INDEX grants_by_client ON grants (tenant_id, client_id, created_at);
CREATE INDEX browser_sessions_by_user ON browser_sessions (tenant_id, user_id);
