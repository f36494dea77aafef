-- DPoP, RFC 9449 (issue 27).

-- The RFC 7638 thumbprint of the key a public client's grant is bound to: every refresh
-- of the grant needs a proof signed by that key (§5). NULL: not bound.
ALTER TABLE grants ADD COLUMN dpop_jkt TEXT;

-- The proofs seen while they can still be accepted: a proof is accepted once (§11.1), on
-- every node. `proof_hash`: SHA-256 over the proof key's thumbprint and its jti.
-- `expires_at`: when the proof's iat leaves the accepted window; then the row goes.
CREATE TABLE dpop_proofs (
    tenant_id   TEXT    NOT NULL,
    proof_hash  BYTEA    NOT NULL,
    expires_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, proof_hash)
);
CREATE INDEX dpop_proofs_expiry ON dpop_proofs (expires_at);
