-- stint schema v3 for SQLite: every field of a job in a typed column of its
-- own (no doc column, no column copying another), lean typed event rows, and
-- provenance folded into the terminal row (jobs.result_digest).
--
-- The upgrade rebuilds the tables the SQLite way (create new, copy, drop old,
-- rename), reading the old doc columns with the JSON operators. Two helpers
-- registered by the driver parse what SQL cannot: stint_v2_micros (an
-- RFC 3339 time of the old JSON documents as Unix microseconds) and
-- stint_v2_nanos (a Go duration string as nanoseconds).
--
-- Columns: times are Unix microseconds (UTC); durations are nanoseconds;
-- payload, checkpoint, progress, result and details keep the exact JSON text
-- the lifecycle accepted; env is a JSON object and depends_on a JSON array.
-- error_* and last_error_* are NULL when the job has no such error; the
-- budget_* columns are NULL when the job has no budget.
CREATE TABLE jobs_v3 (
    -- immutable: written at enqueue, never in an UPDATE's SET list
    id                    TEXT PRIMARY KEY,
    tenant                TEXT NOT NULL DEFAULT '',
    kind                  TEXT NOT NULL,
    queue                 TEXT NOT NULL,
    topic                 TEXT NOT NULL DEFAULT '',
    priority              INTEGER NOT NULL,
    payload               TEXT,
    context_ptr           TEXT NOT NULL DEFAULT '',
    adapter_id            TEXT NOT NULL DEFAULT '',
    env                   TEXT,
    dedupe_key            TEXT NOT NULL DEFAULT '',
    max_attempts          INTEGER NOT NULL,
    on_exhausted          TEXT NOT NULL DEFAULT '',
    timeout               INTEGER NOT NULL DEFAULT 0,
    deadline              INTEGER,
    cancel_grace          INTEGER NOT NULL DEFAULT 0,
    budget_max_runtime    INTEGER,
    budget_max_steps      INTEGER,
    budget_max_cost       INTEGER,
    correlation_id        TEXT NOT NULL DEFAULT '',
    trace_id              TEXT NOT NULL DEFAULT '',
    parent_job_id         TEXT NOT NULL DEFAULT '',
    run_id                TEXT NOT NULL DEFAULT '',
    step_index            INTEGER NOT NULL DEFAULT 0,
    replay_of             TEXT NOT NULL DEFAULT '',
    depends_on            TEXT,
    created_at            INTEGER NOT NULL,
    -- mutable: what transitions write
    state                 TEXT NOT NULL,
    attempt               INTEGER NOT NULL,
    failures              INTEGER NOT NULL DEFAULT 0,
    rev                   INTEGER NOT NULL,
    run_at                INTEGER NOT NULL,
    owner                 TEXT NOT NULL DEFAULT '',
    lease_id              TEXT NOT NULL DEFAULT '',
    lease_expires_at      INTEGER,
    timeout_at            INTEGER,
    cancel_deadline       INTEGER,
    lease_ended_by        TEXT NOT NULL DEFAULT '',
    last_owner            TEXT NOT NULL DEFAULT '',
    last_lease_id         TEXT NOT NULL DEFAULT '',
    last_lease_expires_at INTEGER,
    checkpoint            TEXT,
    progress              TEXT,
    phase                 TEXT NOT NULL DEFAULT '',
    usage_steps           INTEGER NOT NULL DEFAULT 0,
    usage_cost            INTEGER NOT NULL DEFAULT 0,
    usage_runtime_ms      INTEGER NOT NULL DEFAULT 0,
    result                TEXT,
    result_ptr            TEXT NOT NULL DEFAULT '',
    result_digest         TEXT NOT NULL DEFAULT '',
    error_code            TEXT,
    error_message         TEXT,
    error_class           TEXT,
    error_attempt         INTEGER,
    last_error_code       TEXT,
    last_error_message    TEXT,
    last_error_class      TEXT,
    last_error_attempt    INTEGER,
    reason_code           TEXT NOT NULL DEFAULT '',
    reason                TEXT NOT NULL DEFAULT '',
    execution_ms          INTEGER NOT NULL DEFAULT 0,
    updated_at            INTEGER NOT NULL,
    started_at            INTEGER,
    attempt_started_at    INTEGER,
    finished_at           INTEGER
) WITHOUT ROWID;

