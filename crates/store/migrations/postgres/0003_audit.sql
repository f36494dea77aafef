-- The audit trail: what happened to each tenant's accounts and grants, kept by tenant like
-- every tenant record (tenant_id leads the key, so the table distributes on it).
CREATE TABLE audit_events (
    tenant_id    TEXT    NOT NULL,
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY, -- order within a second
    occurred_at  BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,
    subject      TEXT,   -- the user id, or the username typed at a failed sign-in
    client_id    TEXT,
    address      TEXT,   -- the client address of a browser step
    detail       TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX audit_events_by_time ON audit_events (tenant_id, occurred_at);

-- Events of the global signing keys, beside the keys in the default database.
CREATE TABLE key_events (
    seq          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at  BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,
    kid          TEXT    NOT NULL
);
