package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Sizes of the random walk. In -short mode it uses walkShortJobs.
const (
	walkJobs      = 1000
	walkShortJobs = 100
	walkWindow    = 32 // jobs alive at once
)

// walkSeed returns the seed of the random walk: STORETEST_SEED when set,
// so a failure can be replayed, else a fresh one.
func walkSeed(t *testing.T) uint64 {
	if s := os.Getenv("STORETEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STORETEST_SEED=%q: want an unsigned integer", s)
		}
		return n
	}
	return rand.Uint64()
}

// walker drives jobs through random legal paths and counts the transitions
// the store accepted.
type walker struct {
	*harness
	rng      *rand.Rand
	accepted int // transitions (events) the store accepted
	refused  int // requests refused (a lease expired under a clock jump, a condition not due yet)
	ops      map[string]int
	upstream int // the runs' upstream jobs made for blocked jobs: one job and one event each, outside the walk
}

// testRandomWalk drives 1,000 jobs through random legal paths with random
// clock jumps and maintenance passes. Every accepted call must add exactly
// the events it claims, the total must equal the transitions counted, and
// Verify must find nothing.
func testRandomWalk(t *testing.T, newStore func(*testing.T) store.Store) {
	n := walkJobs
	if testing.Short() {
		n = walkShortJobs
	}
	seed := walkSeed(t)
	t.Logf("seed %d (set STORETEST_SEED to replay)", seed)
	w := &walker{harness: newHarness(t, newStore), rng: rand.New(rand.NewPCG(seed, seed>>1)), ops: map[string]int{}}
	// Jobs are enqueued a window at a time, so the ones alive together
	// share a stretch of the clock: their leases, run_at, timeouts and
	// deadlines come due under the walk's own jumps, not all at once.
	created := 0
	var live []string
	for steps := 0; (created < n || len(live) > 0) && steps < 60*n; steps++ {
		if len(live) < walkWindow/2 && created < n {
			k := min(walkWindow, n-created)
			base := created
			live = append(live, w.enqueueWindow(base, k)...)
			created += k
			w.accepted += k // the enqueued (or denied) events
		}
		i := w.rng.IntN(len(live))
		if w.step(live[i]) {
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		if w.rng.IntN(50) == 0 {
			w.maintain()
		}
	}
	rep, err := w.s.Verify(w.ctx, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	t.Logf("%d jobs (%d still live), %d accepted transitions, %d refused requests; ops %v", n, len(live), w.accepted, w.refused, w.ops)
	if rep.Jobs != n+w.upstream || rep.Events != w.accepted+w.upstream {
		t.Errorf("the store holds %d jobs and %d events; the walk made %d jobs and counted %d accepted transitions (and %d upstreams of blocked jobs, one event each)",
			rep.Jobs, rep.Events, n, w.accepted, w.upstream)
	}
	for _, f := range rep.Findings {
		t.Errorf("verify finding: job %s: %s", f.JobID, f.Problem)
	}
}

// randomSpec returns the spec of job i: a mix of queues, attempts, run_at,
// dependencies, denials, deadlines, timeouts and budgets.
func (w *walker) randomSpec(i int) lifecycle.Spec {
	s := lifecycle.Spec{Kind: "walk", Queue: fmt.Sprintf("walk-%d", i), MaxAttempts: 1 + w.rng.IntN(3),
		Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), CancelGrace: time.Duration(10+w.rng.IntN(50)) * time.Second}
	p := w.rng.IntN(100)
	switch {
	case p < 20:
		at := w.now.Add(time.Duration(1+w.rng.IntN(600)) * time.Second)
		s.RunAt = &at
	case p < 30:
		s.DependsOn = []string{walkUpstream} // made blocked in a run: see enqueueWindow
	case p < 35:
		s.DenyReason = "over quota"
	}
	if w.rng.IntN(5) == 0 {
		d := w.now.Add(time.Duration(1+w.rng.IntN(60)) * time.Minute)
		s.Deadline = &d
	}
	if w.rng.IntN(3) == 0 {
		s.Timeout = time.Duration(1+w.rng.IntN(10)) * time.Minute
	}
	if w.rng.IntN(10) == 0 {
		s.Budget = &lifecycle.Budget{MaxSteps: 3}
	}
	if w.rng.IntN(4) == 0 {
		s.OnExhausted = lifecycle.Failed
	}
	return s
}

// walkUpstream marks a random spec as blocked on an upstream job.
const walkUpstream = "upstream"

// enqueueWindow makes jobs base to base+k-1 of the walk: the plain ones in
// batches, each blocked one as a job of a run of its own, after an upstream
// that never comes due (harness.blockedAt).
func (w *walker) enqueueWindow(base, k int) []string {
	w.t.Helper()
	var plain []lifecycle.Spec
	var ids []string
	for i := range k {
		s := w.randomSpec(base + i)
		if len(s.DependsOn) == 0 {
			plain = append(plain, s)
			continue
		}
		s.DependsOn = nil
		ids = append(ids, w.blockedAt(s, w.tick()).ID)
		w.upstream++
	}
	if len(plain) > 0 {
		ids = append(ids, w.enqueueMany(len(plain), func(i int) lifecycle.Spec { return plain[i] })...)
	}
	return ids
}

// legal lists the (op, actor) pairs the table allows from state.
func legal(state lifecycle.State) []opActor {
	var out []opActor
	for _, p := range tablePairs() {
		if hasRow(p.Op, p.Actor, state) {
			out = append(out, p)
		}
	}
	return out
}

// step performs one random legal op on job id and reports whether the job
// is terminal afterwards.
func (w *walker) step(id string) bool {
	w.t.Helper()
	j := w.get(id)
	if j.State.Terminal() {
		return true
	}
	if w.rng.IntN(20) == 0 { // a random clock jump
		w.advance(time.Duration(w.rng.IntN(int(3 * time.Minute))))
	}
	p := w.pick(legal(j.State))
	w.ops[string(p.Op)+"/"+string(p.Actor)]++
	w.dueFor(j, p)
	at := w.tick()
	got, events, err := w.perform(j, p, at)
	if err != nil {
		if !store.IsRejection(err) {
			w.t.Fatalf("%s by %s on %s job %s: %v", p.Op, p.Actor, j.State, id, err)
		}
		w.refused++
		return false
	}
	if got.ID != "" && got.Rev != j.Rev+int64(events) {
		w.t.Errorf("%s by %s on %s job %s: rev %d → %d, want +%d", p.Op, p.Actor, j.State, id, j.Rev, got.Rev, events)
	}
	w.accepted += events
	return got.State.Terminal()
}

// pick chooses one of ops, the ones that end a job early (cancels, dead
// letters, deadlines, system halts) less often than the rest, so that most
// paths are long: claims, retries, stalls and requeues.
func (w *walker) pick(ops []opActor) opActor {
	weight := func(p opActor) int {
		switch {
		case p.Op == lifecycle.OpCancel, p.Op == lifecycle.OpCancelHard, p.Op == lifecycle.OpTimeOut,
			p.Op == lifecycle.OpDeadLetter, p.Op == lifecycle.OpHalt && p.Actor == lifecycle.ActorSystem:
			return 1
		}
		return 10
	}
	total := 0
	for _, p := range ops {
		total += weight(p)
	}
	r := w.rng.IntN(total)
	for _, p := range ops {
		if r -= weight(p); r < 0 {
			return p
		}
	}
	return ops[len(ops)-1]
}

// dueFor moves the clock, most of the time, to when the time-bound op p
// becomes due for j (lease expiry, run_at, cancel deadline, timeout,
// deadline), so random paths take those rows too.
func (w *walker) dueFor(j store.Job, p opActor) {
	if w.rng.IntN(5) == 0 {
		return // try it early: the store must refuse it
	}
	var at *time.Time
	switch {
	case p.Op == lifecycle.OpPromote, p.Op == lifecycle.OpUnblock:
		at = &j.RunAt
	case p.Op == lifecycle.OpStall && p.Actor == lifecycle.ActorSystem:
		at = j.LeaseExpiresAt
	case p.Op == lifecycle.OpForceCancel:
		at = j.CancelDeadline
	case p.Op == lifecycle.OpTimeOut:
		at = j.Deadline
		if at == nil {
			at = j.TimeoutAt
		}
	}
	if at != nil && at.After(w.now) {
		w.now = *at
	}
}

// perform sends op p for job j through the store at time at and returns
// the job after it (when the call returns one) and how many events an
// accepted call adds.
func (w *walker) perform(j store.Job, p opActor, at *time.Time) (store.Job, int, error) {
	owner := store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: at}
	maint := func(pass func(store.Store, context.Context, *store.MaintainParams) (int, error)) (store.Job, int, error) {
		n, err := pass(w.s, w.ctx, &store.MaintainParams{Now: at})
		return store.Job{}, n, err
	}
	sys := func(c lifecycle.Command) (store.Job, int, error) {
		c.Actor, c.ActorID = lifecycle.ActorSystem, "walker"
		got, err := w.s.JobApply(w.ctx, &store.JobApplyParams{JobID: j.ID, Command: c, Now: at})
		return got, 1, err
	}
	one := func(got store.Job, err error) (store.Job, int, error) { return got, 1, err }
	switch p.Op {
	case lifecycle.OpPromote:
		if w.rng.IntN(2) == 0 {
			return maint(store.Store.JobPromoteDue)
		}
		return sys(lifecycle.Command{Op: p.Op})
	case lifecycle.OpUnblock:
		return sys(lifecycle.Command{Op: p.Op})
	case lifecycle.OpClaim:
		start := w.rng.IntN(2) == 0
		jobs, err := w.s.JobClaim(w.ctx, &store.JobClaimParams{WorkerID: "walker", Queues: []string{j.Queue}, Limit: 1,
			LeaseTTL: time.Duration(1+w.rng.IntN(10)) * time.Minute, Start: start, Now: at})
		if err != nil || len(jobs) == 0 {
			return store.Job{}, 0, err
		}
		if start {
			return jobs[0], 2, nil
		}
		return jobs[0], 1, nil
	case lifecycle.OpStart:
		return one(w.s.JobStart(w.ctx, &owner))
	case lifecycle.OpHeartbeat:
		return one(w.s.JobHeartbeat(w.ctx, &store.JobHeartbeatParams{OwnerParams: owner, LeaseTTL: 5 * time.Minute}))
	case lifecycle.OpCheckpoint:
		return one(w.s.JobCheckpoint(w.ctx, &store.JobCheckpointParams{OwnerParams: owner, Checkpoint: json.RawMessage(`{"at":1}`), Steps: 1}))
	case lifecycle.OpComplete:
		res, err := w.s.JobComplete(w.ctx, []store.JobCompleteParams{{OwnerParams: owner, Result: json.RawMessage(`{"ok":true}`)}})
		if err != nil {
			return store.Job{}, 0, err
		}
		return res[0].Job, 1, res[0].Err
	case lifecycle.OpFail:
		code := []string{"network", "compile_error", "timeout", "weird"}[w.rng.IntN(4)]
		return one(w.s.JobFail(w.ctx, &store.JobFailParams{OwnerParams: owner, Error: lifecycle.JobError{Code: code, Message: "walk"}}))
	case lifecycle.OpHalt:
		if p.Actor == lifecycle.ActorSystem {
			return sys(lifecycle.Command{Op: p.Op})
		}
		return one(w.s.JobHalt(w.ctx, &store.JobHaltParams{OwnerParams: owner, ReasonCode: "enough"}))
	case lifecycle.OpStall:
		if p.Actor == lifecycle.ActorSystem {
			return maint(store.Store.JobStallExpired)
		}
		if w.rng.IntN(2) == 0 {
			got, err := w.s.JobRelease(w.ctx, &store.JobReleaseParams{OwnerParams: owner, Requeue: true})
			return got, 2, err
		}
		return one(w.s.JobRelease(w.ctx, &store.JobReleaseParams{OwnerParams: owner}))
	case lifecycle.OpRequeue:
		return maint(store.Store.JobRequeueStalled)
	case lifecycle.OpDeadLetter:
		if p.Actor == lifecycle.ActorOwner {
			return one(w.s.JobDeadLetter(w.ctx, &store.JobDeadLetterParams{OwnerParams: owner, ReasonCode: lifecycle.ReasonParseError}))
		}
		return one(w.s.JobDeadLetter(w.ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: j.ID, Now: at}, ReasonCode: lifecycle.ReasonPolicyViolation}))
	case lifecycle.OpCancel, lifecycle.OpCancelHard:
		return one(w.s.JobCancel(w.ctx, &store.JobCancelParams{JobID: j.ID, Hard: p.Op == lifecycle.OpCancelHard, Now: at}))
	case lifecycle.OpAckCancel:
		return one(w.s.JobAckCancel(w.ctx, &owner))
	case lifecycle.OpForceCancel:
		return maint(store.Store.JobForceCancelDue)
	case lifecycle.OpTimeOut:
		if w.rng.IntN(2) == 0 {
			return maint(store.Store.JobTimeOutDue)
		}
		return sys(lifecycle.Command{Op: p.Op, Deadline: j.Deadline != nil && !at.Before(*j.Deadline)})
	case lifecycle.OpStep, lifecycle.OpSuspend, lifecycle.OpWake:
		return w.performStep(j, p, owner, at)
	}
	w.t.Fatalf("the walk has no way to perform %s by %s: add it to walker.perform", p.Op, p.Actor)
	return store.Job{}, 0, nil
}

// maintain runs every maintenance pass once at the current time.
func (w *walker) maintain() {
	w.t.Helper()
	for name, pass := range maintenancePasses {
		n, err := pass(w.s, w.ctx, &store.MaintainParams{Now: w.tick()})
		if err != nil {
			w.t.Fatalf("maintenance pass %s: %v", name, err)
		}
		w.accepted += n
	}
}
