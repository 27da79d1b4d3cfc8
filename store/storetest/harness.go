package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// epoch is the suite's time zero. It lies in the future on purpose: a store
// that reads its own clock where the suite passed a Now writes times that do
// not line up with the ones the suite expects.
var epoch = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// leaseTTL is the lease the fixtures take: long enough that no fixture's
// lease expires unless a test moves the clock past it on purpose.
const leaseTTL = time.Hour

// harness is one subtest's store and clock. Every call it makes passes an
// explicit Now, one second after the previous call's, so time moves only
// when the harness moves it.
type harness struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	now time.Time
	seq int
	// requestID, when set, is the request id of every enqueue the harness
	// makes, so tests can take a request id through a job's enqueue.
	requestID string
}

func newHarness(t *testing.T, newStore func(*testing.T) store.Store) *harness {
	t.Helper()
	return &harness{t: t, s: newStore(t), ctx: t.Context(), now: epoch}
}

// tick moves the clock one second on and returns the new time.
func (h *harness) tick() *time.Time {
	h.now = h.now.Add(time.Second)
	at := h.now
	return &at
}

// advance moves the clock by d.
func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

// name returns a name unique within the harness, such as "q3".
func (h *harness) name(prefix string) string {
	h.seq++
	return fmt.Sprintf("%s%d", prefix, h.seq)
}

// fixture is a job the harness built, with what its owner knows about it.
type fixture struct {
	ID     string
	Queue  string
	Worker string
	// Lease is the lease of the job's last claim ("" before any claim). It
	// may be stale: tests use that on purpose.
	Lease string
}

// specOpt adjusts the spec of a fixture; now is the time of its enqueue.
type specOpt func(s *lifecycle.Spec, now time.Time)

func maxAttempts(n int) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.MaxAttempts = n }
}

func deadlineIn(d time.Duration) specOpt {
	return func(s *lifecycle.Spec, now time.Time) { at := now.Add(d); s.Deadline = &at }
}

func timeoutOf(d time.Duration) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.Timeout = d }
}

func runAtIn(d time.Duration) specOpt {
	return func(s *lifecycle.Spec, now time.Time) { at := now.Add(d); s.RunAt = &at }
}

func stepBudget(n int64) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.Budget = &lifecycle.Budget{MaxSteps: n} }
}

func onExhaustedFailed() specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.OnExhausted = lifecycle.Failed }
}

func dedupeKey(tenant, key string) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.Tenant, s.DedupeKey = tenant, key }
}

func dependsOn(ids ...string) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.DependsOn = ids }
}

func denied(reason string) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { s.DenyReason = reason }
}

// spec returns a valid spec in a queue of its own, so claims in one test
// never pick up another fixture's job.
func (h *harness) spec(now time.Time, opts ...specOpt) lifecycle.Spec {
	s := lifecycle.Spec{
		Kind:    "storetest",
		Queue:   h.name("q"),
		Payload: json.RawMessage(`{"n":1}`),
	}
	for _, o := range opts {
		o(&s, now)
	}
	return s
}

// enqueue creates one new job.
func (h *harness) enqueue(opts ...specOpt) fixture {
	h.t.Helper()
	at := h.tick()
	spec := h.spec(*at, opts...)
	res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: "producer", RequestID: h.requestID, Now: at})
	if err != nil {
		h.t.Fatalf("enqueue: %v", err)
	}
	if len(res) != 1 || res[0].Existing {
		h.t.Fatalf("enqueue: got %+v, want one new job", res)
	}
	return fixture{ID: res[0].Job.ID, Queue: spec.Queue}
}

// blocked makes a blocked job the only way there is: as a job of a run
// that depends on another job of the run (depends_on outside a run is
// refused). opts adjust the blocked job's spec.
func (h *harness) blocked(opts ...specOpt) fixture {
	h.t.Helper()
	at := h.tick()
	return h.blockedAt(h.spec(*at, opts...), at)
}

// blockedAt creates, at time at, a run of two jobs: an upstream scheduled
// upstreamIn from now in a queue of its own, which no test claims, and spec,
// blocked on it. The blocked job allows failure and the run continues on
// failure, so whatever a test does to the blocked job leaves the upstream
// and the run's other jobs alone. It returns the blocked job.
func (h *harness) blockedAt(spec lifecycle.Spec, at *time.Time) fixture {
	h.t.Helper()
	up := h.spec(*at)
	r := at.Add(upstreamIn)
	up.RunAt, up.Tenant = &r, spec.Tenant
	v, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{
		Run: lifecycle.RunSpec{Tenant: spec.Tenant, OnFailure: lifecycle.FailContinue, ActorID: "producer"},
		Jobs: []store.RunJobSpec{
			{Name: "upstream", Spec: up},
			{Name: "blocked", Spec: spec, DependsOn: []string{"upstream"}, AllowFailure: true},
		},
		Now: at,
	})
	if err != nil {
		h.t.Fatalf("create the run of a blocked job: %v", err)
	}
	for _, j := range v.Jobs {
		if j.Name == "blocked" {
			return fixture{ID: j.JobID, Queue: cmp.Or(spec.Queue, lifecycle.DefaultQueue)}
		}
	}
	h.t.Fatalf("the run of a blocked job has no job \"blocked\": %+v", v.Jobs)
	return fixture{}
}

// upstreamIn is how far out a blocked fixture's upstream is scheduled: past
// any clock jump a test makes, so it never comes due.
const upstreamIn = 10 * 365 * 24 * time.Hour

