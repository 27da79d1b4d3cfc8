-- Leader election: one row per seat. A seat changes hands only when free or
-- expired; term rises each time it does. Resigning expires the seat rather
-- than deleting it, so the term never goes back.
CREATE TABLE leaders (
    name       text PRIMARY KEY,
    leader_id  text NOT NULL,
    term       bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Retention prunes old heartbeat events, oldest first.
CREATE INDEX job_events_heartbeat_idx ON job_events (at)
    WHERE type = 'heartbeat';
