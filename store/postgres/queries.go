package postgres

import "github.com/jackc/pgx/v5"

// The SQL of the driver. Statements never name the schema: every connection
// has its search_path set to it (see Open), so one text serves every
// installation sharing a database. Arrays travel as typed parameters and
// unnest into rows, so a batch of any size is one statement.

// terminalStates lists the terminal states for the statements below; it must
// match lifecycle.State.Terminal and the partial indexes of the migrations.
const terminalStates = `('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied')`

const (
	// qNow is the database's clock when first asked in a transaction (the
	// engine asks after locking the rows it changes), the same for every node.
	qNow = `SELECT statement_timestamp()`

	// qXactID is the transaction's id, or 0 when it has written nothing.
	qXactID = `SELECT coalesce(pg_current_xact_id_if_assigned()::text::bigint, 0)`
	// qXactStatus tells whether a transaction committed: committed,
	// aborted, in progress, or NULL when too old to know.
	qXactStatus = `SELECT pg_xact_status($1::bigint::text::xid8)`

	// The columns after doc are copies of fields of doc, kept for indexes.
	qJobInsert = `
INSERT INTO jobs (id, tenant, kind, queue, state, priority, attempt, rev, run_at, created_at,
                  lease_expires_at, timeout_at, cancel_deadline, deadline, finished_at, dedupe_key, doc)
SELECT id, tenant, kind, queue, state, priority, attempt, rev, run_at, created_at,
       lease_expires_at, timeout_at, cancel_deadline, deadline, finished_at, dedupe_key, doc::json
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::bigint[],
            $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[],
            $14::timestamptz[], $15::timestamptz[], $16::text[], $17::text[])
     AS u(id, tenant, kind, queue, state, priority, attempt, rev, run_at, created_at,
          lease_expires_at, timeout_at, cancel_deadline, deadline, finished_at, dedupe_key, doc)`

	// qJobUpdate is a compare-and-swap of many rows: a row changes only
	// while its rev is still the one the transaction read (prev_rev).
	qJobUpdate = `
UPDATE jobs SET tenant = u.tenant, kind = u.kind, queue = u.queue, state = u.state, priority = u.priority,
       attempt = u.attempt, rev = u.rev, run_at = u.run_at, created_at = u.created_at,
       lease_expires_at = u.lease_expires_at, timeout_at = u.timeout_at, cancel_deadline = u.cancel_deadline,
       deadline = u.deadline, finished_at = u.finished_at, dedupe_key = u.dedupe_key, doc = u.doc::json
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::bigint[],
            $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[],
            $14::timestamptz[], $15::timestamptz[], $16::text[], $17::text[], $18::bigint[])
     AS u(id, tenant, kind, queue, state, priority, attempt, rev, run_at, created_at,
          lease_expires_at, timeout_at, cancel_deadline, deadline, finished_at, dedupe_key, doc, prev_rev)
WHERE jobs.id = u.id AND jobs.rev = u.prev_rev
RETURNING jobs.id`

	// Rows are locked in id order so that two transactions locking
	// overlapping sets wait for each other instead of deadlocking.
	qJobGetForUpdate = `SELECT doc FROM jobs WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`
	qJobGet          = `SELECT doc FROM jobs WHERE id = ANY($1::text[])`

	qJobLiveByDedupe = `
SELECT doc FROM jobs
WHERE tenant = $1 AND dedupe_key = $2 AND dedupe_key <> '' AND state NOT IN ` + terminalStates + `
LIMIT 1`

	// qJobClaimable walks the claim index of each queue in claim order and
	// merges the heads: "queue = ANY($1)" would sort every queued job of
	// the queues instead. With several queues it may lock up to $4 jobs per
	// queue for the transaction while returning $4 in all; other claimers
	// skip those few until it ends.
	qJobClaimable = `
SELECT j.doc
FROM (SELECT DISTINCT unnest($1::text[]) AS queue) AS q
CROSS JOIN LATERAL (
    SELECT doc, priority, created_at, id FROM jobs
    WHERE state = 'queued' AND jobs.queue = q.queue
      AND ($2::text[] IS NULL OR cardinality($2::text[]) = 0 OR kind = ANY($2::text[]))
    ORDER BY priority DESC, created_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
) AS j
ORDER BY j.priority DESC, j.created_at, j.id
LIMIT $3`

	// qClaimPlan steers the claim to the claim index for the transaction.
	qClaimPlan = `SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off`

	qJobList = `
SELECT doc FROM jobs
WHERE ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR state = ANY($1::text[]))
  AND ($2 = '' OR queue = $2)
  AND ($3 = '' OR kind = $3)
  AND id > $4
ORDER BY id
LIMIT NULLIF($5::int, 0)`

	// qEventInsert also returns the transaction's id, which every
	// transaction that changes a job has from here on (see Driver.once).
	qEventInsert = `
WITH inserted AS (
    INSERT INTO job_events (job_id, rev, type, op, request_id, at, doc)
    SELECT job_id, rev, type, op, request_id, at, doc::json
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[])
         WITH ORDINALITY AS u(job_id, rev, type, op, request_id, at, doc, ord)
    ORDER BY ord
    RETURNING 1
)
SELECT pg_current_xact_id()::text::bigint`

	qEventByRequest = `SELECT id, doc FROM job_events WHERE job_id = $1 AND request_id = $2 AND request_id <> '' ORDER BY rev LIMIT 1`
	qEventList      = `SELECT id, doc FROM job_events WHERE job_id = ANY($1::text[]) ORDER BY job_id, rev`

	// qNotify sends one notification per payload in $2.
	qNotify = `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`

	qEventJobsByRequest = `SELECT DISTINCT job_id FROM job_events WHERE request_id = $1 AND request_id <> '' AND type = $2`
)

