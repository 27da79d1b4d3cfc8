-- The layout of issue 7: every field of a job in a typed column of its own,
-- no JSON document of the record; lean typed event rows in a table
-- partitioned by time; provenance folded into the terminal job's row
-- (result_digest). Old rows are converted here, in SQL, from their doc
-- columns; the old tables go at the end. Nothing is wiped.
--
-- payload, checkpoint, progress, result, details and env are text: they keep
-- the exact bytes the lifecycle accepted (jsonb would reorder them, and json
-- would parse them again on every write). Durations are bigint nanoseconds.

-- go_duration_ns reads a Go duration string ("1m30s", "300ms", "1.5µs") or
-- a JSON number of nanoseconds, as lifecycle.Duration writes and reads them.
CREATE FUNCTION pg_temp.go_duration_ns(d json) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN d IS NULL OR json_typeof(d) = 'null' THEN NULL
        WHEN json_typeof(d) = 'number' THEN (d::text)::numeric::bigint
        ELSE (SELECT coalesce(sum(m[1]::numeric * CASE m[2]
                  WHEN 'h' THEN 3600000000000 WHEN 'm' THEN 60000000000 WHEN 's' THEN 1000000000
                  WHEN 'ms' THEN 1000000 WHEN 'us' THEN 1000 WHEN 'µs' THEN 1000 WHEN 'μs' THEN 1000
                  WHEN 'ns' THEN 1 END), 0)::bigint
              * CASE WHEN d #>> '{}' LIKE '-%' THEN -1 ELSE 1 END
              FROM regexp_matches(d #>> '{}', '([0-9.]+)(ns|us|µs|μs|ms|h|m|s)', 'g') AS m)
    END
$$;

ALTER TABLE jobs RENAME TO jobs_v2;
-- The driver recognizes a lost enqueue race by the name jobs_pkey.
ALTER TABLE jobs_v2 RENAME CONSTRAINT jobs_pkey TO jobs_v2_pkey;
ALTER TABLE job_events RENAME TO job_events_v2;
ALTER SEQUENCE job_events_id_seq RENAME TO job_events_v2_id_seq;

-- fillfactor 85 leaves room on each page for a heartbeat's new row version,
-- so heartbeats (which change no indexed column) are HOT updates.
CREATE TABLE jobs (
    -- Written at enqueue, never in an UPDATE's SET list.
    id                 text PRIMARY KEY,
    tenant             text NOT NULL DEFAULT '',
    kind               text NOT NULL,
    queue              text NOT NULL,
    topic              text NOT NULL DEFAULT '',
    priority           int NOT NULL,
    payload            text,
    context_ptr        text NOT NULL DEFAULT '',
    adapter_id         text NOT NULL DEFAULT '',
    env                text,
    dedupe_key         text NOT NULL DEFAULT '',
    max_attempts       int NOT NULL,
    on_exhausted       text NOT NULL,
    timeout            bigint NOT NULL DEFAULT 0,
    deadline           timestamptz,
    cancel_grace       bigint NOT NULL DEFAULT 0,
    -- NULL when the job has no budget; all three set when it has one.
    budget_max_runtime bigint,
    budget_max_steps   bigint,
    budget_max_cost    bigint,
    correlation_id     text NOT NULL DEFAULT '',
    trace_id           text NOT NULL DEFAULT '',
    parent_job_id      text NOT NULL DEFAULT '',
    run_id             text NOT NULL DEFAULT '',
    step_index         int NOT NULL DEFAULT 0,
    replay_of          text NOT NULL DEFAULT '',
    depends_on         text[],
    created_at         timestamptz NOT NULL,
    -- Changed by transitions.
    state                 text NOT NULL,
    attempt               int NOT NULL,
    failures              int NOT NULL DEFAULT 0,
    rev                   bigint NOT NULL,
    run_at                timestamptz NOT NULL,
    owner                 text NOT NULL DEFAULT '',
    lease_id              text NOT NULL DEFAULT '',
    lease_expires_at      timestamptz,
    timeout_at            timestamptz,
    cancel_deadline       timestamptz,
    lease_ended_by        text NOT NULL DEFAULT '',
    last_owner            text NOT NULL DEFAULT '',
    last_lease_id         text NOT NULL DEFAULT '',
    last_lease_expires_at timestamptz,
    checkpoint            text,
    progress              text,
    phase                 text NOT NULL DEFAULT '',
    usage_steps           bigint NOT NULL DEFAULT 0,
    usage_cost            bigint NOT NULL DEFAULT 0,
    usage_runtime_ms      bigint NOT NULL DEFAULT 0,
    result                text,
    result_ptr            text NOT NULL DEFAULT '',
    result_digest         text NOT NULL DEFAULT '',
    -- error_code is NULL when the job has no error (likewise last_error_code).
    error_code            text,
    error_message         text NOT NULL DEFAULT '',
    error_class           text NOT NULL DEFAULT '',
    error_attempt         int NOT NULL DEFAULT 0,
    last_error_code       text,
    last_error_message    text NOT NULL DEFAULT '',
    last_error_class      text NOT NULL DEFAULT '',
    last_error_attempt    int NOT NULL DEFAULT 0,
    reason_code           text NOT NULL DEFAULT '',
    reason                text NOT NULL DEFAULT '',
    execution_ms          bigint NOT NULL DEFAULT 0,
    updated_at            timestamptz NOT NULL,
    started_at            timestamptz,
    attempt_started_at    timestamptz,
    finished_at           timestamptz
) WITH (
    fillfactor = 85,
    -- A queue table turns over all its rows again and again: vacuum after 1%
    -- of them are dead rather than the default 20%, so the claim index and
    -- heap stay small, and analyze often so the claim plan sees the backlog.
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

INSERT INTO jobs
SELECT o.id, o.tenant, o.kind, o.queue, coalesce(o.doc->>'topic', ''), o.priority,
       (o.doc->'payload')::text, coalesce(o.doc->>'context_ptr', ''), coalesce(o.doc->>'adapter_id', ''),
       (o.doc->'env')::text, o.dedupe_key, (o.doc->>'max_attempts')::int, o.doc->>'on_exhausted',
       coalesce(pg_temp.go_duration_ns(o.doc->'timeout'), 0), o.deadline,
       coalesce(pg_temp.go_duration_ns(o.doc->'cancel_grace'), 0),
       CASE WHEN o.doc->'budget' IS NOT NULL THEN coalesce(pg_temp.go_duration_ns(o.doc->'budget'->'max_runtime'), 0) END,
       CASE WHEN o.doc->'budget' IS NOT NULL THEN coalesce((o.doc->'budget'->>'max_steps')::bigint, 0) END,
       CASE WHEN o.doc->'budget' IS NOT NULL THEN coalesce((o.doc->'budget'->>'max_cost')::bigint, 0) END,
       coalesce(o.doc->>'correlation_id', ''), coalesce(o.doc->>'trace_id', ''),
       coalesce(o.doc->>'parent_job_id', ''), coalesce(o.doc->>'run_id', ''),
       coalesce((o.doc->>'step_index')::int, 0), coalesce(o.doc->>'replay_of', ''),
       CASE WHEN o.doc->'depends_on' IS NOT NULL
            THEN ARRAY(SELECT json_array_elements_text(o.doc->'depends_on')) END,
       o.created_at,
       o.state, o.attempt,
       -- Failures was not counted before: the attempts whose end was a failure.
       (SELECT count(*) FROM job_events_v2 e WHERE e.job_id = o.id
          AND (e.type IN ('retry_scheduled', 'failed')
               OR (e.type = 'dead_lettered' AND e.op = 'fail')
               OR (e.type = 'timed_out' AND e.doc->>'from_state' IN ('claimed', 'running', 'cancel_requested'))
               OR (e.type = 'stalled' AND e.doc->>'actor' <> 'owner')))::int,
       o.rev, o.run_at,
       coalesce(o.doc->>'owner', ''), coalesce(o.doc->>'lease_id', ''), o.lease_expires_at, o.timeout_at,
       o.cancel_deadline, coalesce(o.doc->>'lease_ended_by', ''), coalesce(o.doc->>'last_owner', ''),
       coalesce(o.doc->>'last_lease_id', ''), (o.doc->>'last_lease_expires_at')::timestamptz,
       (o.doc->'checkpoint')::text, (o.doc->'progress')::text, coalesce(o.doc->>'phase', ''),
       coalesce((o.doc->'usage'->>'steps')::bigint, 0), coalesce((o.doc->'usage'->>'cost')::bigint, 0),
       coalesce((o.doc->'usage'->>'runtime_ms')::bigint, 0),
       (o.doc->'result')::text, coalesce(o.doc->>'result_ptr', ''),
       coalesce(p.doc->>'result_digest', ''),
       o.doc->'error'->>'code', coalesce(o.doc->'error'->>'message', ''), coalesce(o.doc->'error'->>'class', ''),
       coalesce((o.doc->'error'->>'attempt')::int, 0),
       o.doc->'last_error'->>'code', coalesce(o.doc->'last_error'->>'message', ''),
       coalesce(o.doc->'last_error'->>'class', ''), coalesce((o.doc->'last_error'->>'attempt')::int, 0),
       coalesce(o.doc->>'reason_code', ''), coalesce(o.doc->>'reason', ''),
       coalesce((o.doc->>'execution_ms')::bigint, 0),
       (o.doc->>'updated_at')::timestamptz, (o.doc->>'started_at')::timestamptz,
       -- The current attempt's start was not kept either: its started event has it.
       (SELECT max(e.at) FROM job_events_v2 e WHERE e.job_id = o.id AND e.type = 'started'),
       o.finished_at
FROM jobs_v2 o LEFT JOIN job_provenance p ON p.job_id = o.id;

-- One lean row per accepted transition. run_id, correlation_id and trace_id
-- are read from the job's row; the version is always lifecycle.EventVersion.
-- The table is partitioned by time so that retention drops whole partitions
-- (see retention in maintain.go); the DEFAULT partition catches any event
-- whose partition was not created ahead of time. A partitioned table's
-- unique indexes must contain the partition key, so (job_id, rev) is not
-- declared unique: the jobs row's compare-and-swap on rev already makes it so.
CREATE TABLE job_events (
    id               bigserial NOT NULL,
    job_id           text NOT NULL,
    rev              bigint NOT NULL,
    type             text NOT NULL,
    op               text NOT NULL,
    from_state       text NOT NULL DEFAULT '',
    to_state         text NOT NULL DEFAULT '',
    at               timestamptz NOT NULL,
    actor            text NOT NULL DEFAULT '',
    actor_id         text NOT NULL DEFAULT '',
    request_id       text NOT NULL DEFAULT '',
    attempt          int NOT NULL DEFAULT 0,
    lease_id         text NOT NULL DEFAULT '',
    reason           text NOT NULL DEFAULT '',
    details          text,
    run_at           timestamptz,
    lease_expires_at timestamptz,
    spec_digest      text NOT NULL DEFAULT ''
) PARTITION BY RANGE (at);

-- Events are only ever inserted: vacuum them for the visibility map (so
-- index-only reads stay cheap) after 10% new rows, never for dead rows,
-- which retention leaves none of. Partitions created later get the same
-- settings (Driver.EnsurePartitions); a partitioned parent holds none.
CREATE TABLE job_events_default PARTITION OF job_events DEFAULT
    WITH (autovacuum_vacuum_insert_scale_factor = 0.1, autovacuum_vacuum_scale_factor = 0.5);
-- Finds the default's events by time: making a partition checks that none
-- of its range sit in the default, and retention drops the default only
-- when all its events are old (partitions.go).
CREATE INDEX job_events_default_at_idx ON job_events_default (at);

INSERT INTO job_events (id, job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id,
                        attempt, lease_id, reason, details)
SELECT e.id, e.job_id, e.rev, e.type, e.op, coalesce(e.doc->>'from_state', ''), coalesce(e.doc->>'to_state', ''),
       e.at, coalesce(e.doc->>'actor', ''), coalesce(e.doc->>'actor_id', ''), e.request_id,
       coalesce((e.doc->>'attempt')::int, 0), coalesce(e.doc->>'lease_id', ''), coalesce(e.doc->>'reason', ''),
       (e.doc->'details')::text
FROM job_events_v2 e;
SELECT setval(pg_get_serial_sequence('job_events', 'id'),
              greatest((SELECT max(id) FROM job_events_v2), (SELECT last_value FROM job_events_v2_id_seq), 1));

DROP TABLE job_provenance;
DROP TABLE job_events_v2;
DROP TABLE jobs_v2;

-- The claim walks this index in claim order: priority DESC, created_at, id.
CREATE INDEX jobs_claim_idx ON jobs (queue, priority DESC, created_at, id)
    WHERE state = 'queued';
CREATE INDEX jobs_run_at_idx ON jobs (run_at)
    WHERE state IN ('scheduled', 'retrying');
-- The reaper reads the few leased jobs and checks lease_expires_at on the
-- rows: an index on lease_expires_at would make every heartbeat a non-HOT
-- update (and an index write).
CREATE INDEX jobs_leased_idx ON jobs (id)
    WHERE state IN ('claimed', 'running', 'cancel_requested');
CREATE INDEX jobs_cancel_deadline_idx ON jobs (cancel_deadline)
    WHERE state = 'cancel_requested';
CREATE INDEX jobs_timeout_at_idx ON jobs (timeout_at)
    WHERE state = 'running';
CREATE INDEX jobs_deadline_idx ON jobs (deadline)
    WHERE deadline IS NOT NULL
      AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
CREATE INDEX jobs_stalled_idx ON jobs (id)
    WHERE state = 'stalled';
-- LI-5: at most one non-terminal job per (tenant, dedupe_key).
CREATE UNIQUE INDEX jobs_dedupe_key_idx ON jobs (tenant, dedupe_key)
    WHERE dedupe_key <> ''
      AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied');
CREATE INDEX jobs_finished_at_idx ON jobs (finished_at)
    WHERE finished_at IS NOT NULL;

CREATE INDEX job_events_job_idx ON job_events (job_id, rev);
-- Serves both EventByRequest and EventJobsByRequest.
CREATE INDEX job_events_request_idx ON job_events (request_id, job_id)
    WHERE request_id <> '';

-- stint_check_rows makes a compare-and-swap UPDATE fail inside the
-- statement when it matched fewer rows than it was sent, so that a
-- pipelined COMMIT behind it never runs after a miss (see tx.go). It raises
-- SQLSTATE 40001 with the message the driver turns into a revision conflict.
CREATE FUNCTION stint_check_rows(matched bigint, sent bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF matched < sent THEN
        RAISE EXCEPTION USING ERRCODE = 'SX001', MESSAGE = 'stint: revision conflict',
            DETAIL = format('%s of %s rows matched their rev', matched, sent);
    END IF;
    RETURN matched;
END
$$;
