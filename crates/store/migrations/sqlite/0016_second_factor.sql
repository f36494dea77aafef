-- A second factor: TOTP, recovery codes and passkeys, the tenant's policy, and how each
-- session was signed in (issue 24).

-- The tenant's policy: 'off' (no second factor is asked or offered), 'optional' (users may
-- enroll one; once enrolled it is always asked), 'required' (a user without one enrolls one
-- right after the password, before anything else).
ALTER TABLE tenants ADD COLUMN mfa_policy TEXT NOT NULL DEFAULT 'optional'
    CHECK (mfa_policy IN ('off', 'optional', 'required'));

-- RFC 8176 `amr` values the session has proved, space-separated ('pwd', 'pwd otp mfa',
-- 'hwk mfa', ...). `factor_due` is set while the password is proved but a second factor is
-- still owed ('verify') or must first be enrolled ('enroll'): such a session signs nothing
-- in, it only lets the browser finish that step. `mfa_at`: when a second factor was last
-- proved in it (a request with acr_values=...:mfa asks for one newer than itself).
ALTER TABLE browser_sessions ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';
ALTER TABLE browser_sessions ADD COLUMN factor_due TEXT
    CHECK (factor_due IN ('verify', 'enroll'));
ALTER TABLE browser_sessions ADD COLUMN mfa_at BIGINT;

-- The request asked for acr urn:fieldauth:acr:mfa: a second factor proved after it began.
ALTER TABLE authorization_requests ADD COLUMN acr_mfa BIGINT NOT NULL DEFAULT 0;

-- The session's `amr` when the code was issued: the code's grant, and every ID token of it,
-- carries it (OpenID Connect Core §2: amr and acr describe the original authentication).
ALTER TABLE authorization_codes ADD COLUMN amr TEXT;
ALTER TABLE grants ADD COLUMN amr TEXT;

-- RFC 6238 TOTP: one authenticator per user. `secret` is sealed under the KEK like the
-- signing keys (context: tenant and user). `confirmed_at` is NULL until a first code proved
-- the user holds it; only a confirmed one counts. `last_step`: the last time step a code was
-- accepted for; a code of that step or an earlier one is refused (no replay).
CREATE TABLE totp_credentials (
    tenant_id     TEXT    NOT NULL,
    user_id       TEXT    NOT NULL,
    secret        BLOB    NOT NULL,
    confirmed_at  BIGINT,
    last_step     BIGINT,
    created_at    BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);

-- Ten single-use recovery codes per user, kept only as SHA-256 hashes.
CREATE TABLE recovery_codes (
    tenant_id   TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    code_hash   BLOB    NOT NULL,
    created_at  BIGINT  NOT NULL,
    used_at     BIGINT,
    PRIMARY KEY (tenant_id, user_id, code_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);

-- WebAuthn: the random user handle a user's passkeys carry (never the user id, which may be
-- guessable), and the passkeys themselves. `credential` is the serialized public credential
-- (public key, sign counter, flags): nothing secret.
CREATE TABLE webauthn_users (
    tenant_id    TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    user_handle  TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX webauthn_users_handle ON webauthn_users (tenant_id, user_handle);

CREATE TABLE passkeys (
    tenant_id      TEXT    NOT NULL,
    credential_id  BLOB    NOT NULL,
    user_id        TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    credential     TEXT    NOT NULL,
    created_at     BIGINT  NOT NULL,
    last_used_at   BIGINT,
    PRIMARY KEY (tenant_id, credential_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX passkeys_by_user ON passkeys (tenant_id, user_id);

-- A WebAuthn ceremony under way (registration or authentication): the server's state,
-- challenge included, found by the SHA-256 of a random handle and used at most once, so any
-- node can finish a ceremony another began.
CREATE TABLE webauthn_ceremonies (
    tenant_id       TEXT    NOT NULL,
    ceremony_hash   BLOB    NOT NULL,
    kind            TEXT    NOT NULL CHECK (kind IN ('register', 'authenticate', 'discover')),
    user_id         TEXT,
    state           TEXT    NOT NULL,
    expires_at      BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, ceremony_hash)
);
CREATE INDEX webauthn_ceremonies_expiry ON webauthn_ceremonies (expires_at);