INSERT INTO jobs_v3 (id, tenant, kind, queue, topic, priority, payload, context_ptr, adapter_id, env, dedupe_key,
    max_attempts, on_exhausted, timeout, deadline, cancel_grace, budget_max_runtime, budget_max_steps,
    budget_max_cost, correlation_id, trace_id, parent_job_id, run_id, step_index, replay_of, depends_on,
    created_at, state, attempt, failures, rev, run_at, owner, lease_id, lease_expires_at, timeout_at,
    cancel_deadline, lease_ended_by, last_owner, last_lease_id, last_lease_expires_at, checkpoint, progress,
    phase, usage_steps, usage_cost, usage_runtime_ms, result, result_ptr, result_digest, error_code,
    error_message, error_class, error_attempt, last_error_code, last_error_message, last_error_class,
    last_error_attempt, reason_code, reason, execution_ms, updated_at, started_at, attempt_started_at,
    finished_at)
SELECT id, tenant, kind, queue, coalesce(d ->> '$.topic', ''), priority, d -> '$.payload',
    coalesce(d ->> '$.context_ptr', ''), coalesce(d ->> '$.adapter_id', ''), d -> '$.env', dedupe_key,
    coalesce(d ->> '$.max_attempts', 0), coalesce(d ->> '$.on_exhausted', ''), stint_v2_nanos(d ->> '$.timeout'),
    deadline, stint_v2_nanos(d ->> '$.cancel_grace'),
    CASE WHEN d -> '$.budget' IS NOT NULL THEN stint_v2_nanos(d ->> '$.budget.max_runtime') END,
    CASE WHEN d -> '$.budget' IS NOT NULL THEN coalesce(d ->> '$.budget.max_steps', 0) END,
    CASE WHEN d -> '$.budget' IS NOT NULL THEN coalesce(d ->> '$.budget.max_cost', 0) END,
    coalesce(d ->> '$.correlation_id', ''), coalesce(d ->> '$.trace_id', ''), coalesce(d ->> '$.parent_job_id', ''),
    coalesce(d ->> '$.run_id', ''), coalesce(d ->> '$.step_index', 0), coalesce(d ->> '$.replay_of', ''),
    d -> '$.depends_on', created_at,
    state, attempt,
    -- failures: the attempts that ended in failure, timeout or lease loss
    -- (never an owner's graceful release), counted from the event log.
    (SELECT count(*) FROM job_events e WHERE e.job_id = j.id
        AND (e.op = 'fail' OR (e.op = 'stall' AND CAST(e.doc AS TEXT) ->> '$.actor' = 'system')
             OR (e.op = 'time_out' AND CAST(e.doc AS TEXT) ->> '$.from_state' = 'running'))),
    rev, run_at, coalesce(d ->> '$.owner', ''), coalesce(d ->> '$.lease_id', ''), lease_expires_at, timeout_at,
    cancel_deadline, coalesce(d ->> '$.lease_ended_by', ''), coalesce(d ->> '$.last_owner', ''),
    coalesce(d ->> '$.last_lease_id', ''), stint_v2_micros(d ->> '$.last_lease_expires_at'),
    d -> '$.checkpoint', d -> '$.progress', coalesce(d ->> '$.phase', ''),
    coalesce(d ->> '$.usage.steps', 0), coalesce(d ->> '$.usage.cost', 0), coalesce(d ->> '$.usage.runtime_ms', 0),
    d -> '$.result', coalesce(d ->> '$.result_ptr', ''),
    coalesce((SELECT CAST(p.doc AS TEXT) ->> '$.result_digest' FROM job_provenance p WHERE p.job_id = j.id), ''),
    CASE WHEN d -> '$.error' IS NOT NULL THEN coalesce(d ->> '$.error.code', '') END,
    CASE WHEN d -> '$.error' IS NOT NULL THEN coalesce(d ->> '$.error.message', '') END,
    CASE WHEN d -> '$.error' IS NOT NULL THEN coalesce(d ->> '$.error.class', '') END,
    CASE WHEN d -> '$.error' IS NOT NULL THEN coalesce(d ->> '$.error.attempt', 0) END,
    CASE WHEN d -> '$.last_error' IS NOT NULL THEN coalesce(d ->> '$.last_error.code', '') END,
    CASE WHEN d -> '$.last_error' IS NOT NULL THEN coalesce(d ->> '$.last_error.message', '') END,
    CASE WHEN d -> '$.last_error' IS NOT NULL THEN coalesce(d ->> '$.last_error.class', '') END,
    CASE WHEN d -> '$.last_error' IS NOT NULL THEN coalesce(d ->> '$.last_error.attempt', 0) END,
    coalesce(d ->> '$.reason_code', ''), coalesce(d ->> '$.reason', ''), coalesce(d ->> '$.execution_ms', 0),
    stint_v2_micros(d ->> '$.updated_at'), stint_v2_micros(d ->> '$.started_at'),
    -- attempt_started_at: the start of the last attempt, from the event log
    (SELECT max(e.at) FROM job_events e WHERE e.job_id = j.id AND e.type = 'started'),
    finished_at
FROM (SELECT *, CAST(doc AS TEXT) AS d FROM jobs) AS j;

CREATE TABLE job_events_v3 (
    id               INTEGER PRIMARY KEY,
    job_id           TEXT NOT NULL,
    rev              INTEGER NOT NULL,
    type             TEXT NOT NULL,
    op               TEXT NOT NULL,
    from_state       TEXT NOT NULL DEFAULT '',
    to_state         TEXT NOT NULL,
    at               INTEGER NOT NULL,
    actor            TEXT NOT NULL,
    actor_id         TEXT NOT NULL DEFAULT '',
    request_id       TEXT NOT NULL DEFAULT '',
    attempt          INTEGER NOT NULL,
    lease_id         TEXT NOT NULL DEFAULT '',
    reason           TEXT NOT NULL DEFAULT '',
    details          TEXT,
    run_at           INTEGER,
    lease_expires_at INTEGER,
    spec_digest      TEXT NOT NULL DEFAULT '',
    UNIQUE (job_id, rev)
);

-- The old events did not record run_at, lease_expires_at or spec_digest:
-- they stay unset (NULL, '') on upgraded events.
INSERT INTO job_events_v3 (id, job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id,
    attempt, lease_id, reason, details)
SELECT id, job_id, rev, type, op, coalesce(d ->> '$.from_state', ''), coalesce(d ->> '$.to_state', ''), at,
    coalesce(d ->> '$.actor', ''), coalesce(d ->> '$.actor_id', ''), request_id, coalesce(d ->> '$.attempt', 0),
    coalesce(d ->> '$.lease_id', ''), coalesce(d ->> '$.reason', ''), d -> '$.details'
FROM (SELECT *, CAST(doc AS TEXT) AS d FROM job_events);

DROP TABLE job_provenance;
DROP TABLE job_events;
DROP TABLE jobs;
ALTER TABLE jobs_v3 RENAME TO jobs;
ALTER TABLE job_events_v3 RENAME TO job_events;

-- Indexes. Each one is read by a query of the driver; each costs a write on
-- every transition that moves a row into, out of or within it.
-- Claim: the queued jobs of one queue in claim order.
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, created_at) WHERE state = 'queued';
-- Promotion: scheduled and retrying jobs by due time.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retrying');
-- Lease expiry: leased jobs by expiry.
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state IN ('claimed', 'running', 'cancel_requested');
-- Forced cancels: only jobs with a cancel request pending.
CREATE INDEX jobs_cancel ON jobs (cancel_deadline) WHERE state = 'cancel_requested';
-- Timeouts: only running jobs that have a timeout (most have none).
CREATE INDEX jobs_timeout ON jobs (timeout_at) WHERE state = 'running' AND timeout_at IS NOT NULL;
-- Deadlines: only live jobs that have one.
CREATE INDEX jobs_deadline ON jobs (deadline) WHERE deadline IS NOT NULL
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
CREATE INDEX jobs_stalled ON jobs (state) WHERE state = 'stalled';
-- Retention: terminal jobs by finish time.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
-- LI-5: at most one live job per (tenant, dedupe_key).
CREATE UNIQUE INDEX jobs_dedupe ON jobs (tenant, dedupe_key) WHERE dedupe_key <> ''
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');

-- Request ids: serves both a job's event by request id and the jobs of a
-- retried claim.
CREATE INDEX job_events_request ON job_events (request_id, job_id) WHERE request_id <> '';
-- Only heartbeats are looked up by age (retention prunes them).
CREATE INDEX job_events_heartbeat ON job_events (at) WHERE type = 'heartbeat';
