package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// tx is one transaction of the driver: the store's verbs translated to SQL.
//
// It talks to the server in as few round trips as it can. BEGIN is not sent
// on its own: it leads the first statement's batch, and that batch also
// reads the clock and the transaction id after the statement (so the time
// is read after any wait for locks). Writes (JobInsert, JobUpdate,
// EventInsert, Notify) are not sent when called: they wait in pending and
// go out with the next statement that reads, or with COMMIT. A claim, a
// batch of completions or a failure is thus two round trips: BEGIN + the
// locking read + the clock, then the writes + COMMIT.
type tx struct {
	conn *pgx.Conn
	// begin is the BEGIN statement still to send, "" once sent (or when
	// the transaction is a savepoint of a caller's, already begun).
	begin   string
	channel string
	notify  bool
	write   bool
	// partition is the width of an event partition (Options.EventPartition).
	partition time.Duration

	pending  pgx.Batch // writes not yet sent
	now      time.Time // the transaction's clock, once read
	notified map[string]bool
	// noticeQueues and noticeJobs are what Notify asked to notify; the
	// notifications go out with COMMIT (see flushNotices).
	noticeQueues []string
	noticeJobs   []string
	// lw is the driver's low-water marks (nil in a caller's transaction);
	// flights are the claims of this transaction, and lows the lowest key
	// per queue of the jobs it wrote into state queued.
	lw      *lowWater
	flights []*flight
	lows    map[string]claimKey
	// xid is the transaction's id once it has one, for learning the
	// outcome of a broken COMMIT.
	xid int64
	// willWrite: the engine said the transaction writes (store.WriteHint).
	willWrite bool
}

// WillWrite implements store.WriteHint.
func (t *tx) WillWrite() { t.willWrite = t.write }

var _ store.Tx = (*tx)(nil)

func newTx(conn *pgx.Conn, begin string, opts Options, write bool) *tx {
	return &tx{conn: conn, begin: begin, channel: opts.channel(), notify: !opts.DisableNotify, write: write, partition: opts.EventPartition}
}

// send sends the pending writes and then stmts in one round trip, led by
// BEGIN if the transaction has not begun; the batch that begins it also
// reads the clock and the transaction id, after stmts.
func (t *tx) send(ctx context.Context, stmts ...*pgx.QueuedQuery) error {
	var b pgx.Batch
	first := t.begin != ""
	if first {
		b.Queue(t.begin)
		t.begin = ""
	}
	b.QueuedQueries = append(b.QueuedQueries, t.pending.QueuedQueries...)
	t.pending = pgx.Batch{}
	b.QueuedQueries = append(b.QueuedQueries, stmts...)
	if first {
		clock := qClock
		if t.willWrite && len(b.QueuedQueries) == 1 {
			clock = qClockAssign // nothing but BEGIN: see qClockAssign
		}
		b.Queue(clock).QueryRow(func(r pgx.Row) error {
			if err := r.Scan(&t.now, &t.xid); err != nil {
				return fmt.Errorf("postgres: read the clock: %w", err)
			}
			t.now = t.now.UTC()
			return nil
		})
	}
	if len(b.QueuedQueries) == 0 {
		return nil
	}
	return t.conn.SendBatch(ctx, &b).Close()
}

// rows runs a query now (with the pending writes before it) and collects
// its rows with scan.
func rows[T any](ctx context.Context, t *tx, sql string, args []any, scan pgx.RowToFunc[T]) ([]T, error) {
	var out []T
	q := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	q.Query(func(r pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(r, scan)
		return err
	})
	err := t.send(ctx, q)
	return out, err
}

// exec runs a statement now and returns its command tag.
func (t *tx) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	q := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	q.Exec(func(ct pgconn.CommandTag) error { tag = ct; return nil })
	err := t.send(ctx, q)
	return tag, err
}

// queryRow runs a query of one row now and scans it into dest.
func (t *tx) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	q := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	q.QueryRow(func(r pgx.Row) error { return r.Scan(dest...) })
	return t.send(ctx, q)
}

// Now returns the database's clock (statement_timestamp of the first batch
// the transaction sent), the same for every node sharing the database.
func (t *tx) Now(ctx context.Context) (time.Time, error) {
	if t.now.IsZero() {
		if t.begin == "" {
			// A savepoint of a caller's transaction: ask.
			if err := t.queryRow(ctx, qNow, nil, &t.now); err != nil {
				return time.Time{}, fmt.Errorf("postgres: read the clock: %w", err)
			}
			t.now = t.now.UTC()
			return t.now, nil
		}
		if err := t.send(ctx); err != nil {
			return time.Time{}, err
		}
	}
	return t.now, nil
}

func (t *tx) JobInsert(ctx context.Context, jobs []lifecycle.Job) error {
	for i := range jobs {
		t.noteQueued(&jobs[i])
	}
	if len(jobs) >= copyMinJobs {
		return t.copyJobs(ctx, jobs)
	}
	args, err := jobInsertArgs(jobs)
	if err != nil {
		return err
	}
	n := len(jobs)
	t.pending.Queue(qJobInsert, args...).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: insert %d jobs: %w", n, err)
	})
	return nil
}

