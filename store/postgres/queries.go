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
	qNow = `SELECT now()`

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

	qJobClaimable = `
SELECT doc FROM jobs
WHERE state = 'queued' AND queue = ANY($1::text[])
  AND ($2::text[] IS NULL OR cardinality($2::text[]) = 0 OR kind = ANY($2::text[]))
  AND run_at <= $3
ORDER BY priority DESC, created_at, id
LIMIT $4
FOR UPDATE SKIP LOCKED`

	qJobList = `
SELECT doc FROM jobs
WHERE ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR state = ANY($1::text[]))
  AND ($2 = '' OR queue = $2)
  AND ($3 = '' OR kind = $3)
  AND id > $4
ORDER BY id
LIMIT NULLIF($5::int, 0)`

	qEventInsert = `
INSERT INTO job_events (job_id, rev, type, op, request_id, at, doc)
SELECT job_id, rev, type, op, request_id, at, doc::json
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[])
     WITH ORDINALITY AS u(job_id, rev, type, op, request_id, at, doc, ord)
ORDER BY ord`

	qEventByRequest = `SELECT id, doc FROM job_events WHERE job_id = $1 AND request_id = $2 AND request_id <> '' ORDER BY rev LIMIT 1`
	qEventList      = `SELECT id, doc FROM job_events WHERE job_id = ANY($1::text[]) ORDER BY job_id, rev`

	qProvenanceInsert = `
INSERT INTO job_provenance (job_id, final_state, doc)
SELECT job_id, final_state, doc::json
FROM unnest($1::text[], $2::text[], $3::text[]) AS u(job_id, final_state, doc)`

	qProvenanceGet = `SELECT doc FROM job_provenance WHERE job_id = $1`

	// qNotify sends one notification per queue named in $2.
	qNotify = `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`
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
