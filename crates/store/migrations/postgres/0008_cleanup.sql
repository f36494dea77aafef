-- The expiry clean-up (`Store::clean_up`) deletes by these columns in batches; without an
-- index each batch would read the whole table. Like the expiry indexes of 0005 they lead with
-- the time, not the tenant, so no lookup by key can mistake them for a key's index.
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);
CREATE INDEX grants_created ON grants (created_at);
CREATE INDEX signin_failures_last_attempt ON signin_failures (last_attempt_at);
CREATE INDEX audit_events_occurred ON audit_events (occurred_at);
