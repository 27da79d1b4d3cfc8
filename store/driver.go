package store

import (
	"context"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Driver is what a backend implements: transactions and a short list of
// verbs over the jobs, events and provenance tables. It holds no lifecycle
// policy: [New] turns it into a [Store].
type Driver interface {
	// InTx runs fn in one read-write transaction and commits it when fn
	// returns nil. When the database reports a transient conflict (busy, a
	// serialization failure, a deadlock, a lost race on a unique index) the
	// driver rolls back and runs fn again from the start; such errors never
	// reach the caller.
	InTx(ctx context.Context, fn func(Tx) error) error
	// Read runs fn in a read-only transaction (a consistent snapshot).
	Read(ctx context.Context, fn func(Tx) error) error
	// Close releases the driver's connections.
	Close() error
}

// Tx is one transaction of a Driver. Methods that change rows may only be
// called inside InTx.
type Tx interface {
	// Now is the store's clock: the database's transaction time on PostgreSQL,
	// the driver's clock on SQLite.
	Now(ctx context.Context) (time.Time, error)

	// JobInsert inserts new jobs.
	JobInsert(ctx context.Context, jobs []lifecycle.Job) error
	// JobGet returns the jobs with the given ids, locked for update where the
	// backend locks rows, in the order of ids; missing ids are left out.
	JobGet(ctx context.Context, ids []string) ([]lifecycle.Job, error)
	// JobLiveByDedupe returns the non-terminal job with (tenant, key), if any.
	JobLiveByDedupe(ctx context.Context, tenant, key string) (lifecycle.Job, bool, error)
	// JobClaimable returns up to q.Limit queued jobs in claim order, locked
	// and skipping rows other transactions have locked. Queued means due:
	// run_at is not looked at.
	JobClaimable(ctx context.Context, q ClaimQuery) ([]lifecycle.Job, error)
	// JobDue returns up to q.Limit jobs due for q.Kind at q.Now, locked and
	// skipping locked rows.
	JobDue(ctx context.Context, q DueQuery) ([]lifecycle.Job, error)
	// JobUpdate writes each job where its row still has PrevRev. If any row
	// does not match it returns ErrRevisionConflict (and the caller rolls back).
	JobUpdate(ctx context.Context, updates []JobUpdate) error
	// JobList returns jobs matching p ordered by id.
	JobList(ctx context.Context, p JobListParams) ([]lifecycle.Job, error)

	// EventInsert appends events; the backend assigns their ids.
	EventInsert(ctx context.Context, events []lifecycle.Event) error
	// EventByRequest returns the event of job with the given request id, if any.
	EventByRequest(ctx context.Context, jobID, requestID string) (lifecycle.Event, bool, error)
	// EventList returns the events of the given jobs ordered by job, then rev.
	EventList(ctx context.Context, jobIDs []string) ([]lifecycle.Event, error)
	// EventJobsByRequest returns the ids of the jobs that have an event of
	// type typ with the given request id (a retried claim finds its jobs).
	EventJobsByRequest(ctx context.Context, requestID string, typ lifecycle.EventType) ([]string, error)

	// Notify tells waiting workers, after commit, what the transaction did:
	// queues that gained claimable jobs, and jobs whose lease changed under
	// their owner. At most one notification per queue per transaction.
	Notify(ctx context.Context, n Notice) error
}

// Notice is what a commit tells the workers waiting on it.
type Notice struct {
	// Queues gained claimable jobs.
	Queues []string
	// Jobs had their lease changed under their owner: a cancel was requested,
	// the lease was revoked (hard cancel, timeout, deadline, expiry). Their
	// owners should look at them now rather than at the next heartbeat.
	Jobs []string
}

// Empty reports whether n says nothing.
func (n Notice) Empty() bool { return len(n.Queues) == 0 && len(n.Jobs) == 0 }

// ClaimQuery selects claimable jobs.
type ClaimQuery struct {
	Queues []string
	Kinds  []string // empty: any kind
	// Topics are valid topic patterns (lifecycle.MatchTopic); empty: any
	// topic. Otherwise a job matches when its topic matches one of them.
	Topics []string
	Limit  int
	Now    time.Time
	// WorkerID is the claiming worker; drivers need not look at it.
	WorkerID string
}

// DueKind names a maintenance query.
type DueKind string

// The maintenance queries a driver answers.
const (
	// DuePromote: scheduled or retrying jobs with run_at <= now.
	DuePromote DueKind = "promote"
	// DueLeaseExpired: claimed, running or cancel_requested jobs with lease_expires_at <= now.
	DueLeaseExpired DueKind = "lease_expired"
	// DueStalled: stalled jobs.
	DueStalled DueKind = "stalled"
	// DueCancelDeadline: cancel_requested jobs with cancel_deadline <= now.
	DueCancelDeadline DueKind = "cancel_deadline"
	// DueTimeout: running jobs with timeout_at <= now.
	DueTimeout DueKind = "timeout"
	// DueDeadline: non-terminal jobs with deadline <= now.
	DueDeadline DueKind = "deadline"
)

// DueQuery selects jobs due for one maintenance transition.
type DueQuery struct {
	Kind  DueKind
	Now   time.Time
	Limit int
}

// JobUpdate is one compare-and-swap write: Job replaces the row whose rev is PrevRev.
type JobUpdate struct {
	Job     lifecycle.Job
	PrevRev int64
	// Prev is the job as it was at PrevRev (the row the transition was
	// applied to), when its ID is set. With it a driver may write only the
	// columns that differ between Prev and Job: the row at PrevRev holds
	// Prev (see KnownPrev).
	Prev lifecycle.Job
}

// KnownPrev reports whether u.Prev is the row u replaces.
func (u *JobUpdate) KnownPrev() bool { return u.Prev.ID == u.Job.ID && u.Prev.Rev == u.PrevRev }
