-- Periodic jobs: one row per schedule. last_tick is the last tick fired;
-- firing a tick locks the row, compares it and moves it forward in the
-- transaction that enqueues the tick's job, so a tick is enqueued once
-- across every node.
CREATE TABLE schedules (
    name         text PRIMARY KEY,
    expr         text NOT NULL,
    time_zone    text NOT NULL DEFAULT '',
    missed       text NOT NULL DEFAULT 'latest',
    kind         text NOT NULL,
    queue        text NOT NULL DEFAULT '',
    tenant       text NOT NULL DEFAULT '',
    priority     integer NOT NULL DEFAULT 0,
    payload      text,
    max_attempts integer NOT NULL DEFAULT 0,
    timeout      bigint NOT NULL DEFAULT 0,
    paused       boolean NOT NULL DEFAULT false,
    last_tick    timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Admission counts a tenant's live jobs (MaxLiveJobs).
CREATE INDEX jobs_tenant_live_idx ON jobs (tenant, queue)
    WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
