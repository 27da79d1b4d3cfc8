-- The jobs, their event log and the provenance of terminal jobs. Each table
-- keeps the domain record as JSON in doc (authoritative); the other columns
-- are copies for indexing and querying, written from the same record.
-- doc is json, not jsonb: json keeps payloads byte for byte as written.

CREATE TABLE jobs (
    id               text PRIMARY KEY,
    tenant           text NOT NULL DEFAULT '',
    kind             text NOT NULL,
    queue            text NOT NULL,
    state            text NOT NULL,
    priority         int NOT NULL,
    attempt          int NOT NULL,
    rev              bigint NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    lease_expires_at timestamptz,
    timeout_at       timestamptz,
    cancel_deadline  timestamptz,
    deadline         timestamptz,
    finished_at      timestamptz,
    dedupe_key       text NOT NULL DEFAULT '',
    doc              json NOT NULL
);

-- Claim order: priority DESC, then created_at, then id.
CREATE INDEX jobs_claim_idx ON jobs (queue, priority DESC, created_at, id)
    WHERE state = 'queued';
CREATE INDEX jobs_run_at_idx ON jobs (run_at)
    WHERE state IN ('scheduled', 'retrying');
CREATE INDEX jobs_lease_expires_at_idx ON jobs (lease_expires_at)
    WHERE state IN ('claimed', 'running', 'cancel_requested');
CREATE INDEX jobs_cancel_deadline_idx ON jobs (cancel_deadline)
    WHERE state = 'cancel_requested';
CREATE INDEX jobs_timeout_at_idx ON jobs (timeout_at)
    WHERE state = 'running';
CREATE INDEX jobs_deadline_idx ON jobs (deadline)
    WHERE deadline IS NOT NULL
      AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
CREATE INDEX jobs_stalled_idx ON jobs (state)
    WHERE state = 'stalled';
-- LI-5: at most one non-terminal job per (tenant, dedupe_key).
CREATE UNIQUE INDEX jobs_dedupe_key_idx ON jobs (tenant, dedupe_key)
    WHERE dedupe_key <> ''
      AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
-- Retention finds finished jobs by age; live jobs stay out of the index.
CREATE INDEX jobs_finished_at_idx ON jobs (finished_at)
    WHERE finished_at IS NOT NULL;

CREATE TABLE job_events (
    id         bigserial PRIMARY KEY,
    job_id     text NOT NULL,
    rev        bigint NOT NULL,
    type       text NOT NULL,
    op         text NOT NULL,
    request_id text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    doc        json NOT NULL,
    UNIQUE (job_id, rev)
);
CREATE UNIQUE INDEX job_events_request_idx ON job_events (job_id, request_id)
    WHERE request_id <> '';

CREATE TABLE job_provenance (
    job_id      text PRIMARY KEY,
    final_state text NOT NULL,
    doc         json NOT NULL
);
