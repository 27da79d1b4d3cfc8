-- API tokens of the server: one tenant and one role each. The secret is never
-- stored, only its sha256 (hex), looked up on every request.
CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    role       TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX tokens_tenant_idx ON tokens (tenant, created_at);
