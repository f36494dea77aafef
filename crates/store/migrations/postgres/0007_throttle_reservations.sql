-- Sign-in attempts are reserved before the password is checked (issue 26, issue 20): a
-- reservation is held `in_flight` until the attempt ends, and no more than the limit of
-- failures plus attempts in flight is admitted, per account and per address. `failures`
-- now counts only attempts that ended wrong, so a reservation no longer delays a parallel
-- sign-in of the same user. A row starts over once `last_attempt_at` is a window old, which
-- also frees a reservation whose request never ended. `refusals` counts the attempts refused
-- since the last failure: only the first of them is written to the audit trail.
ALTER TABLE signin_failures ADD COLUMN in_flight BIGINT NOT NULL DEFAULT 0;
ALTER TABLE signin_failures ADD COLUMN last_attempt_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE signin_failures ADD COLUMN refusals BIGINT NOT NULL DEFAULT 0;
UPDATE signin_failures SET last_attempt_at = last_failure_at;

-- Authorization requests started without a session, counted per client address (an IPv6
-- address by its /64) in fixed windows, so an anonymous caller cannot make the server store
-- requests without bound. A row whose window has ended is dead: the next request restarts it.
CREATE TABLE authorization_request_quotas (
    tenant_id          TEXT    NOT NULL,
    address            TEXT    NOT NULL,
    requests           BIGINT  NOT NULL,
    window_started_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, address)
);
CREATE INDEX authorization_request_quotas_window ON authorization_request_quotas (window_started_at);
