package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testDifferential drives random sequences of the hot path's commands
// (enqueue, claim with and without start, start, complete in batches, fail,
// heartbeat, promote) through the store and, beside it, through
// lifecycle.Apply on a model of every job, and requires the same rows and
// the same events after every step. A driver's one-statement claim or
// batch completion must write exactly what lifecycle decides.
func testDifferential(t *testing.T, newStore func(*testing.T) store.Store) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			d := &differential{h: newHarness(t, newStore), rnd: rand.New(rand.NewPCG(seed, 18)),
				jobs: map[string]lifecycle.Job{}, events: map[string][]lifecycle.Event{}}
			d.queue = d.h.name("diff")
			for step := range 60 {
				d.step(step)
				d.compare(step)
			}
		})
	}
}

// differential is the store under test and the model beside it.
type differential struct {
	h      *harness
	rnd    *rand.Rand
	queue  string
	ids    []string
	jobs   map[string]lifecycle.Job
	events map[string][]lifecycle.Event
	reqs   int
}

const diffWorker = "diff-worker"

func (d *differential) step(step int) {
	switch n := d.rnd.IntN(10); {
	case n < 2 || len(d.ids) == 0:
		d.enqueue()
	case n < 5:
		d.claim()
	case n < 6:
		d.owner(lifecycle.OpStart, lifecycle.Claimed)
	case n < 8:
		d.complete()
	case n < 9:
		d.owner(lifecycle.OpFail, lifecycle.Running)
	default:
		d.h.advance(time.Hour) // past any retry's backoff
		d.promote()
	}
}

// apply runs cmd on the model's job id at at and records the event.
func (d *differential) apply(id string, c lifecycle.Command, at time.Time) {
	d.h.t.Helper()
	j := d.jobs[id]
	if at.Before(j.UpdatedAt) {
		at = j.UpdatedAt
	}
	s, err := lifecycle.Apply(j, c, at)
	if err != nil {
		d.h.t.Fatalf("model: %s of job %s in %s: %v", c.Op, id, j.State, err)
	}
	if s.Event != nil {
		d.jobs[id] = s.Job
		d.events[id] = append(d.events[id], *s.Event)
	}
}

func (d *differential) enqueue() {
	at := d.h.tick()
	var specs []lifecycle.Spec
	for range 1 + d.rnd.IntN(3) {
		s := lifecycle.Spec{Kind: "diff", Queue: d.queue, Priority: d.rnd.IntN(3), MaxAttempts: 1 + d.rnd.IntN(3),
			Payload: json.RawMessage(`{"n":1}`)}
		if d.rnd.IntN(2) == 0 {
			s.Timeout = time.Minute + time.Duration(d.rnd.IntN(1000))*time.Nanosecond
		}
		specs = append(specs, s)
	}
	res, err := d.h.s.JobEnqueue(d.h.ctx, &store.JobEnqueueParams{Jobs: specs, ActorID: "producer", Now: at})
	d.h.ok("enqueue", err)
	for _, r := range res {
		// Enqueue is not under test: the model starts from what it wrote.
		evs, err := d.h.s.JobEvents(d.h.ctx, r.Job.ID)
		d.h.ok("events", err)
		d.ids = append(d.ids, r.Job.ID)
		d.jobs[r.Job.ID], d.events[r.Job.ID] = r.Job, evs
	}
}

func (d *differential) claim() {
	at := d.h.tick()
	limit, start := 1+d.rnd.IntN(4), d.rnd.IntN(3) > 0
	p := &store.JobClaimParams{WorkerID: diffWorker, Queues: []string{d.queue}, Limit: limit,
		LeaseTTL: 48*time.Hour + time.Duration(d.rnd.IntN(1000))*time.Nanosecond, Start: start, Now: at}
	if d.rnd.IntN(2) == 0 {
		d.reqs++
		p.RequestID = fmt.Sprintf("claim-%d", d.reqs)
	}
	got, err := d.h.s.JobClaim(d.h.ctx, p)
	d.h.ok("claim", err)
	// The model's claimable jobs, in claim order: the claim takes the first.
	var want []lifecycle.Job
	for _, id := range d.ids {
		if j := d.jobs[id]; j.State == lifecycle.Queued && j.Failures < j.MaxAttempts {
			want = append(want, j)
		}
	}
	slices.SortFunc(want, func(a, b lifecycle.Job) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	want = want[:min(limit, len(want))]
	if len(got) != len(want) {
		d.h.t.Fatalf("claim of %d took %d jobs, want %d", limit, len(got), len(want))
	}
	for i, g := range got {
		if g.ID != want[i].ID {
			d.h.t.Fatalf("claim took %s as job %d, want %s", g.ID, i, want[i].ID)
		}
		c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: diffWorker, LeaseID: g.LeaseID, LeaseTTL: p.LeaseTTL, RequestID: p.RequestID}
		d.apply(g.ID, c, *at)
		if start {
			c.Op, c.RequestID = lifecycle.OpStart, ""
			d.apply(g.ID, c, *at)
		}
		if !sameJob(g, d.jobs[g.ID]) {
			d.h.t.Fatalf("claim returned\n%s\nlifecycle says\n%s", asJSON(g), asJSON(d.jobs[g.ID]))
		}
	}
}