// wrapErr is a batch item that reads a command's result and wraps its error.
func wrapErr(wrap func(error) error) func(pgx.BatchResults) error {
	return func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return wrap(err)
		}
		return nil
	}
}

func (t *tx) JobGet(ctx context.Context, ids []string) ([]lifecycle.Job, error) {
	q := qJobGet
	if t.write {
		q = qJobGetForUpdate
	}
	jobs, err := t.jobs(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	// Put them in the order asked for, each once.
	byID := make(map[string]lifecycle.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	out := jobs[:0]
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			out = append(out, j)
			delete(byID, id)
		}
	}
	return out, nil
}

func (t *tx) JobLiveByDedupe(ctx context.Context, tenant, key string) (lifecycle.Job, bool, error) {
	jobs, err := t.jobs(ctx, qJobLiveByDedupe, tenant, key)
	if err != nil || len(jobs) == 0 {
		return lifecycle.Job{}, false, err
	}
	return jobs[0], true, nil
}

func (t *tx) JobClaimable(ctx context.Context, q store.ClaimQuery) ([]lifecycle.Job, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	// Without fresh statistics (right after a bulk enqueue, before
	// autovacuum's analyze) PostgreSQL plans the claim as a bitmap scan of
	// every queued job and a sort: 78 ms per claim at 100,000 queued, against
	// 0.2 ms for the ordered walk of the claim index. Rule those plans out for
	// this transaction only; the setting rides in the claim's batch.
	t.pending.Queue(qClaimPlan).Exec(func(pgconn.CommandTag) error { return nil })
	queues := make([]string, 0, len(q.Queues))
	for _, name := range q.Queues {
		if !slices.Contains(queues, name) {
			queues = append(queues, name)
		}
	}
	// Each queue's walk starts at its low-water mark, or below every job.
	markPriority := make([]int32, len(queues))
	markAt := make([]time.Time, len(queues))
	markID := make([]string, len(queues))
	var flights map[string]*flight
	filter := filterKey(q.Kinds, q.Topics)
	for i, name := range queues {
		markPriority[i], markAt[i] = math.MinInt32, time.Unix(0, 0).UTC()
		if t.lw == nil {
			continue
		}
		f, k, ok := t.lw.begin(name, filter)
		t.flights = append(t.flights, f)
		if flights == nil {
			flights = map[string]*flight{}
		}
		flights[name] = f
		if ok {
			markPriority[i], markAt[i], markID[i] = int32(-k.priority), k.at, k.id
		}
	}
	jobs, err := t.jobs(ctx, qJobClaimable, queues, q.Kinds, q.Limit, topicRegexps(q.Topics), markPriority, markAt, markID)
	if err != nil {
		return nil, err
	}
	// The rows come in claim order: the first of each queue is its lowest.
	for _, j := range jobs {
		if f := flights[j.Queue]; f != nil && !f.got {
			f.first, f.got = claimKey{priority: j.Priority, at: j.CreatedAt, id: j.ID}, true
		}
	}
	return jobs, nil
}

// noteQueued remembers the key of a job written into state queued, to
// lower its queue's marks when the transaction ends and to send in its
// queue's notification.
func (t *tx) noteQueued(j *lifecycle.Job) {
	if j.State != lifecycle.Queued {
		return
	}
	k := lowKey(j)
	if old, ok := t.lows[j.Queue]; ok && !k.less(old) {
		return
	}
	if t.lows == nil {
		t.lows = map[string]claimKey{}
	}
	t.lows[j.Queue] = k
}

// finish tells the low-water marks how the transaction ended: the jobs it
// wrote into state queued lower their queues' marks (before its own claims
// end, which they may lie below), and its claims advance the marks if it
// committed. It runs after COMMIT (or ROLLBACK) returned, so that a claim
// that begins after it sees what the transaction wrote.
func (t *tx) finish(committed bool) {
	if t.lw == nil {
		return
	}
	for queue, k := range t.lows {
		t.lw.lower(queue, k, false)
	}
	for _, f := range t.flights {
		t.lw.end(f, committed)
	}
	t.flights, t.lows = nil, nil
}

func (t *tx) JobDue(ctx context.Context, q store.DueQuery) ([]lifecycle.Job, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	var sql string
	switch q.Kind {
	case store.DuePromote:
		sql = qDuePromote
	case store.DueLeaseExpired:
		sql = qDueLeaseExpired
	case store.DueStalled:
		return t.jobs(ctx, qDueStalled, q.Limit)
	case store.DueCancelDeadline:
		sql = qDueCancelDeadline
	case store.DueTimeout:
		sql = qDueTimeout
	case store.DueDeadline:
		sql = qDueDeadline
	default:
		return nil, fmt.Errorf("postgres: unknown maintenance query %q", q.Kind)
	}
	return t.jobs(ctx, sql, q.Now, q.Limit)
}

