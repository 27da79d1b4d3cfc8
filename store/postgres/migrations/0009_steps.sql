-- Durable steps (docs/steps.md): one row per recorded step of a job, written
-- by the lease holder in the transaction of its step_recorded event, and the
-- signals sent to jobs (the first of a name wins). Both leave with their job
-- (retention deletes the job; the cascade deletes these). Outputs are text,
-- not jsonb, so a replay returns the exact bytes recorded.
CREATE TABLE job_steps (
    job_id        text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq           integer NOT NULL,
    name          text NOT NULL,
    kind          text NOT NULL,
    attempt       integer NOT NULL,
    lease_id      text NOT NULL,
    status        text NOT NULL,
    output        text,
    error         jsonb,
    duration_ms   bigint NOT NULL,
    recorded_at   timestamptz NOT NULL,
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE job_signals (
    job_id   text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name     text NOT NULL,
    payload  text,
    actor_id text NOT NULL DEFAULT '',
    sent_at  timestamptz NOT NULL,
    PRIMARY KEY (job_id, name)
);