// leased picks up to n model jobs in one of states, at random.
func (d *differential) leased(n int, states ...lifecycle.State) []lifecycle.Job {
	var out []lifecycle.Job
	for _, i := range d.rnd.Perm(len(d.ids)) {
		if j := d.jobs[d.ids[i]]; slices.Contains(states, j.State) && len(out) < n {
			out = append(out, j)
		}
	}
	return out
}

// owner runs one owner command (start, fail) on a leased job, if any.
func (d *differential) owner(op lifecycle.Op, states ...lifecycle.State) {
	js := d.leased(1, states...)
	if len(js) == 0 {
		return
	}
	j, at := js[0], d.h.tick()
	own := store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: at}
	c := lifecycle.Command{Op: op, Actor: lifecycle.ActorOwner, LeaseID: j.LeaseID}
	var err error
	switch op {
	case lifecycle.OpStart:
		_, err = d.h.s.JobStart(d.h.ctx, &own)
	case lifecycle.OpFail:
		e := lifecycle.JobError{Code: "boom", Message: "it broke"}
		if d.rnd.IntN(4) == 0 {
			e.Class = lifecycle.ClassPermanent
		}
		c.Error, c.ExecutionMS = &e, int64(d.rnd.IntN(100))
		_, err = d.h.s.JobFail(d.h.ctx, &store.JobFailParams{OwnerParams: own, Error: e, ExecutionMS: c.ExecutionMS})
	}
	d.h.ok(string(op), err)
	d.apply(j.ID, c, *at)
}

// complete completes a batch of leased jobs; with a stale lease among them
// now and then, which the store rejects on its own.
func (d *differential) complete() {
	js := d.leased(1+d.rnd.IntN(4), lifecycle.Running)
	if len(js) == 0 {
		return
	}
	at := d.h.tick()
	ps := make([]store.JobCompleteParams, len(js))
	for i, j := range js {
		ps[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: at},
			Result: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i)), ExecutionMS: int64(i)}
		// The owner's record, now and then an older one (a renewal it
		// missed, a lease it thinks expired): the store must judge the row.
		switch held := j; d.rnd.IntN(4) {
		case 0:
		case 1:
			held.Rev--
			ps[i].Held = &held
		case 2:
			past := at.Add(-time.Minute)
			held.LeaseExpiresAt = &past
			ps[i].Held = &held
		default:
			ps[i].Held = &held
		}
	}
	stale := d.rnd.IntN(5) == 0
	if stale {
		ps[0].LeaseID = "not-the-lease"
	}
	res, err := d.h.s.JobComplete(d.h.ctx, ps)
	d.h.ok("complete", err)
	for i, j := range js {
		if i == 0 && stale {
			if res[i].Err == nil {
				d.h.t.Fatalf("complete with a stale lease of job %s was accepted", j.ID)
			}
			continue
		}
		if res[i].Err != nil {
			d.h.t.Fatalf("complete of job %s: %v", j.ID, res[i].Err)
		}
		d.apply(j.ID, lifecycle.Command{Op: lifecycle.OpComplete, Actor: lifecycle.ActorOwner, LeaseID: j.LeaseID,
			Result: ps[i].Result, ExecutionMS: ps[i].ExecutionMS}, *at)
	}
}

func (d *differential) promote() {
	at := d.h.tick()
	_, err := d.h.s.JobPromoteDue(d.h.ctx, &store.MaintainParams{Now: at})
	d.h.ok("promote", err)
	for _, id := range d.ids {
		if j := d.jobs[id]; (j.State == lifecycle.Retrying || j.State == lifecycle.Scheduled) && !j.RunAt.After(*at) {
			d.apply(id, lifecycle.Command{Op: lifecycle.OpPromote, Actor: lifecycle.ActorSystem, ActorID: "stint"}, *at)
		}
	}
}

// compare requires every job's row and events to be the model's.
func (d *differential) compare(step int) {
	d.h.t.Helper()
	for _, id := range d.ids {
		got := d.h.get(id)
		if want := d.jobs[id]; !sameJob(got, want) {
			d.h.t.Fatalf("step %d: job %s is\n%s\nlifecycle says\n%s", step, id, asJSON(got), asJSON(want))
		}
		evs, err := d.h.s.JobEvents(d.h.ctx, id)
		d.h.ok("events", err)
		want := d.events[id]
		if len(evs) != len(want) {
			d.h.t.Fatalf("step %d: job %s has %d events, lifecycle says %d:\n%s\n%s", step, id, len(evs), len(want), asJSON(evs), asJSON(want))
		}
		for i := range evs {
			e := evs[i]
			e.ID = want[i].ID
			if asJSON(e) != asJSON(want[i]) {
				d.h.t.Fatalf("step %d: event %d of job %s is\n%s\nlifecycle says\n%s", step, i, id, asJSON(e), asJSON(want[i]))
			}
		}
	}
}
