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


-- Queue controls: a row per queue that was ever paused or limited. Claims
-- of a queue with a row lock it (serializing that queue's claimers across
-- nodes, so a limit holds); queues without one cost nothing. rate_window /
-- rate_count are the fixed window of the rate limit. fair shares each claim
-- between the tenants with queued jobs by weights (a JSON object; missing: 1). key_limit: at most that many
-- leased jobs per concurrency key (env stint.concurrency_key).
CREATE TABLE queues (
    name          text PRIMARY KEY,
    paused        boolean NOT NULL DEFAULT false,
    max_running   integer NOT NULL DEFAULT 0,
    rate_limit    integer NOT NULL DEFAULT 0,
    rate_interval bigint NOT NULL DEFAULT 0,
    rate_window   timestamptz NOT NULL DEFAULT 'epoch',
    fair          boolean NOT NULL DEFAULT false,
    weights       text NOT NULL DEFAULT '{}',
    key_limit     integer NOT NULL DEFAULT 0,
    rate_count    integer NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL
);

-- Workers say which queues and kinds they serve when they claim, so jobs
-- that no live worker can run are reported. An empty kinds array means any.
CREATE TABLE workers (
    id      text PRIMARY KEY,
    queues  text[] NOT NULL,
    kinds   text[] NOT NULL,
    seen_at timestamptz NOT NULL
);

-- No index is added on jobs: every write to jobs would pay for it, limits
-- or not. A queue's concurrency limit counts its leased jobs through the
-- layout's partial index of leased jobs; admission's MaxLiveJobs counts a
-- tenant's live jobs with a scan (its cost is paid only where the rule is).
