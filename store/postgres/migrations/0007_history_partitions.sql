-- The rest of the history, partitioned by time like job_events (0003): the
-- outbox by created_at (a message's row is updated in place as it is tried,
-- but created_at never changes) and run_events by at. Retention drops whole
-- partitions of both (partitions.go), never rows. The tables are converted
-- in place: every row, and every id, is kept.
--
-- A partitioned table's primary key and unique indexes must hold the
-- partition key: the outbox's key becomes (id, created_at), its ids still
-- unique since one identity gives them all; run_events' (run_id, rev) is no
-- longer declared unique, as the run row's compare-and-swap on rev already
-- makes it so (job_events' (job_id, rev) likewise).
--
-- Each table gets a DEFAULT partition for rows whose partition was not made
-- in time, and for the rows carried over here; Driver.EnsurePartitions makes
-- the dated ones, of Options.EventPartition, ahead of time.

ALTER TABLE outbox RENAME TO outbox_v5;
ALTER TABLE outbox_v5 RENAME CONSTRAINT outbox_pkey TO outbox_v5_pkey;
ALTER SEQUENCE outbox_id_seq RENAME TO outbox_v5_id_seq;
ALTER INDEX outbox_order RENAME TO outbox_v5_order;
ALTER INDEX outbox_due RENAME TO outbox_v5_due;
ALTER INDEX outbox_dead RENAME TO outbox_v5_dead;

CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY,
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
    delivered_at    timestamptz,
    PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);

-- A message is inserted, updated a few times while it is tried, then left
-- alone until its partition goes: vacuum its dead versions early.
CREATE TABLE outbox_default PARTITION OF outbox DEFAULT
    WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.1);
CREATE INDEX outbox_default_created_at_idx ON outbox_default (created_at);

INSERT INTO outbox (id, webhook_id, aggregate, aggregate_id, event_type, payload, state, attempts,
                    next_attempt_at, last_error, created_at, delivered_at)
OVERRIDING SYSTEM VALUE
SELECT id, webhook_id, aggregate, aggregate_id, event_type, payload, state, attempts,
       next_attempt_at, last_error, created_at, delivered_at
FROM outbox_v5;
-- Ids are never given twice, even those of messages retention removed.
SELECT setval(pg_get_serial_sequence('outbox', 'id'),
              greatest((SELECT max(id) FROM outbox_v5), (SELECT last_value FROM outbox_v5_id_seq), 1));
DROP TABLE outbox_v5;

-- Heads of each (webhook, aggregate), and what is due (as in 0005).
CREATE INDEX outbox_order ON outbox (webhook_id, aggregate, aggregate_id, id) WHERE state = 'pending';
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'pending';
CREATE INDEX outbox_dead ON outbox (id) WHERE state = 'dead';

ALTER TABLE run_events RENAME TO run_events_v5;
ALTER TABLE run_events_v5 RENAME CONSTRAINT run_events_pkey TO run_events_v5_pkey;
ALTER TABLE run_events_v5 RENAME CONSTRAINT run_events_run_id_rev_key TO run_events_v5_run_id_rev_key;
ALTER SEQUENCE run_events_id_seq RENAME TO run_events_v5_id_seq;

CREATE TABLE run_events (
    id          bigint GENERATED ALWAYS AS IDENTITY,
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
    PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);

-- Only ever inserted, like job_events.
CREATE TABLE run_events_default PARTITION OF run_events DEFAULT
    WITH (autovacuum_vacuum_insert_scale_factor = 0.1, autovacuum_vacuum_scale_factor = 0.5);
CREATE INDEX run_events_default_at_idx ON run_events_default (at);

INSERT INTO run_events (id, run_id, rev, type, op, from_state, to_state, at, actor, actor_id, job_id,
                        reason_code, reason, details)
OVERRIDING SYSTEM VALUE
SELECT id, run_id, rev, type, op, from_state, to_state, at, actor, actor_id, job_id, reason_code, reason, details
FROM run_events_v5;
SELECT setval(pg_get_serial_sequence('run_events', 'id'),
              greatest((SELECT max(id) FROM run_events_v5), (SELECT last_value FROM run_events_v5_id_seq), 1));
DROP TABLE run_events_v5;

-- A run's events in order.
CREATE INDEX run_events_run_idx ON run_events (run_id, rev);