// The maintenance queries, one per store.DueKind. Each matches the
// predicate of its partial index and skips rows other transactions hold.
// Their parameters are (now, limit), except qDueStalled's.
const (
	qDuePromote = `
SELECT doc FROM jobs WHERE state IN ('scheduled', 'retrying') AND run_at <= $1
ORDER BY run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueLeaseExpired = `
SELECT doc FROM jobs WHERE state IN ('claimed', 'running', 'cancel_requested') AND lease_expires_at <= $1
ORDER BY lease_expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	// A stalled job is due at once: the only parameter is the limit.
	qDueStalled = `
SELECT doc FROM jobs WHERE state = 'stalled'
ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`

	qDueCancelDeadline = `
SELECT doc FROM jobs WHERE state = 'cancel_requested' AND cancel_deadline <= $1
ORDER BY cancel_deadline, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueTimeout = `
SELECT doc FROM jobs WHERE state = 'running' AND timeout_at <= $1
ORDER BY timeout_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueDeadline = `
SELECT doc FROM jobs WHERE deadline IS NOT NULL AND deadline <= $1 AND state NOT IN ` + terminalStates + `
ORDER BY deadline, id LIMIT $2 FOR UPDATE SKIP LOCKED`
)

// The statements of migrations. The schema itself must be named in
// CREATE SCHEMA; the name is validated by Options and quoted here.
const (
	qMigrationsTable = `
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    int PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`
	qMigrationsApplied = `SELECT version FROM schema_migrations`
	qMigrationRecord   = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`
	qAdvisoryXactLock  = `SELECT pg_advisory_xact_lock($1)`
	qSetSearchPath     = `SELECT set_config('search_path', $1, true)`
	qGetSearchPath     = `SELECT current_setting('search_path')`
)

// createSchemaSQL is CREATE SCHEMA for a validated schema name.
func createSchemaSQL(schema string) string {
	return `CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize()
}

// listenSQL is LISTEN on a channel named after a validated schema name.
func listenSQL(channel string) string {
	return `LISTEN ` + pgx.Identifier{channel}.Sanitize()
}

// Leader election and retention (store.LeaderTx, store.RetainTx).
const (
	// qLeaderElect takes the seat $1 for $2 until $4 when it is free,
	// expired at $3, or already $2's; no row comes back otherwise.
	qLeaderElect = `
INSERT INTO leaders AS l (name, leader_id, term, expires_at) VALUES ($1, $2, 1, $4)
ON CONFLICT (name) DO UPDATE SET
    term = CASE WHEN l.leader_id = excluded.leader_id THEN l.term ELSE l.term + 1 END,
    leader_id = excluded.leader_id, expires_at = excluded.expires_at
WHERE l.leader_id = excluded.leader_id OR l.expires_at <= $3
RETURNING term`
	qLeaderResign = `UPDATE leaders SET expires_at = '-infinity' WHERE name = $1 AND leader_id = $2`

	// qJobDeleteFinished deletes up to $2 jobs finished before $1 with
	// their events and provenance, and counts the jobs and events.
	qJobDeleteFinished = `
WITH doomed AS (
    SELECT id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < $1
    ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED
), events AS (
    DELETE FROM job_events WHERE job_id IN (SELECT id FROM doomed) RETURNING 1
), provenance AS (
    DELETE FROM job_provenance WHERE job_id IN (SELECT id FROM doomed) RETURNING 1
), gone AS (
    DELETE FROM jobs WHERE id IN (SELECT id FROM doomed) RETURNING 1
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM events), (SELECT count(*) FROM provenance)`

	qEventPruneHeartbeats = `
DELETE FROM job_events WHERE id IN (
    SELECT id FROM job_events WHERE type = 'heartbeat' AND at < $1 ORDER BY at, id LIMIT $2)`
)
