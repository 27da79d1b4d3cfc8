-- Durable steps (docs/steps.md): one row per recorded step of a job, written
-- by the lease holder in the transaction of its step_recorded event, and the
-- signals sent to jobs (the first of a name wins). Both leave with their job:
-- retention deletes the job, the trigger deletes these. A trigger, not a
-- foreign key: a migration that rebuilds jobs (create, copy, drop, rename)
-- would cascade its DROP into every step; it must recreate this trigger.
CREATE TABLE job_steps (
    job_id        TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    name          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    lease_id      TEXT NOT NULL,
    status        TEXT NOT NULL,
    output        TEXT,
    error         TEXT,
    duration_ms   INTEGER NOT NULL,
    recorded_at   INTEGER NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TABLE job_signals (
    job_id   TEXT NOT NULL,
    name     TEXT NOT NULL,
    payload  TEXT,
    actor_id TEXT NOT NULL DEFAULT '',
    sent_at  INTEGER NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;

CREATE TRIGGER job_steps_retain AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_steps WHERE job_id = old.id;
    DELETE FROM job_signals WHERE job_id = old.id;
END;
