-- Sign-out, the account page and password recovery (issue 23).
--
-- `sid`: the OpenID `sid` of a browser session (Front- and Back-Channel Logout 1.0), a
-- random public identifier, never the cookie's value. The code issued in a session carries
-- it, and so does the grant the code starts, so every ID token of that grant names the
-- session, and ending the session finds the clients to tell. NULL on rows older than this.
ALTER TABLE browser_sessions ADD COLUMN sid TEXT;
CREATE UNIQUE INDEX browser_sessions_sid ON browser_sessions (tenant_id, sid);
ALTER TABLE authorization_codes ADD COLUMN sid TEXT;
ALTER TABLE grants ADD COLUMN sid TEXT;
CREATE INDEX grants_by_sid ON grants (tenant_id, sid);

-- RP-Initiated Logout 1.0: the exact URIs a client may be sent back to after sign-out (a
-- JSON array, like redirect_uris). Back-Channel Logout 1.0: where its logout tokens go.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT;

-- NIST SP 800-63B §5.1.1.2: each tenant's minimum password length (8 to 64).
ALTER TABLE tenants ADD COLUMN password_min_length BIGINT NOT NULL DEFAULT 10;

-- Password-recovery mails asked for, counted per account (kind 'account', key the user id)
-- and per client address (kind 'address') in fixed windows, for every node: a caller cannot
-- make the server send mail without bound. A row whose window has ended is dead.
CREATE TABLE recovery_quotas (
    tenant_id          TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('account', 'address')),
    subject            TEXT    NOT NULL,
    requests           BIGINT  NOT NULL,
    window_started_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, kind, subject)
);
CREATE INDEX recovery_quotas_window ON recovery_quotas (window_started_at);

-- Back-Channel Logout 1.0: one row per logout token still to deliver, written in the
-- transaction that ends the session (by any node or by the CLI), so a delivery survives the
-- process that asked for it. Running nodes claim due rows (`next_attempt_at`), sign and POST
-- the token, and delete the row on success or after the last attempt.
CREATE TABLE backchannel_logouts (
    tenant_id        TEXT    NOT NULL,
    delivery_id      TEXT    NOT NULL,
    client_id        TEXT    NOT NULL,
    user_id          TEXT    NOT NULL,
    sid              TEXT    NOT NULL,
    attempts         BIGINT  NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT  NOT NULL,
    created_at       BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, delivery_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE
);
CREATE INDEX backchannel_logouts_due ON backchannel_logouts (next_attempt_at);
