-- The expiry indexes lead with `expires_at`, not `tenant_id`. Led by the tenant, they matched
-- the same prefix as the primary keys `(tenant_id, <hash>)`, and PostgreSQL, planning a lookup
-- by hash while the table was still empty and never analyzed, could take the expiry index and
-- filter the hash through every row of the tenant, in a plan the connection then kept. No
-- lookup filters on expiry; a clean-up (of every tenant, or of one) ranges over `expires_at`.
DROP INDEX authorization_requests_expiry;
CREATE INDEX authorization_requests_expiry ON authorization_requests (expires_at);
DROP INDEX browser_sessions_expiry;
CREATE INDEX browser_sessions_expiry ON browser_sessions (expires_at);
DROP INDEX authorization_codes_expiry;
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);
