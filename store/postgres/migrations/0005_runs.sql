-- Runs (DAGs of jobs), their events, webhook subscriptions and the outbox.
-- Durations are bigint nanoseconds. The outbox is not partitioned: delivered
-- rows are small and few next to job events (see docs/outbox.md).
CREATE TABLE runs (
    id          text PRIMARY KEY,
    tenant      text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    state       text NOT NULL,
    rev         bigint NOT NULL,
    on_failure  text NOT NULL,
    timeout     bigint NOT NULL DEFAULT 0,
    timeout_at  timestamptz,
    rerun_of    text NOT NULL DEFAULT '',
    reason_code text NOT NULL DEFAULT '',
    reason      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    started_at  timestamptz,
    finished_at timestamptz,
    reported_at timestamptz,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX runs_timeout ON runs (timeout_at)
    WHERE timeout_at IS NOT NULL AND state IN ('queued', 'running', 'cancel_requested');

-- A run's jobs: the name within the run and how its end counts. The job's
-- state, run_id, step_index and depends_on (job ids) live in its jobs row.
CREATE TABLE run_jobs (
    run_id        text NOT NULL,
    name          text NOT NULL,
    job_id        text NOT NULL UNIQUE,
    allow_failure boolean NOT NULL DEFAULT false,
    needs_success boolean NOT NULL DEFAULT false,
    planner       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE run_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      text NOT NULL,
    rev         bigint NOT NULL,
    type        text NOT NULL,
    op          text NOT NULL,
    from_state  text NOT NULL DEFAULT '',
    to_state    text NOT NULL,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    actor_id    text NOT NULL DEFAULT '',
    job_id      text NOT NULL DEFAULT '',
    reason_code text NOT NULL DEFAULT '',
    reason      text NOT NULL DEFAULT '',
    details     json,
    UNIQUE (run_id, rev)
);

CREATE TABLE webhooks (
    id          text PRIMARY KEY,
    url         text NOT NULL,
    secret      text NOT NULL,
    event_types text[] NOT NULL DEFAULT '{}',
    queues      text[] NOT NULL DEFAULT '{}',
    kinds       text[] NOT NULL DEFAULT '{}',
    runs        text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL
);

-- One row per (event, matching webhook), written in the event's transaction.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id      text NOT NULL,
    aggregate       text NOT NULL,
    aggregate_id    text NOT NULL,
    event_type      text NOT NULL,
    payload         json NOT NULL,
    state           text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    delivered_at    timestamptz
);
-- Heads of each (webhook, aggregate), and what is due.
CREATE INDEX outbox_order ON outbox (webhook_id, aggregate, aggregate_id, id) WHERE state = 'pending';
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX outbox_dead ON outbox (id) WHERE state = 'dead';
