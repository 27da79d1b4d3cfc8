package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// qJobClaimStart claims in one statement: the claim walk of qJobClaimable
// (each queue from its low-water mark, locking and skipping locked rows)
// feeds an UPDATE that writes lifecycle's claim, and with $13 its start,
// into the rows it locked. It returns each row as it was before (jobSelect
// over j), what it wrote that the engine checks against lifecycle, and the
// claim's time. The row is visited once; its events are written by the
// engine, pipelined with COMMIT.
//
// The time is $9 or the statement's, never earlier than the row's
// updated_at (store.notBefore). Durations travel in microseconds, the
// precision of timestamptz, truncated as lifecycle truncates them. A job
// with no attempts left is not taken (lifecycle refuses to claim it). With
// a request id ($8), nothing is claimed once a claimed event carries it:
// the engine then answers the retry from the events. (The redundant test
// that request_id is not empty lets the generic plan use the partial
// request index.)
const qJobClaimStart = `
WITH now AS (SELECT coalesce($9::timestamptz, statement_timestamp()) AS t),
fresh AS (
    SELECT $8::text = '' OR NOT EXISTS (
        SELECT 1 FROM job_events e WHERE e.request_id = $8 AND e.request_id <> '' AND e.type = 'claimed') AS ok
)
UPDATE jobs u SET
    state = CASE WHEN $13::bool THEN 'running' ELSE 'claimed' END,
    attempt = j.attempt + 1,
    rev = j.rev + CASE WHEN $13::bool THEN 2 ELSE 1 END,
    owner = $10,
    lease_id = ($11::text[])[j.ord],
    lease_expires_at = greatest(now.t, j.updated_at) + $12::bigint * interval '1 microsecond',
    phase = '',
    attempt_started_at = CASE WHEN $13::bool THEN greatest(now.t, j.updated_at) END,
    started_at = CASE WHEN $13::bool THEN coalesce(j.started_at, greatest(now.t, j.updated_at)) ELSE j.started_at END,
    timeout_at = CASE WHEN $13::bool AND j.timeout > 0
                      THEN greatest(now.t, j.updated_at) + (j.timeout / 1000) * interval '1 microsecond'
                      ELSE j.timeout_at END,
    cancel_deadline = NULL,
    updated_at = greatest(now.t, j.updated_at)
FROM now, (
    SELECT c.*, row_number() OVER (ORDER BY c.priority DESC, c.created_at, c.id) AS ord
    FROM (
        SELECT c.*` + claimWalk + `
              AND jobs.failures < jobs.max_attempts
              AND (SELECT ok FROM fresh)
            ORDER BY -jobs.priority, jobs.created_at, jobs.id
            LIMIT $3
            FOR UPDATE SKIP LOCKED
        ) AS c
        ORDER BY c.priority DESC, c.created_at, c.id
        LIMIT $3
    ) AS c
) AS j
WHERE u.id = j.id
RETURNING ` + jobSelect + `, u.lease_id, u.rev, u.lease_expires_at, u.timeout_at, u.updated_at, now.t`

// qClaimStartPlan is qClaimPlan (see JobClaimable) for qJobClaimStart, which
// it also keeps from being planned at every execution: planning the claim
// took about 1.2 ms, against 0.1 ms to run a one-job claim, and PostgreSQL's
// plan cache never settled on the generic plan because the generic plan's
// estimates (ten queues, an unknown limit) cost more than the custom ones.
// The generic plan walks the same indexes (the claim index, and the partial
// request index, since the claim says request_id is not empty), so the transaction
// forces it; the pool's claims then plan once per connection, until
// statistics or partitions change. JIT and parallel workers are off for the
// transaction: a plan's cost, inflated by the disabled scans where no index
// serves a statement, must never make each execution compile (seconds per
// claim), and the generic plan of a lookup over an array of unknown size
// that follows the claim (a retried claim's request ids) must not start
// workers (0.1 s for nothing, EXPLAIN ANALYZE).
const qClaimStartPlan = qClaimPlan + `,
    set_config('plan_cache_mode', 'force_generic_plan', true), set_config('max_parallel_workers_per_gather', '0', true)`

// claimMarks are the parameters of a claim walk: the distinct queues and
// each one's low-water mark (or one below every job), and the flights
// that learn the claim's first job of each queue.
type claimMarks struct {
	queues       []string
	markPriority []int32
	markAt       []time.Time
	markID       []string
	flights      map[string]*flight
}

