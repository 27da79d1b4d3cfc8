package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/stint-dev/stint/lifecycle"
)

// Options configure a Store built by [New].
type Options struct {
	// NewID makes job ids and lease ids. Defaults to UUIDv7 strings, which
	// sort by creation time.
	NewID func() string
	// Admission is the policy applied to every new job at enqueue. Defaults
	// to nil: every job is admitted.
	Admission *Admission
}

// engine implements Store on a Driver. It is the only code that writes a
// transition: read the row, lifecycle.Apply, CAS-write the row and its event.
type engine struct {
	d     Driver
	newID func() string
	wake  *broker
	// leases carries the ids of jobs whose lease changed under their owner.
	leases *broker
	// hooks knows whether any webhook exists (outboxhooks.go).
	hooks hookCache
	// admission is the policy applied at enqueue; nil admits every job.
	admission *Admission
	// limits knows which queues are paused or limited.
	limits *limits
	// turns lines up this process's claimers of limited queues (limit_turn.go).
	turns turns
}

// New returns a Store that keeps its data through d.
func New(d Driver, opts Options) Store {
	if opts.NewID == nil {
		opts.NewID = newUUID
	}
	e := &engine{d: d, newID: opts.NewID, wake: newBroker(), leases: newBroker(), admission: opts.Admission, limits: newLimits()}
	if l, ok := d.(Listener); ok {
		e.wake.listen(l, e.leases)
	}
	return e
}

func newUUID() string { return uuid.Must(uuid.NewV7()).String() }

func (e *engine) Close() error {
	e.wake.close()
	e.leases.close()
	return e.d.Close()
}

// write runs fn in one transaction with a fresh batch (a retried transaction
// starts over), flushes the batch, and after commit wakes the claimers of the
// queues that gained claimable jobs.
func (e *engine) write(ctx context.Context, fn func(tx Tx, b *batch) error) error {
	var n Notice
	err := e.d.InTx(ctx, func(tx Tx) error {
		var b batch
		if err := fn(tx, &b); err != nil {
			return err
		}
		// Runs and the outbox follow from the jobs' transitions in the same
		// transaction (runsettle.go, outboxmatch.go), as do the wake-ups of
		// parents awaiting a child that ended (step_ops.go).
		if err := e.wakeParents(ctx, tx, &b); err != nil {
			return err
		}
		if err := e.settleRuns(ctx, tx, &b); err != nil {
			return err
		}
		if err := e.matchOutbox(ctx, tx, &b); err != nil {
			return err
		}
		if err := b.flush(ctx, tx); err != nil {
			return err
		}
		n = b.notice()
		return nil
	})
	if err == nil {
		e.wake.publish(n.Queues)
		e.leases.publish(n.Jobs)
	}
	return err
}