// get reads a job, failing the test if it cannot.
func (h *harness) get(id string) store.Job {
	h.t.Helper()
	j, err := h.s.JobGet(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	return j
}

// must fails the test unless job id is in state want.
func (h *harness) must(id string, want lifecycle.State) store.Job {
	h.t.Helper()
	j := h.get(id)
	if j.State != want {
		h.t.Fatalf("fixture: job %s is %s, want %s", id, j.State, want)
	}
	return j
}

// ok fails the test when a step of a fixture's path fails.
func (h *harness) ok(what string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("fixture: %s: %v", what, err)
	}
}

// own returns the owner params of f at the next tick.
func (h *harness) own(f fixture) store.OwnerParams {
	return store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: h.tick()}
}

// claim claims f's job (alone in its queue) for a worker of its own.
func (h *harness) claim(f *fixture) {
	h.t.Helper()
	f.Worker = h.name("worker-")
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{
		WorkerID: f.Worker, Queues: []string{f.Queue}, Limit: 1, LeaseTTL: leaseTTL, Now: h.tick(),
	})
	h.ok("claim", err)
	if len(jobs) != 1 || jobs[0].ID != f.ID {
		h.t.Fatalf("fixture: claim of %s returned %d jobs", f.ID, len(jobs))
	}
	f.Lease = jobs[0].LeaseID
}

func (h *harness) start(f fixture) {
	h.t.Helper()
	p := h.own(f)
	_, err := h.s.JobStart(h.ctx, &p)
	h.ok("start", err)
}

func (h *harness) complete(f fixture) {
	h.t.Helper()
	res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: h.own(f), Result: json.RawMessage(`{"ok":true}`)}})
	h.ok("complete", err)
	h.ok("complete", res[0].Err)
}

func (h *harness) fail(f fixture, code string) {
	h.t.Helper()
	_, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: h.own(f), Error: lifecycle.JobError{Code: code, Message: "it broke"}})
	h.ok("fail", err)
}

func (h *harness) cancel(f fixture, hard bool) {
	h.t.Helper()
	_, err := h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: hard, ActorID: "operator", Now: h.tick()})
	h.ok("cancel", err)
}

func (h *harness) release(f fixture) {
	h.t.Helper()
	_, err := h.s.JobRelease(h.ctx, &store.JobReleaseParams{OwnerParams: h.own(f), Reason: "shutting down"})
	h.ok("release", err)
}

// system applies a system command to one job at the next tick.
func (h *harness) system(f fixture, cmd lifecycle.Command) {
	h.t.Helper()
	cmd.Actor, cmd.ActorID = lifecycle.ActorSystem, "storetest"
	_, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: cmd, Now: h.tick()})
	h.ok(string(cmd.Op), err)
}

// build returns a job in state through legal store calls only. opts adjust
// its spec; a path that cannot reach state with them fails the test.
func (h *harness) build(state lifecycle.State, opts ...specOpt) fixture {
	h.t.Helper()
	var f fixture
	switch state {
	case lifecycle.Queued:
		return h.enqueue(opts...)
	case lifecycle.Scheduled:
		f = h.enqueue(append([]specOpt{runAtIn(time.Hour)}, opts...)...)
	case lifecycle.Blocked:
		// Only a run's job can be blocked: see blocked.
		f = h.blocked(opts...)
	case lifecycle.Denied:
		f = h.enqueue(append([]specOpt{denied("admission policy: tenant over quota")}, opts...)...)
	case lifecycle.Claimed:
		f = h.build(lifecycle.Queued, opts...)
		h.claim(&f)
	case lifecycle.Running:
		f = h.build(lifecycle.Claimed, opts...)
		h.start(f)
	case lifecycle.CancelRequested:
		f = h.build(lifecycle.Running, opts...)
		h.cancel(f, false)
	case lifecycle.Stalled:
		f = h.build(lifecycle.Running, opts...)
		h.release(f)
	case lifecycle.Retrying:
		f = h.build(lifecycle.Running, opts...)
		h.fail(f, "network")
	case lifecycle.Succeeded:
		f = h.build(lifecycle.Running, opts...)
		h.complete(f)
	case lifecycle.Failed:
		f = h.build(lifecycle.Running, opts...)
		h.fail(f, "compile_error")
	case lifecycle.Cancelled:
		f = h.build(lifecycle.Queued, opts...)
		h.cancel(f, false)
	case lifecycle.TimedOut:
		f = h.build(lifecycle.Queued, append([]specOpt{deadlineIn(time.Minute)}, opts...)...)
		h.advance(2 * time.Minute)
		h.system(f, lifecycle.Command{Op: lifecycle.OpTimeOut, Deadline: true})
	case lifecycle.Halted:
		f = h.build(lifecycle.Running, opts...)
		_, err := h.s.JobHalt(h.ctx, &store.JobHaltParams{OwnerParams: h.own(f), ReasonCode: "step_limit", Reason: "the handler reached its step limit"})
		h.ok("halt", err)
	case lifecycle.DeadLettered:
		f = h.build(lifecycle.Queued, opts...)
		_, err := h.s.JobDeadLetter(h.ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: f.ID, Now: h.tick()}, ReasonCode: lifecycle.ReasonParseError})
		h.ok("dead_letter", err)
	default:
		h.t.Fatalf("fixture: no path to state %q", state)
	}
	h.must(f.ID, state)
	return f
}

// expired returns a job stalled by the system when its lease expired: a
// lost lease, which counts as a failed attempt (a release does not). It
// moves the clock past the lease, so build it before fixtures whose leases
// the test still uses.
func (h *harness) expired(opts ...specOpt) fixture {
	h.t.Helper()
	f := h.build(lifecycle.Running, opts...)
	h.advance(leaseTTL)
	h.system(f, lifecycle.Command{Op: lifecycle.OpStall})
	h.must(f.ID, lifecycle.Stalled)
	return f
}