// marks starts the claim walks of q's queues.
func (t *tx) marks(q store.ClaimQuery) claimMarks {
	var m claimMarks
	m.queues = make([]string, 0, len(q.Queues))
	for _, name := range q.Queues {
		if !slices.Contains(m.queues, name) {
			m.queues = append(m.queues, name)
		}
	}
	m.markPriority = make([]int32, len(m.queues))
	m.markAt = make([]time.Time, len(m.queues))
	m.markID = make([]string, len(m.queues))
	filter := filterKey(q.Kinds, q.Topics)
	for i, name := range m.queues {
		m.markPriority[i], m.markAt[i] = math.MinInt32, time.Unix(0, 0).UTC()
		if t.lw == nil {
			continue
		}
		f, k, ok := t.lw.begin(name, filter)
		t.flights = append(t.flights, f)
		if m.flights == nil {
			m.flights = map[string]*flight{}
		}
		m.flights[name] = f
		if ok {
			m.markPriority[i], m.markAt[i], m.markID[i] = int32(-k.priority), k.at, k.id
		}
	}
	return m
}

// learn tells the flights the first job of each queue; jobs are in claim order.
func (m claimMarks) learn(jobs []lifecycle.Job) {
	for _, j := range jobs {
		if f := m.flights[j.Queue]; f != nil && !f.got {
			f.first, f.got = claimKey{priority: j.Priority, at: j.CreatedAt, id: j.ID}, true
		}
	}
}

// claimRow is one row of qJobClaimStart.
type claimRow struct {
	prev  lifecycle.Job
	wrote store.ClaimWrote
	at    time.Time
}

func (t *tx) JobClaimStart(ctx context.Context, q store.ClaimQuery, c store.ClaimWrite) ([]lifecycle.Job, []store.ClaimWrote, time.Time, error) {
	if q.Limit <= 0 || len(c.LeaseIDs) < q.Limit {
		return nil, nil, time.Time{}, fmt.Errorf("postgres: a claim of %d jobs needs as many lease ids (%d given)", q.Limit, len(c.LeaseIDs))
	}
	t.pending.Queue(qClaimStartPlan).Exec(func(pgconn.CommandTag) error { return nil })
	m := t.marks(q)
	var now pgtype.Timestamptz
	if c.Now != nil {
		now = pgtype.Timestamptz{Time: c.Now.UTC().Truncate(time.Microsecond), Valid: true}
	}
	args := []any{m.queues, q.Kinds, q.Limit, topicRegexps(q.Topics), m.markPriority, m.markAt, m.markID,
		c.RequestID, now, c.WorkerID, c.LeaseIDs, c.LeaseTTL.Microseconds(), c.Start}
	rows, err := rows(ctx, t, qJobClaimStart, args, scanClaimRow)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("postgres: claim: %w", err)
	}
	slices.SortFunc(rows, func(a, b claimRow) int { return claimOrder(&a.prev, &b.prev) })
	prev := make([]lifecycle.Job, len(rows))
	wrote := make([]store.ClaimWrote, len(rows))
	for i := range rows {
		prev[i], wrote[i] = rows[i].prev, rows[i].wrote
	}
	m.learn(prev)
	if len(rows) > 0 {
		return prev, wrote, rows[0].at.UTC(), nil
	}
	at := now.Time
	if c.Now == nil {
		if at, err = t.Now(ctx); err != nil {
			return nil, nil, time.Time{}, err
		}
	}
	return prev, wrote, at, nil
}

// scanClaimRow reads one row of qJobClaimStart.
func scanClaimRow(r pgx.CollectableRow) (claimRow, error) {
	var c claimRow
	var timeoutAt pgtype.Timestamptz
	err := scanJobInto(r, &c.prev, &c.wrote.LeaseID, &c.wrote.Rev, &c.wrote.LeaseExpiresAt, &timeoutAt, &c.wrote.UpdatedAt, &c.at)
	if err != nil {
		return c, err
	}
	c.wrote.LeaseExpiresAt, c.wrote.UpdatedAt = c.wrote.LeaseExpiresAt.UTC(), c.wrote.UpdatedAt.UTC()
	if timeoutAt.Valid {
		u := timeoutAt.Time.UTC()
		c.wrote.TimeoutAt = &u
	}
	return c, nil
}

// claimOrder compares jobs in claim order.
func claimOrder(a, b *lifecycle.Job) int {
	if a.Priority != b.Priority {
		return b.Priority - a.Priority
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

var _ store.ClaimStartTx = (*tx)(nil)