// codeRevisionConflict is the SQLSTATE stint_check_rows raises when a
// compare-and-swap UPDATE matched fewer rows than it was sent.
const codeRevisionConflict = "SX001"

// JobUpdate queues the compare-and-swap of the rows; it goes out with the
// next statement or with COMMIT. A miss makes that statement fail (see
// stint_check_rows), so the transaction rolls back.
func (t *tx) JobUpdate(ctx context.Context, updates []store.JobUpdate) error {
	jobs := make([]lifecycle.Job, len(updates))
	prev := make([]int64, len(updates))
	for i, u := range updates {
		jobs[i], prev[i] = u.Job, u.PrevRev
		t.noteQueued(&jobs[i])
	}
	mask := store.Updates(updates)
	t.pending.Queue(jobUpdateSQL(mask), jobUpdateArgs(jobs, prev, mask)...).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		var pe *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &pe) && pe.Code == codeRevisionConflict:
			id := ""
			if len(updates) == 1 {
				id = updates[0].Job.ID
			}
			return &lifecycle.Error{Kind: store.ErrRevisionConflict, JobID: id,
				Msg: fmt.Sprintf("a job is no longer at the rev this transaction read (%s): another writer changed it; read it again and retry", pe.Detail)}
		}
		return fmt.Errorf("postgres: update %d jobs: %w", len(updates), err)
	}
	return nil
}

func (t *tx) JobList(ctx context.Context, p store.JobListParams) ([]lifecycle.Job, error) {
	states := make([]string, len(p.States))
	for i, s := range p.States {
		states[i] = string(s)
	}
	return t.jobs(ctx, qJobList, states, p.Queue, p.Kind, p.AfterID, p.Limit)
}

// EventInsert queues the events; they go out with the next statement or
// with COMMIT.
func (t *tx) EventInsert(ctx context.Context, events []lifecycle.Event) error {
	n := len(events)
	t.pending.Queue(qEventInsert, eventInsertArgs(events)...).Fn = wrapErr(func(err error) error {
		return fmt.Errorf("postgres: insert %d events: %w", n, err)
	})
	return nil
}

func (t *tx) EventByRequest(ctx context.Context, jobID, requestID string) (lifecycle.Event, bool, error) {
	if requestID == "" {
		return lifecycle.Event{}, false, nil
	}
	evs, err := t.events(ctx, qEventByRequest, jobID, requestID)
	if err != nil || len(evs) == 0 {
		return lifecycle.Event{}, false, err
	}
	return evs[0], true, nil
}

func (t *tx) EventList(ctx context.Context, jobIDs []string) ([]lifecycle.Event, error) {
	return t.events(ctx, qEventList, jobIDs)
}

func (t *tx) EventJobsByRequest(ctx context.Context, requestID string, typ lifecycle.EventType) ([]string, error) {
	if requestID == "" {
		return nil, nil
	}
	ids, err := rows(ctx, t, qEventJobsByRequest, []any{requestID, string(typ)}, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: find jobs by request id: %w", err)
	}
	return ids, nil
}

// rollback ends a transaction that will not commit. A failed rollback
// leaves the connection in a transaction, and the pool then closes it,
// which rolls back too.
func (t *tx) rollback(ctx context.Context) {
	if t.begin == "" {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "rollback")
	}
}

// commitStageError is an error of the COMMIT itself, as opposed to one of
// the writes sent before it in the same batch.
type commitStageError struct{ err error }

func (e *commitStageError) Error() string { return e.err.Error() }
func (e *commitStageError) Unwrap() error { return e.err }

// commit sends the pending writes and COMMIT in one round trip. The
// transaction's id is known by then whenever it wrote, so that a COMMIT
// whose reply is lost can be looked up (see Driver.once): when no earlier
// batch gave it one (nothing was locked), one more round trip sends the
// writes and reads it first.
func (t *tx) commit(ctx context.Context) error {
	t.flushNotices()
	if t.begin != "" && len(t.pending.QueuedQueries) == 0 {
		return nil // nothing was ever sent
	}
	if t.write && t.xid == 0 && len(t.pending.QueuedQueries) > 0 {
		if err := t.queryRow(ctx, qXactIDAssign, nil, &t.xid); err != nil {
			return err
		}
	}
	c := &pgx.QueuedQuery{SQL: "commit"}
	c.Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return &commitStageError{err}
		}
		return nil
	}
	return t.send(ctx, c)
}

// jobs runs a query of jobSelect rows.
func (t *tx) jobs(ctx context.Context, sql string, args ...any) ([]lifecycle.Job, error) {
	jobs, err := rows(ctx, t, sql, args, scanJob)
	if err != nil {
		return nil, fmt.Errorf("postgres: read jobs: %w", err)
	}
	return jobs, nil
}

// events runs a query of eventSelect rows.
func (t *tx) events(ctx context.Context, sql string, args ...any) ([]lifecycle.Event, error) {
	evs, err := rows(ctx, t, sql, args, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	return evs, nil
}
