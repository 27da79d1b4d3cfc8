-- API tokens of the server: one tenant and one role each. The secret is never
-- stored, only its sha256 (hex), looked up on every request.
CREATE TABLE tokens (
    id         text PRIMARY KEY,
    tenant     text NOT NULL,
    role       text NOT NULL,
    name       text NOT NULL DEFAULT '',
    hash       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX tokens_tenant_idx ON tokens (tenant, created_at);
