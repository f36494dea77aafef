-- Field-service records (DESIGN.md, Model): each row belongs to one organization of one tenant.
-- The API reaches them only through the token's tenant and organization, so every lookup and
-- every foreign key names both, and no row can point into another organization.
-- Money is integer cents beside an ISO 4217 currency; times are Unix seconds; calendar dates
-- are 'YYYY-MM-DD' text (which sorts as dates do). Statuses are upper-case words, as in the API.

-- Per-organization counters behind the readable numbers of work orders and invoices.
CREATE TABLE record_numbers (
    tenant_id          TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('work_order', 'invoice')),
    last_value         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, organization_guid, kind),
    FOREIGN KEY (tenant_id, organization_guid)
        REFERENCES organizations (tenant_id, organization_guid) ON DELETE CASCADE
);

CREATE TABLE employees (
    tenant_id          TEXT    NOT NULL,
    employee_id        TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    role               TEXT    NOT NULL
        CHECK (role IN ('TECHNICIAN', 'DISPATCHER', 'SUPERVISOR', 'ADMINISTRATOR')),
    email              TEXT,
    phone              TEXT,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, employee_id),
    -- Lets children reference (employee, organization) together, so a row cannot cross over.
    UNIQUE (tenant_id, organization_guid, employee_id),
    FOREIGN KEY (tenant_id, organization_guid)
        REFERENCES organizations (tenant_id, organization_guid) ON DELETE CASCADE
);
CREATE INDEX employees_by_name ON employees (tenant_id, organization_guid, name, employee_id);

CREATE TABLE shifts (
    tenant_id          TEXT    NOT NULL,
    shift_id           TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    employee_id        TEXT    NOT NULL,
    starts_at          BIGINT  NOT NULL,
    ends_at            BIGINT  NOT NULL,
    note               TEXT,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, shift_id),
    CHECK (ends_at > starts_at),
    FOREIGN KEY (tenant_id, organization_guid, employee_id)
        REFERENCES employees (tenant_id, organization_guid, employee_id) ON DELETE CASCADE
);
CREATE INDEX shifts_by_employee ON shifts (tenant_id, employee_id, starts_at);

-- The billing profile is one per customer, so it lives in the customer's row.
CREATE TABLE customers (
    tenant_id           TEXT    NOT NULL,
    customer_id         TEXT    NOT NULL,
    organization_guid   TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    -- The name lowercased by the application (Unicode-aware, unlike SQLite's LOWER), for
    -- search by any case on both backends.
    name_key            TEXT    NOT NULL,
    billing_email       TEXT,
    billing_currency    TEXT    NOT NULL,
    payment_terms_days  BIGINT  NOT NULL CHECK (payment_terms_days BETWEEN 0 AND 365),
    tax_id              TEXT,
    billing_street      TEXT,
    billing_city        TEXT,
    billing_region      TEXT,
    billing_postal_code TEXT,
    billing_country     TEXT,
    created_at          BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, customer_id),
    UNIQUE (tenant_id, organization_guid, customer_id),
    FOREIGN KEY (tenant_id, organization_guid)
        REFERENCES organizations (tenant_id, organization_guid) ON DELETE CASCADE
);
CREATE INDEX customers_by_name ON customers (tenant_id, organization_guid, name, customer_id);

CREATE TABLE customer_contacts (
    tenant_id          TEXT    NOT NULL,
    customer_id        TEXT    NOT NULL,
    position           BIGINT  NOT NULL,
    organization_guid  TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    email              TEXT,
    phone              TEXT,
    PRIMARY KEY (tenant_id, customer_id, position),
    FOREIGN KEY (tenant_id, organization_guid, customer_id)
        REFERENCES customers (tenant_id, organization_guid, customer_id) ON DELETE CASCADE
);

CREATE TABLE properties (
    tenant_id          TEXT    NOT NULL,
    property_id        TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    customer_id        TEXT    NOT NULL,
    label              TEXT    NOT NULL,
    street             TEXT    NOT NULL,
    city               TEXT    NOT NULL,
    region             TEXT,
    postal_code        TEXT    NOT NULL,
    country            TEXT    NOT NULL,
    access_notes       TEXT,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, property_id),
    UNIQUE (tenant_id, organization_guid, customer_id, property_id),
    FOREIGN KEY (tenant_id, organization_guid, customer_id)
        REFERENCES customers (tenant_id, organization_guid, customer_id) ON DELETE CASCADE
);
CREATE INDEX properties_by_customer ON properties (tenant_id, customer_id, created_at);

-- A work order's contract is optional and one per order: all five columns or none.
CREATE TABLE work_orders (
    tenant_id             TEXT    NOT NULL,
    work_order_id         TEXT    NOT NULL,
    organization_guid     TEXT    NOT NULL,
    number                BIGINT  NOT NULL,
    customer_id           TEXT    NOT NULL,
    property_id           TEXT,
    description           TEXT    NOT NULL,
    status                TEXT    NOT NULL
        CHECK (status IN ('OPEN', 'IN_PROGRESS', 'ON_HOLD', 'COMPLETED', 'CANCELLED')),
    contract_terms        TEXT,
    contract_value_cents  BIGINT  CHECK (contract_value_cents >= 0),
    contract_currency     TEXT,
    contract_starts_on    TEXT,
    contract_ends_on      TEXT,
    created_at            BIGINT  NOT NULL,
    updated_at            BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, work_order_id),
    UNIQUE (tenant_id, organization_guid, number),
    UNIQUE (tenant_id, organization_guid, work_order_id),
    CHECK ((contract_terms IS NULL) = (contract_value_cents IS NULL)
       AND (contract_terms IS NULL) = (contract_currency IS NULL)
       AND (contract_terms IS NULL) = (contract_starts_on IS NULL)
       AND (contract_terms IS NULL) = (contract_ends_on IS NULL)),
    CHECK (contract_ends_on >= contract_starts_on),
    FOREIGN KEY (tenant_id, organization_guid, customer_id)
        REFERENCES customers (tenant_id, organization_guid, customer_id),
    FOREIGN KEY (tenant_id, organization_guid, customer_id, property_id)
        REFERENCES properties (tenant_id, organization_guid, customer_id, property_id)
);
CREATE INDEX work_orders_by_customer ON work_orders (tenant_id, customer_id);

