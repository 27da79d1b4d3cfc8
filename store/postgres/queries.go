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

	// qClock is the clock and the transaction's id (0 while it has none:
	// it has neither written nor locked a row). It follows the first
	// statement of a transaction in the same batch; see tx.send.
	qClock = `SELECT statement_timestamp(), coalesce(pg_current_xact_id_if_assigned()::text::bigint, 0)`
	// qClockAssign is qClock for a write transaction that asks the time
	// before its first statement (a completion of held records, which
	// reads no row): it assigns the transaction's id there, which COMMIT
	// would otherwise cost a round trip of its own for (see tx.commit).
	qClockAssign = `SELECT statement_timestamp(), pg_current_xact_id()::text::bigint`
	// qXactIDAssign is the transaction's id, assigning one if it has none.
	qXactIDAssign = `SELECT pg_current_xact_id()::text::bigint`
	// qXactStatus tells whether a transaction committed: committed,
	// aborted, in progress, or NULL when too old to know.
	qXactStatus = `SELECT pg_xact_status($1::bigint::text::xid8)`

	// The compare-and-swap UPDATE of many rows (jobUpdateSQL in
	// columns_changed.go): a row changes only while its rev is still the one
	// the transaction read (prev_rev), and only the columns the batch's
	// transitions change are set. stint_check_rows raises inside the
	// statement when fewer rows matched than were sent, so the transaction
	// cannot commit after a miss even when COMMIT is pipelined behind it.
	// qJobInsert is built in jobsql.go.

	// Rows are locked in id order so that two transactions locking
	// overlapping sets wait for each other instead of deadlocking.
	qJobGetForUpdate = `SELECT ` + jobSelect + ` FROM jobs j WHERE j.id = ANY($1::text[]) ORDER BY j.id FOR UPDATE`
	qJobGet          = `SELECT ` + jobSelect + ` FROM jobs j WHERE j.id = ANY($1::text[])`

	qJobLiveByDedupe = `
SELECT ` + jobSelect + ` FROM jobs j
WHERE j.tenant = $1 AND j.dedupe_key = $2 AND j.dedupe_key <> '' AND j.state NOT IN ` + terminalStates + `
LIMIT 1`

	// qJobClaimable walks the claim index of each queue in claim order and
	// merges the heads: "queue = ANY($1)" would sort every queued job of
	// the queues instead. With several queues it may lock up to $3 jobs per
	// queue for the transaction while returning $3 in all; other claimers
	// skip those few until it ends.
	//
	// Each queue's walk starts at its low-water mark ($5, $6, $7: -priority,
	// created_at and id, see lowwater.go), an index seek of one row
	// comparison, rather than at the head of the queue, where jobs claimed
	// while a long transaction holds the xmin horizon leave entries that
	// are dead to every claimer but cannot be removed. A queue without a
	// mark gets one below every job (-priority is at least -1000).
	qJobClaimable = `
SELECT ` + jobSelect + claimWalk + `
    ORDER BY -jobs.priority, jobs.created_at, jobs.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
) AS j
ORDER BY j.priority DESC, j.created_at, j.id
LIMIT $3`

	// claimWalk is the FROM of a claim, up to the inner WHERE (which the
	// statements may extend): each queue of $1 walked from its mark, with
	// the kinds ($2) and topic patterns ($4) filtered.
	claimWalk = `
FROM unnest($1::text[], $5::int[], $6::timestamptz[], $7::text[]) AS q(queue, mark_priority, mark_at, mark_id)
CROSS JOIN LATERAL (
    SELECT * FROM jobs
    WHERE state = 'queued' AND jobs.queue = q.queue
      AND (-jobs.priority, jobs.created_at, jobs.id) >= (q.mark_priority, q.mark_at, q.mark_id)
      AND ($2::text[] IS NULL OR cardinality($2::text[]) = 0 OR kind = ANY($2::text[]))
      AND ($4::text[] IS NULL OR cardinality($4::text[]) = 0 OR topic ~ ANY($4::text[]))`

	// qLowWaterProbe reads the first queued job of each queue in $1, in
	// claim order, without locking: the safety net of the low-water marks
	// (lowwater_probe.go). It walks what the claims skip, so it runs
	// seldom.
	qLowWaterProbe = `
SELECT q.queue, j.priority, j.created_at
FROM unnest($1::text[]) AS q(queue)
CROSS JOIN LATERAL (
    SELECT priority, created_at FROM jobs
    WHERE state = 'queued' AND jobs.queue = q.queue
    ORDER BY -jobs.priority, jobs.created_at, jobs.id
    LIMIT 1
) AS j`

	// qClaimPlan steers the claim to the claim index for the transaction:
	// without fresh statistics (right after a bulk enqueue, before
	// autovacuum's analyze) PostgreSQL plans the claim as a bitmap scan of
	// every queued job and a sort. With sequential scans off, the other
	// statements of the claim's transaction (the outbox's insert from the
	// small webhooks table) are priced past every JIT threshold and
	// compiled at each execution, so JIT is off for the transaction too.
	qClaimPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
    set_config('jit', 'off', true)`

	qJobList = `
