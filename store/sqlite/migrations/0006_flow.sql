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


-- Queue controls: a row per queue that was ever paused or limited. Claims
-- of a queue with a row read it under the write lock; queues without one
-- cost nothing. rate_window/rate_count are the fixed window of the rate
-- limit: starts counted since rate_window. fair shares each claim between
-- the tenants with queued jobs by weights (a JSON object; missing: 1). key_limit: at most that many
-- leased jobs per concurrency key (env stint.concurrency_key).
CREATE TABLE queues (
    name          TEXT PRIMARY KEY,
    paused        INTEGER NOT NULL DEFAULT 0,
    max_running   INTEGER NOT NULL DEFAULT 0,
    rate_limit    INTEGER NOT NULL DEFAULT 0,
    rate_interval INTEGER NOT NULL DEFAULT 0,
    rate_window   INTEGER NOT NULL DEFAULT 0,
    fair          INTEGER NOT NULL DEFAULT 0,
    weights       TEXT NOT NULL DEFAULT '{}',
    key_limit     INTEGER NOT NULL DEFAULT 0,
    rate_count    INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;

-- Workers say which queues and kinds they serve when they claim, so jobs
-- that no live worker can run are reported. kinds is a JSON array; empty
-- means any kind.
CREATE TABLE workers (
    id      TEXT PRIMARY KEY,
    queues  TEXT NOT NULL,
    kinds   TEXT NOT NULL,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;

-- No index is added on jobs: every write to jobs would pay for it, limits
-- or not. A queue's concurrency limit counts its leased jobs through the
-- layout's partial index of leased jobs; admission's MaxLiveJobs counts a
-- tenant's live jobs with a scan (its cost is paid only where the rule is).
