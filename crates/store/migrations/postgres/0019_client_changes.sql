-- A mark that changes with every change of any client of the database, so a node can tell
-- in one read whether the clients' CORS origins it keeps in memory are still current, and
-- read every client again only then (at 100,000 tenants that read took a second of CPU every
-- 30 s; docs/performance.md). Triggers, not application code, change it, so no write path
-- can forget: the CLI, the admin API, a shard move, a tenant's delete (cascades fire them),
-- an operator's SQL. A new random value rather than a count: a database restored from a
-- backup and changed again must not come back to a mark a node saw for other clients.
CREATE TABLE client_changes (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    mark  BIGINT  NOT NULL
);
INSERT INTO client_changes (id, mark)
    VALUES (1, floor(random() * 4611686018427387904)::bigint);

CREATE FUNCTION client_changes_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE client_changes SET mark = floor(random() * 4611686018427387904)::bigint
        WHERE id = 1;
    RETURN NULL;
END
$$;

-- Once per statement: a statement that writes many clients changes the mark once.
CREATE TRIGGER clients_change AFTER INSERT OR UPDATE OR DELETE ON clients
    FOR EACH STATEMENT EXECUTE FUNCTION client_changes_mark();