SELECT ` + jobSelect + ` FROM jobs j
WHERE ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR j.state = ANY($1::text[]))
  AND ($2 = '' OR j.queue = $2)
  AND ($3 = '' OR j.kind = $3)
  AND j.id > $4
ORDER BY j.id
LIMIT NULLIF($5::int, 0)`

	qEventInsert = `
INSERT INTO job_events (job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id, attempt,
                        lease_id, reason, details, run_at, lease_expires_at, spec_digest)
SELECT job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id, attempt,
       lease_id, reason, details, run_at, lease_expires_at, spec_digest
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
            $8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::text[],
            $15::timestamptz[], $16::timestamptz[], $17::text[])
     WITH ORDINALITY AS u(job_id, rev, type, op, from_state, to_state, at, actor, actor_id, request_id, attempt,
                          lease_id, reason, details, run_at, lease_expires_at, spec_digest, ord)
ORDER BY ord`

	// Events are read with their job's row, which holds run_id,
	// correlation_id and trace_id.
	qEventByRequest = `
SELECT ` + eventSelect + ` FROM job_events e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at
WHERE e.request_id = $2 AND e.job_id = $1 AND e.request_id <> '' ORDER BY e.rev LIMIT 1`
	//
	// qEventList leaves the events of a deleted job out by the join alone,
	// not by created_at: a created_at changed behind the store's back must
	// show in Verify as a created_at that disagrees with the events, not as
	// a job without events.
	//
	// j.id = ANY($1), implied by the join, lets the planner fetch the jobs
	// by their key: without it, a page of Verify (500 jobs) hashed the
	// whole jobs table, or ran in parallel workers, at every page (50,000
	// jobs: 50 ms a page against 9 ms).
	qEventList = `
SELECT ` + eventSelect + ` FROM job_events e JOIN jobs j ON j.id = e.job_id
WHERE e.job_id = ANY($1::text[]) AND j.id = ANY($1::text[]) ORDER BY e.job_id, e.rev`

	// qNotify sends one notification per payload in $2.
	qNotify = `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`

	// Events of deleted jobs wait for their partition's drop: the join
	// leaves them out (and out of a later job that took a deleted one's id).
	qEventJobsByRequest = `
SELECT DISTINCT e.job_id FROM job_events e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at
WHERE e.request_id = $1 AND e.request_id <> '' AND e.type = $2`
)

// The maintenance queries, one per store.DueKind. Each matches the
// predicate of its partial index and skips rows other transactions hold.
// Their parameters are (now, limit), except qDueStalled's.
const (
	qDuePromote = `
SELECT ` + jobSelect + ` FROM jobs j WHERE state IN ('scheduled', 'retrying') AND run_at <= $1
ORDER BY run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueLeaseExpired = `
SELECT ` + jobSelect + ` FROM jobs j WHERE state IN ('claimed', 'running', 'cancel_requested') AND lease_expires_at <= $1
ORDER BY lease_expires_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	// A stalled job is due at once: the only parameter is the limit.
	qDueStalled = `
SELECT ` + jobSelect + ` FROM jobs j WHERE state = 'stalled'
ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`

	qDueCancelDeadline = `
SELECT ` + jobSelect + ` FROM jobs j WHERE state = 'cancel_requested' AND cancel_deadline <= $1
ORDER BY cancel_deadline, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueTimeout = `
SELECT ` + jobSelect + ` FROM jobs j WHERE state = 'running' AND timeout_at IS NOT NULL AND timeout_at <= $1
ORDER BY timeout_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`

	qDueDeadline = `
SELECT ` + jobSelect + ` FROM jobs j WHERE deadline IS NOT NULL AND deadline <= $1 AND state NOT IN ` + terminalStates + `
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
	// qMigrationsTableExists looks for schema $1's migrations table
	// without touching the search_path's schema (which may not exist).
	qMigrationsTableExists = `SELECT to_regclass(quote_ident($1) || '.schema_migrations') IS NOT NULL`
	qMigrationRecord       = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`
	qAdvisoryXactLock      = `SELECT pg_advisory_xact_lock($1)`
	qSetSearchPath         = `SELECT set_config('search_path', $1, true)`
	qGetSearchPath         = `SELECT current_setting('search_path')`
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

	// qJobDeleteFinished deletes up to $2 jobs finished before $1 and
	// counts them and their events (which stay, unreachable, until their
	// partition is dropped). The events are counted job by job (LATERAL)
	// through job_events_job_idx: a join let the planner sort or hash every
	// event of the retained hours on each call (50 s a call at 8,000,000
	// events, stint bench history).
	qJobDeleteFinished = `
WITH doomed AS (
    SELECT id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < $1
    ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM jobs WHERE id IN (SELECT id FROM doomed) RETURNING id, created_at
)
SELECT (SELECT count(*) FROM gone),
       (SELECT coalesce(sum(n), 0) FROM gone g
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM job_events e WHERE e.job_id = g.id AND e.at >= g.created_at) c)`

	qSetLockTimeout = `SELECT set_config('lock_timeout', $1, true)`
)
