-- A version per organization's data, raised in the same transaction as every write to it, so
-- the API can tell whether a response it kept is still the answer (docs/decisions.md, the
-- API's response cache). Triggers, not application code, raise it: no write path can forget,
-- whether it is the API, the CLI, a seed or an operator's SQL. A missing row means "unknown":
-- the API then keeps nothing for that organization. A version starts at a random value, not
-- at 1: an organization copied to another database (a shard move) or restored from a backup
-- must not count up through versions that once meant other data.
CREATE TABLE organization_data_versions (
    tenant_id          TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    version            BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, organization_guid),
    FOREIGN KEY (tenant_id, organization_guid)
        REFERENCES organizations (tenant_id, organization_guid) ON DELETE CASCADE
);

INSERT INTO organization_data_versions (tenant_id, organization_guid, version)
    SELECT tenant_id, organization_guid, floor(random() * 4611686018427387904)::bigint FROM organizations;

CREATE FUNCTION organization_data_version_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO organization_data_versions (tenant_id, organization_guid, version)
        VALUES (NEW.tenant_id, NEW.organization_guid, floor(random() * 4611686018427387904)::bigint);
    RETURN NULL;
END
$$;

CREATE TRIGGER organizations_data_version_insert AFTER INSERT ON organizations
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_created();

-- The records the API reads, and the organization's own row. A row never moves to another
-- organization (every foreign key names the organization), but an update raises both sides'
-- versions all the same.
CREATE FUNCTION organization_data_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE organization_data_versions SET version = version + 1
            WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE'
            AND (NEW.tenant_id, NEW.organization_guid)
                IS DISTINCT FROM (OLD.tenant_id, OLD.organization_guid)) THEN
        UPDATE organization_data_versions SET version = version + 1
            WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER organizations_data_version_update AFTER UPDATE ON organizations
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER employees_data_version AFTER INSERT OR UPDATE OR DELETE ON employees
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER shifts_data_version AFTER INSERT OR UPDATE OR DELETE ON shifts
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER customers_data_version AFTER INSERT OR UPDATE OR DELETE ON customers
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER customer_contacts_data_version AFTER INSERT OR UPDATE OR DELETE ON customer_contacts
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER properties_data_version AFTER INSERT OR UPDATE OR DELETE ON properties
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER work_orders_data_version AFTER INSERT OR UPDATE OR DELETE ON work_orders
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER jobs_data_version AFTER INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER job_assignments_data_version AFTER INSERT OR UPDATE OR DELETE ON job_assignments
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER invoices_data_version AFTER INSERT OR UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER invoice_lines_data_version AFTER INSERT OR UPDATE OR DELETE ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
CREATE TRIGGER payments_data_version AFTER INSERT OR UPDATE OR DELETE ON payments
    FOR EACH ROW EXECUTE FUNCTION organization_data_version_raise();
