-- Runs (DAGs of jobs), their events, webhook subscriptions and the outbox.
-- Times are Unix microseconds (UTC), durations nanoseconds, lists JSON arrays.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL DEFAULT '',
    name        TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL,
    rev         INTEGER NOT NULL,
    on_failure  TEXT NOT NULL,
    timeout     INTEGER NOT NULL DEFAULT 0,
    timeout_at  INTEGER,
    rerun_of    TEXT NOT NULL DEFAULT '',
    reason_code TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    started_at  INTEGER,
    finished_at INTEGER,
    reported_at INTEGER,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_timeout ON runs (timeout_at)
    WHERE timeout_at IS NOT NULL AND state IN ('queued', 'running', 'cancel_requested');

-- A run's jobs: the name within the run and how its end counts. The job's
-- state, run_id, step_index and depends_on (job ids) live in its jobs row.
CREATE TABLE run_jobs (
    run_id        TEXT NOT NULL,
    name          TEXT NOT NULL,
    job_id        TEXT NOT NULL UNIQUE,
    allow_failure INTEGER NOT NULL DEFAULT 0,
    needs_success INTEGER NOT NULL DEFAULT 0,
    planner       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;

CREATE TABLE run_events (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL,
    rev         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    op          TEXT NOT NULL,
    from_state  TEXT NOT NULL DEFAULT '',
    to_state    TEXT NOT NULL,
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    actor_id    TEXT NOT NULL DEFAULT '',
    job_id      TEXT NOT NULL DEFAULT '',
    reason_code TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    details     TEXT,
    UNIQUE (run_id, rev)
);

CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    event_types TEXT NOT NULL DEFAULT '[]',
    queues      TEXT NOT NULL DEFAULT '[]',
    kinds       TEXT NOT NULL DEFAULT '[]',
    runs        TEXT NOT NULL DEFAULT '[]',
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per (event, matching webhook), written in the event's transaction.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    webhook_id      TEXT NOT NULL,
    aggregate       TEXT NOT NULL,
    aggregate_id    TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER
);
-- Heads of each (webhook, aggregate), and what is due.
CREATE INDEX outbox_order ON outbox (webhook_id, aggregate, aggregate_id, id) WHERE state = 'pending';
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX outbox_dead ON outbox (id) WHERE state = 'dead';