CREATE TABLE jobs (
    tenant_id          TEXT    NOT NULL,
    job_id             TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    work_order_id      TEXT    NOT NULL,
    title              TEXT    NOT NULL,
    status             TEXT    NOT NULL
        CHECK (status IN ('SCHEDULED', 'IN_PROGRESS', 'COMPLETED')),
    scheduled_start    BIGINT  NOT NULL,
    scheduled_end      BIGINT  NOT NULL,
    started_at         BIGINT,
    completed_at       BIGINT,
    completion_notes   TEXT,
    minutes_worked     BIGINT  CHECK (minutes_worked >= 0),
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, job_id),
    UNIQUE (tenant_id, organization_guid, job_id),
    CHECK (scheduled_end > scheduled_start),
    FOREIGN KEY (tenant_id, organization_guid, work_order_id)
        REFERENCES work_orders (tenant_id, organization_guid, work_order_id)
);
CREATE INDEX jobs_by_schedule ON jobs (tenant_id, organization_guid, scheduled_start, job_id);
CREATE INDEX jobs_by_work_order ON jobs (tenant_id, work_order_id);

CREATE TABLE job_assignments (
    tenant_id          TEXT    NOT NULL,
    job_id             TEXT    NOT NULL,
    employee_id        TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    assigned_at        BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, job_id, employee_id),
    FOREIGN KEY (tenant_id, organization_guid, job_id)
        REFERENCES jobs (tenant_id, organization_guid, job_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, organization_guid, employee_id)
        REFERENCES employees (tenant_id, organization_guid, employee_id) ON DELETE CASCADE
);
CREATE INDEX job_assignments_by_employee ON job_assignments (tenant_id, employee_id);

-- Lines are fixed at creation, so the totals are kept in the invoice row; paid_cents moves
-- only by a conditional update that can never pass total_cents.
CREATE TABLE invoices (
    tenant_id          TEXT    NOT NULL,
    invoice_id         TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    number             BIGINT  NOT NULL,
    customer_id        TEXT    NOT NULL,
    work_order_id      TEXT,
    currency           TEXT    NOT NULL,
    tax_rate_bp        BIGINT  NOT NULL CHECK (tax_rate_bp BETWEEN 0 AND 10000),
    subtotal_cents     BIGINT  NOT NULL CHECK (subtotal_cents >= 0),
    tax_cents          BIGINT  NOT NULL CHECK (tax_cents >= 0),
    total_cents        BIGINT  NOT NULL CHECK (total_cents >= 0),
    paid_cents         BIGINT  NOT NULL CHECK (paid_cents >= 0 AND paid_cents <= total_cents),
    status             TEXT    NOT NULL
        CHECK (status IN ('DRAFT', 'ISSUED', 'PARTIALLY_PAID', 'PAID')),
    issued_at          BIGINT,
    due_on             TEXT,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, invoice_id),
    UNIQUE (tenant_id, organization_guid, number),
    UNIQUE (tenant_id, organization_guid, invoice_id),
    FOREIGN KEY (tenant_id, organization_guid, customer_id)
        REFERENCES customers (tenant_id, organization_guid, customer_id),
    FOREIGN KEY (tenant_id, organization_guid, work_order_id)
        REFERENCES work_orders (tenant_id, organization_guid, work_order_id)
);
CREATE INDEX invoices_by_customer ON invoices (tenant_id, customer_id);

CREATE TABLE invoice_lines (
    tenant_id          TEXT    NOT NULL,
    invoice_id         TEXT    NOT NULL,
    position           BIGINT  NOT NULL,
    organization_guid  TEXT    NOT NULL,
    description        TEXT    NOT NULL,
    quantity           BIGINT  NOT NULL CHECK (quantity > 0),
    unit_price_cents   BIGINT  NOT NULL CHECK (unit_price_cents >= 0),
    amount_cents       BIGINT  NOT NULL CHECK (amount_cents >= 0),
    PRIMARY KEY (tenant_id, invoice_id, position),
    FOREIGN KEY (tenant_id, organization_guid, invoice_id)
        REFERENCES invoices (tenant_id, organization_guid, invoice_id) ON DELETE CASCADE
);

CREATE TABLE payments (
    tenant_id          TEXT    NOT NULL,
    payment_id         TEXT    NOT NULL,
    organization_guid  TEXT    NOT NULL,
    invoice_id         TEXT    NOT NULL,
    amount_cents       BIGINT  NOT NULL CHECK (amount_cents > 0),
    method             TEXT    NOT NULL
        CHECK (method IN ('CARD', 'BANK_TRANSFER', 'CHECK', 'CASH')),
    reference          TEXT,
    received_at        BIGINT  NOT NULL,
    created_at         BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, payment_id),
    FOREIGN KEY (tenant_id, organization_guid, invoice_id)
        REFERENCES invoices (tenant_id, organization_guid, invoice_id) ON DELETE CASCADE
);
CREATE INDEX payments_by_invoice ON payments (tenant_id, invoice_id, received_at);
