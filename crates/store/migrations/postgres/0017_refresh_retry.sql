-- Client settings of issue 27.
--
-- `refresh_retry_seconds`: how long after a refresh token was consumed the same client may
-- present it again and be answered as for a fresh refresh, provided the successor issued
-- then was never used (a response lost on a bad network). 0, the default, is spec §5.7 as
-- before: any second presentation revokes the grant.
ALTER TABLE clients ADD COLUMN refresh_retry_seconds BIGINT NOT NULL DEFAULT 0
    CHECK (refresh_retry_seconds BETWEEN 0 AND 120);

-- RFC 9449 §5.2 client metadata: the client's access tokens must be DPoP-bound. Stored and
-- shown here; 0 or 1, as the other flags of this schema.
ALTER TABLE clients ADD COLUMN dpop_bound_access_tokens BIGINT NOT NULL DEFAULT 0
    CHECK (dpop_bound_access_tokens IN (0, 1));

-- `successor_hash`: the hash of the token the rotation that consumed this one issued (NULL
-- while unconsumed, and on tokens consumed before this migration). `retried_at`: when this
-- consumed token was retried; the retry ended that successor and points `successor_hash` at
-- the token it issued instead. A consumed token is retried once at most.
ALTER TABLE refresh_tokens ADD COLUMN successor_hash BYTEA;
ALTER TABLE refresh_tokens ADD COLUMN retried_at BIGINT;
