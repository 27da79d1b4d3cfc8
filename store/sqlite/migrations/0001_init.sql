-- stint schema v1 for SQLite. `doc` holds the authoritative JSON of the
-- record; the other columns are copies kept for indexing and querying,
-- written from the same value. Times are Unix microseconds (UTC).
CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL DEFAULT '',
    kind             TEXT NOT NULL,
    queue            TEXT NOT NULL,
    state            TEXT NOT NULL,
    priority         INTEGER NOT NULL,
    attempt          INTEGER NOT NULL,
    rev              INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    lease_expires_at INTEGER,
    timeout_at       INTEGER,
    cancel_deadline  INTEGER,
    deadline         INTEGER,
    finished_at      INTEGER,
    dedupe_key       TEXT NOT NULL DEFAULT '',
    doc              TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX jobs_claim ON jobs (queue, priority DESC, created_at, id) WHERE state = 'queued';
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retrying');
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state IN ('claimed', 'running', 'cancel_requested');
CREATE INDEX jobs_cancel ON jobs (cancel_deadline) WHERE state = 'cancel_requested';
CREATE INDEX jobs_timeout ON jobs (timeout_at) WHERE state = 'running';
CREATE INDEX jobs_deadline ON jobs (deadline) WHERE deadline IS NOT NULL
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
CREATE INDEX jobs_stalled ON jobs (state) WHERE state = 'stalled';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
-- LI-5: at most one live job per (tenant, dedupe_key).
CREATE UNIQUE INDEX jobs_dedupe ON jobs (tenant, dedupe_key) WHERE dedupe_key <> ''
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');

CREATE TABLE job_events (
    id         INTEGER PRIMARY KEY,
    job_id     TEXT NOT NULL,
    rev        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    op         TEXT NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    doc        TEXT NOT NULL,
    UNIQUE (job_id, rev)
);
CREATE UNIQUE INDEX job_events_request ON job_events (job_id, request_id) WHERE request_id <> '';
-- Only heartbeats are looked up by age (retention prunes them).
CREATE INDEX job_events_heartbeat ON job_events (at) WHERE type = 'heartbeat';

CREATE TABLE job_provenance (
    job_id      TEXT PRIMARY KEY,
    final_state TEXT NOT NULL,
    doc         TEXT NOT NULL
) WITHOUT ROWID;
