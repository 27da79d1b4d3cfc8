-- Periodic jobs: one row per schedule. last_tick is the last tick fired;
-- firing a tick compares it and moves it forward in the transaction that
-- enqueues the tick's job, so a tick is enqueued once across every process.
CREATE TABLE schedules (
    name         TEXT PRIMARY KEY,
    expr         TEXT NOT NULL,
    time_zone    TEXT NOT NULL DEFAULT '',
    missed       TEXT NOT NULL DEFAULT 'latest',
    kind         TEXT NOT NULL,
    queue        TEXT NOT NULL DEFAULT '',
    tenant       TEXT NOT NULL DEFAULT '',
    priority     INTEGER NOT NULL DEFAULT 0,
    payload      TEXT,
    max_attempts INTEGER NOT NULL DEFAULT 0,
    timeout      INTEGER NOT NULL DEFAULT 0,
    paused       INTEGER NOT NULL DEFAULT 0,
    last_tick    INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- Admission counts a tenant's live jobs (MaxLiveJobs).
CREATE INDEX jobs_tenant_live ON jobs (tenant, queue)
    WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
