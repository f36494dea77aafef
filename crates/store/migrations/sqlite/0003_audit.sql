-- The audit trail: what happened to each tenant's accounts and grants, kept by tenant like
-- every tenant record. SQLite's autoincrement key must stand alone, so the tenant leads an
-- index instead.
CREATE TABLE audit_events (
    seq          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, -- order within a second
    tenant_id    TEXT    NOT NULL,
    occurred_at  BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,
    subject      TEXT,   -- the user id, or the username typed at a failed sign-in
    client_id    TEXT,
    address      TEXT,   -- the client address of a browser step
    detail       TEXT    NOT NULL
);
CREATE INDEX audit_events_by_tenant ON audit_events (tenant_id, seq);

-- Events of the global signing keys, beside the keys in the default database.
CREATE TABLE key_events (
    seq          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    occurred_at  BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,
    kid          TEXT    NOT NULL
);
