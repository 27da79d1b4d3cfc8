-- The hot path (issue 18). A claim and start of a job without a timeout
-- wrote an entry with a NULL key into the timeout index (its predicate named
-- only the state): one index insert per job that nothing ever reads, since
-- the timeout query asks for timeout_at <= now, which no NULL meets. The
-- index now holds only running jobs that have a timeout, as on SQLite.
DROP INDEX jobs_timeout_at_idx;
CREATE INDEX jobs_timeout_at_idx ON jobs (timeout_at)
    WHERE state = 'running' AND timeout_at IS NOT NULL;
