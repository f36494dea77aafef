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
    SELECT tenant_id, organization_guid, (random() & 4611686018427387903) FROM organizations;

CREATE TRIGGER organizations_data_version_insert AFTER INSERT ON organizations BEGIN
    INSERT INTO organization_data_versions (tenant_id, organization_guid, version)
        VALUES (NEW.tenant_id, NEW.organization_guid, (random() & 4611686018427387903));
END;

CREATE TRIGGER organizations_data_version_update AFTER UPDATE ON organizations BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;

-- The records the API reads. A row never moves to another organization (every foreign key
-- names the organization), but an update raises both sides' versions all the same.

CREATE TRIGGER employees_data_version_insert AFTER INSERT ON employees BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER employees_data_version_update AFTER UPDATE ON employees BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER employees_data_version_delete AFTER DELETE ON employees BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER shifts_data_version_insert AFTER INSERT ON shifts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER shifts_data_version_update AFTER UPDATE ON shifts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER shifts_data_version_delete AFTER DELETE ON shifts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER customers_data_version_insert AFTER INSERT ON customers BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER customers_data_version_update AFTER UPDATE ON customers BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER customers_data_version_delete AFTER DELETE ON customers BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER customer_contacts_data_version_insert AFTER INSERT ON customer_contacts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER customer_contacts_data_version_update AFTER UPDATE ON customer_contacts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER customer_contacts_data_version_delete AFTER DELETE ON customer_contacts BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER properties_data_version_insert AFTER INSERT ON properties BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER properties_data_version_update AFTER UPDATE ON properties BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER properties_data_version_delete AFTER DELETE ON properties BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER work_orders_data_version_insert AFTER INSERT ON work_orders BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER work_orders_data_version_update AFTER UPDATE ON work_orders BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER work_orders_data_version_delete AFTER DELETE ON work_orders BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER jobs_data_version_insert AFTER INSERT ON jobs BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER jobs_data_version_update AFTER UPDATE ON jobs BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER jobs_data_version_delete AFTER DELETE ON jobs BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER job_assignments_data_version_insert AFTER INSERT ON job_assignments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER job_assignments_data_version_update AFTER UPDATE ON job_assignments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER job_assignments_data_version_delete AFTER DELETE ON job_assignments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER invoices_data_version_insert AFTER INSERT ON invoices BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER invoices_data_version_update AFTER UPDATE ON invoices BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER invoices_data_version_delete AFTER DELETE ON invoices BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER invoice_lines_data_version_insert AFTER INSERT ON invoice_lines BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER invoice_lines_data_version_update AFTER UPDATE ON invoice_lines BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER invoice_lines_data_version_delete AFTER DELETE ON invoice_lines BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;

CREATE TRIGGER payments_data_version_insert AFTER INSERT ON payments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid;
END;
CREATE TRIGGER payments_data_version_update AFTER UPDATE ON payments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE (tenant_id = NEW.tenant_id AND organization_guid = NEW.organization_guid)
           OR (tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid);
END;
CREATE TRIGGER payments_data_version_delete AFTER DELETE ON payments BEGIN
    UPDATE organization_data_versions SET version = version + 1
        WHERE tenant_id = OLD.tenant_id AND organization_guid = OLD.organization_guid;
END;