// now resolves the time of a transaction: the caller's, or the store's clock.
// Times are kept to the microsecond, the precision both backends store.
func now(ctx context.Context, tx Tx, p *time.Time) (time.Time, error) {
	if p != nil {
		return p.UTC().Truncate(time.Microsecond), nil
	}
	t, err := tx.Now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// batch collects the writes of one transaction so they go out together.
type batch struct {
	inserts []lifecycle.Job
	updates []JobUpdate
	// written are jobs a driver's statement already wrote (a one-statement
	// claim): their events go out with the batch, their rows do not.
	written []lifecycle.Job
	events  []lifecycle.Event
	queues  []string
	// leases are jobs whose lease changed under their owner.
	leases []string
	// runs are the run and outbox writes (runbatch.go).
	runs runBatch
	// req is the request ids looked up in advance (request_lookup.go).
	req requests
}

func (b *batch) notice() Notice { return Notice{Queues: b.queues, Jobs: b.leases} }

// add records an accepted step; prev is nil for a new job.
func (b *batch) add(prev *lifecycle.Job, s lifecycle.Step) {
	if s.Noop() {
		return
	}
	if prev == nil {
		b.inserts = append(b.inserts, s.Job)
	} else {
		b.updates = append(b.updates, JobUpdate{Job: s.Job, PrevRev: prev.Rev, Prev: *prev})
	}
	b.events = append(b.events, *s.Event)
	if s.Job.State == lifecycle.Queued {
		b.wake(s.Job.Queue)
	}
	if prev != nil && prev.State.Leased() && s.Event.Actor != lifecycle.ActorOwner && s.Job.State != prev.State {
		// A client or the system changed the lease under its owner (cancel
		// requested; revoked by a hard cancel, timeout, deadline, expiry,
		// forced cancel or budget): tell the owner now, not at its next
		// heartbeat.
		b.leases = append(b.leases, s.Job.ID)
	}
}

// addWritten records a step whose row a driver's statement already wrote:
// only its event is flushed.
func (b *batch) addWritten(prev *lifecycle.Job, s lifecycle.Step) {
	if s.Noop() {
		return
	}
	b.written = append(b.written, s.Job)
	b.events = append(b.events, *s.Event)
	if s.Job.State == lifecycle.Queued {
		b.wake(s.Job.Queue)
	}
}

func (b *batch) wake(queue string) {
	for _, q := range b.queues {
		if q == queue {
			return
		}
	}
	b.queues = append(b.queues, queue)
}

// flush writes the batch. Updates are collapsed per job to the last write so
// a job stepped twice in one transaction (claim then start) is written once.
func (b *batch) flush(ctx context.Context, tx Tx) error {
	if len(b.inserts) > 0 {
		if err := tx.JobInsert(ctx, b.inserts); err != nil {
			return err
		}
	}
	if len(b.updates) > 0 {
		if err := tx.JobUpdate(ctx, collapse(b.updates)); err != nil {
			return err
		}
	}
	if len(b.events) > 0 {
		if err := tx.EventInsert(ctx, b.events); err != nil {
			return err
		}
	}
	if err := b.runs.flush(ctx, tx); err != nil {
		return err
	}
	if n := b.notice(); !n.Empty() {
		return tx.Notify(ctx, n)
	}
	return nil
}

func collapse(us []JobUpdate) []JobUpdate {
	idx := make(map[string]int, len(us))
	out := us[:0:0]
	for _, u := range us {
		if i, ok := idx[u.Job.ID]; ok {
			out[i].Job = u.Job // keep the first PrevRev and Prev: the row as read
			continue
		}
		idx[u.Job.ID] = len(out)
		out = append(out, u)
	}
	return out
}

// step applies cmd to job, honouring request-id idempotency and an expected
// revision, and records the result in b. It returns the job after the step.
func (e *engine) step(ctx context.Context, tx Tx, b *batch, job lifecycle.Job, cmd lifecycle.Command, expected *int64, at time.Time) (lifecycle.Job, error) {
	if cmd.RequestID != "" {
		ev, ok, err := b.eventByRequest(ctx, tx, job.ID, cmd.RequestID)
		if err != nil {
			return job, err
		}
		if ok {
			if ev.Op != cmd.Op && !(cmd.Op == lifecycle.OpCheckpoint && ev.Op == lifecycle.OpHalt) {
				return job, &lifecycle.Error{Kind: ErrRequestConflict, JobID: job.ID, Op: cmd.Op, State: job.State,
					Msg: fmt.Sprintf("request id %q was already used for %s on this job; use a new request id for a new request", cmd.RequestID, ev.Op)}
			}
			return job, nil
		}
	}
	if expected != nil && *expected != job.Rev {
		return job, &lifecycle.Error{Kind: ErrRevisionConflict, JobID: job.ID, Op: cmd.Op, State: job.State,
			Msg: fmt.Sprintf("expected rev %d but the job is at rev %d; read it again and decide anew", *expected, job.Rev)}
	}
	if err := e.retrySchedule(ctx, tx, job, &cmd, at); err != nil {
		return job, err
	}
	s, err := lifecycle.Apply(job, cmd, notBefore(at, job))
	if err != nil {
		return job, err
	}
	prev := job
	b.add(&prev, s)
	return s.Job, nil
}

// one runs cmd on the job with id in its own transaction.
func (e *engine) one(ctx context.Context, id string, cmd lifecycle.Command, expected *int64, at *time.Time) (lifecycle.Job, error) {
	return e.oneWith(ctx, id, cmd, expected, at, nil)
}

// oneWith is one with a hook that completes the command with the
// transaction's time (a delay resolved on the store's clock).
func (e *engine) oneWith(ctx context.Context, id string, cmd lifecycle.Command, expected *int64, at *time.Time, timed func(c *lifecycle.Command, now time.Time)) (lifecycle.Job, error) {
	if err := checkID(id); err != nil {
		return lifecycle.Job{}, err
	}
	var out lifecycle.Job
	err := e.write(ctx, func(tx Tx, b *batch) error {
		job, t, err := lockJob(ctx, tx, id, at)
		if err != nil {
			return err
		}
		c := cmd
		if timed != nil {
			timed(&c, notBefore(t, job))
		}
		out, err = e.step(ctx, tx, b, job, c, expected, t)
		return err
	})
	return out, err
}

// lockJob reads the job with id, locked where the backend locks rows, and
// then the transaction's time: a lease is judged at a moment after any wait
// for the row.
func lockJob(ctx context.Context, tx Tx, id string, at *time.Time) (lifecycle.Job, time.Time, error) {
	jobs, err := tx.JobGet(ctx, []string{id})
	if err != nil {
		return lifecycle.Job{}, time.Time{}, err
	}
	if len(jobs) == 0 {
		return lifecycle.Job{}, time.Time{}, notFound(id)
	}
	t, err := now(ctx, tx, at)
	if err != nil {
		return lifecycle.Job{}, time.Time{}, err
	}
	return jobs[0], t, nil
}

// checkID refuses a job id that is missing or that no store could hold.
func checkID(id string) error {
	if id == "" {
		return lifecycle.Validationf("job id is required")
	}
	return lifecycle.CheckText("job id", id)
}

func notFound(id string) error {
	return &lifecycle.Error{Kind: ErrNotFound, JobID: id, Msg: "no job has this id; check it with `stint jobs ls`"}
}

// IsRejection reports whether err is a request the lifecycle or the store
// refused (as opposed to a database failure).
func IsRejection(err error) bool {
	var le *lifecycle.Error
	return errors.As(err, &le)
}

// notBefore keeps a job's time moving forward: a transaction's time is read
// before it locks the row, so another that committed meanwhile may have
// written a later one (LI-3 needs created <= started <= finished).
func notBefore(t time.Time, j lifecycle.Job) time.Time {
	if t.Before(j.UpdatedAt) {
		return j.UpdatedAt
	}
	return t
}
