package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Host is what the engine needs from the attempt that runs the handler.
type Host interface {
	// Record is the job as this attempt claimed and started it.
	Record() lifecycle.Job
	// Store is the job store; its StepStore is found with store.Steps.
	Store() store.Store
	// Clock is the worker's clock: it measures steps and times retries.
	Clock() clock.Clock
	// Claimed is when the claim's reply arrived, by Clock: the record's
	// updated_at is the store's time of that moment.
	Claimed() time.Time
	// Suspended tells the host that the job gave its lease back (rec is
	// the job after the suspend): the attempt reports nothing more.
	Suspended(rec lifecycle.Job)
}

// Errors the engine returns; the root package maps them to outcomes.
var (
	// ErrNondeterministic: the handler asked for a step whose name differs
	// from the one recorded at that place. The job fails permanently with
	// the reason code "nondeterministic".
	ErrNondeterministic = errors.New("nondeterministic")
	// ErrSaveFailed: a step's record could not be saved. The attempt fails
	// with the code "checkpoint_save_failed".
	ErrSaveFailed = errors.New("checkpoint_save_failed")
	// ErrSuspended: the job gave its lease back to sleep or wait; the
	// handler must return (it is woken later and replays its steps).
	ErrSuspended = errors.New("the job is suspended until its wake time; return from the handler")
	// ErrBudget: the job's step budget is spent; the job halts with its
	// completed steps kept.
	ErrBudget = errors.New("step budget exceeded")
)

// Reason codes of the engine's failures.
const (
	CodeNondeterministic = "nondeterministic"
	CodeSaveFailed       = "checkpoint_save_failed"
)

// Run is the step state of one attempt: the recorded steps (read at the
// first step) and the place of the next one. It is safe for concurrent use,
// but steps are ordered: a handler that runs steps from several goroutines
// at once gets an order that may differ on replay.
type Run struct {
	host Host
	ss   store.StepStore

	mu       sync.Mutex
	loaded   bool
	recorded []store.StepRecord
	next     int // seq of the next step, from 1
	taken    int // steps recorded by this attempt
	rng      *rand.Rand
}

// New returns the step state of an attempt.
func New(h Host) *Run { return &Run{host: h, next: 1} }

// Seed returns the job's seed: the one its producer set in env
// lifecycle.SeedEnv, else one derived from its id (chosen at random when
// the job was enqueued, and recorded with it).
func Seed(j lifecycle.Job) int64 {
	if s, ok := j.Env[lifecycle.SeedEnv]; ok {
		if n, err := lifecycle.ParseSeed(s); err == nil {
			return n
		}
	}
	h := fnv.New64a()
	h.Write([]byte(j.ID))
	return int64(h.Sum64())
}

// Rand returns the attempt's random source, seeded from the job's seed: the
// same draws in the same order give the same values on every attempt.
func (r *Run) Rand() *rand.Rand {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rng == nil {
		s := uint64(Seed(r.host.Record()))
		r.rng = rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	}
	return r.rng
}

// Places returns how many places in the order the handler has asked for.
func (r *Run) Places() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next - 1
}

// load reads the job's recorded steps once per attempt.
func (r *Run) load(ctx context.Context) error {
	if r.loaded {
		return nil
	}
	ss, err := store.Steps(r.host.Store())
	if err != nil {
		return err
	}
	r.ss = ss
	recs, err := r.readSteps(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("%w: read the job's recorded steps: %v", ErrSaveFailed, err)
	}
	r.ss, r.recorded, r.loaded = ss, recs, true
	return nil
}

// owner is the attempt's fence, for the store calls it makes.
func (r *Run) owner() store.OwnerParams {
	j := r.host.Record()
	return store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}
}

// readSteps reads the job's recorded steps, as the lease holder when the
// store reads that way (store.LeasedStepReader: over a server's API).
func (r *Run) readSteps(ctx context.Context) ([]store.StepRecord, error) {
	if lr, ok := r.ss.(store.LeasedStepReader); ok {
		o := r.owner()
		return lr.JobStepsLeased(ctx, &o)
	}
	return r.ss.JobSteps(ctx, r.host.Record().ID)
}

// readSignal reads the signal name sent to the job, as readSteps reads.
func (r *Run) readSignal(ctx context.Context, name string) (store.Signal, bool, error) {
	if lr, ok := r.ss.(store.LeasedStepReader); ok {
		o := r.owner()
		return lr.JobSignalLeased(ctx, &o, name)
	}
	return r.ss.JobSignalGet(ctx, r.host.Record().ID, name)
}

// take claims the next place in the order for a step of name and kind. It
// returns the record at that place when there is one (a replay), after
// checking that the handler asks for the same step.
func (r *Run) take(ctx context.Context, name, kind string) (int, *store.StepRecord, error) {
	if name == "" {
		return 0, nil, fmt.Errorf("stint: a step needs a name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(ctx); err != nil {
		return 0, nil, err
	}
	seq := r.next
	r.next++
	if seq <= len(r.recorded) {
		rec := r.recorded[seq-1]
		if rec.Name != name || rec.Kind != kind {
			return seq, nil, fmt.Errorf("%w: step %d is %s %q in the job's record, but the handler now asks for %s %q there; "+
				"handlers must ask for the same steps in the same order on every attempt (docs/steps.md)", ErrNondeterministic, seq, rec.Kind, rec.Name, kind, name)
		}
		return seq, &rec, nil
	}
	return seq, nil, nil
}

// before checks, before a step's function runs, that the attempt may go on:
// not cancelled, and within the job's step budget.
func (r *Run) before(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	j := r.host.Record()
	r.mu.Lock()
	used := j.Usage.Steps + int64(r.taken)
	r.mu.Unlock()
	if b := j.Budget; b != nil && b.MaxSteps > 0 && used >= b.MaxSteps {
		return fmt.Errorf("%w: %d of %d steps used", ErrBudget, used, b.MaxSteps)
	}
	return nil
}

// save records a step. A store that refuses it for the lease (stale) or
// the order (conflict) means the job is no longer this attempt's; any other
// failure to save aborts the attempt with checkpoint_save_failed.
func (r *Run) save(ctx context.Context, p store.JobStepParams) (store.StepRecord, error) {
	j := r.host.Record()
	p.OwnerParams = store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}
	if p.Status == "" {
		p.Status = store.StepOK
	}
	_, rec, err := r.ss.JobStepRecord(context.WithoutCancel(ctx), &p)
	if err != nil {
		return rec, r.saveError(p.Seq, p.Name, err)
	}
	r.took()
	return rec, nil
}

// took counts a step recorded by this attempt.
func (r *Run) took() {
	r.mu.Lock()
	r.taken++
	r.mu.Unlock()
}

// saveError says what a store's refusal to record step seq means: a stale
// lease or another attempt's record ends this attempt's claim on the job;
// anything else aborts the attempt with checkpoint_save_failed.
func (r *Run) saveError(seq int, name string, err error) error {
	if errors.Is(err, store.ErrStaleLease) || errors.Is(err, store.ErrStepConflict) || errors.Is(err, store.ErrInvalidTransition) {
		return err
	}
	return fmt.Errorf("%w: step %d %q: %w", ErrSaveFailed, seq, name, err)
}

// storeNow estimates the store's clock: the store's time of this attempt's
// start plus what the worker's clock says passed since.
func (r *Run) storeNow() time.Time {
	return r.host.Record().UpdatedAt.Add(r.host.Clock().Now().Sub(r.host.Claimed()))
}

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return b, err
}
