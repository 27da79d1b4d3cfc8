package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// childStep starts a child in queue as step seq of f, by f's lease.
func (h *stepHarness) childStep(f fixture, seq int, queue string, edit ...func(*lifecycle.Spec)) (store.ChildStep, error) {
	spec := lifecycle.Spec{Kind: "kid", Queue: queue, Payload: json.RawMessage(`{"n":20}`)}
	for _, e := range edit {
		e(&spec)
	}
	return h.ss.JobStepChild(h.ctx, &store.JobStepChildParams{OwnerParams: h.own(f), Seq: seq, Name: "kid", Spec: spec})
}

// jobsIn counts the jobs of a queue.
func (h *stepHarness) jobsIn(queue string) int {
	h.t.Helper()
	jobs, err := h.s.JobList(h.ctx, &store.JobListParams{Queue: queue})
	h.ok("list", err)
	return len(jobs)
}

// testStepChildStart: JobStepChild enqueues the child and records the step
// naming it in one transaction fenced by the parent's lease. A retry by the
// same lease returns the same child and record; a stale lease, a spec that
// names another parent, and a step out of order change nothing; the child's
// end wakes its parent; the step replays after the wake.
func testStepChildStart(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running, func(s *lifecycle.Spec, _ time.Time) { s.CorrelationID = "order-7" })
	queue := h.name("kids")
	before := h.snap(f.ID)
	at := h.now.Add(time.Second)
	got, err := h.childStep(f, 1, queue)
	h.ok("child step", err)
	c := got.Child
	if c.ParentJobID != f.ID || c.StepIndex != 1 || c.CorrelationID != "order-7" || c.State != lifecycle.Queued || !c.CreatedAt.Equal(at) {
		t.Fatalf("child %s: want queued, parent %s, step_index 1, correlation order-7, created %s", asJSON(c), f.ID, at)
	}
	if id, err := store.ChildOf(got.Step); err != nil || id != c.ID || got.Step.Kind != store.StepChild || got.Step.LeaseID != f.Lease {
		t.Fatalf("step %s (%v): want a child step naming %s by lease %s", asJSON(got.Step), err, c.ID, f.Lease)
	}
	if got.Parent.Rev != before.Job.Rev+1 || got.Parent.Usage.Steps != 1 {
		t.Fatalf("parent rev %d steps %d after the step: want %d and 1", got.Parent.Rev, got.Parent.Usage.Steps, before.Job.Rev+1)
	}
	evs := h.snap(f.ID).Events[len(before.Events):]
	if d, ok := lifecycle.StepOf(evs[0]); len(evs) != 1 || !ok || d.Seq != 1 || d.Name != "kid" {
		t.Fatalf("parent's events after the step: %s", asJSON(evs))
	}
	if recs := h.steps(f.ID); len(recs) != 1 || asJSON(recs[0]) != asJSON(got.Step) {
		t.Fatalf("records %s, want the child step", asJSON(recs))
	}

	// A retry by the same lease (a lost reply): the same child and record.
	mid := h.snap(f.ID)
	again, err := h.childStep(f, 1, queue)
	h.ok("child step again", err)
	if again.Child.ID != c.ID || asJSON(again.Step) != asJSON(got.Step) {
		t.Fatalf("a retry returned child %s step %s; want %s and %s", again.Child.ID, asJSON(again.Step), c.ID, asJSON(got.Step))
	}
	h.unchanged(mid)
	if n := h.jobsIn(queue); n != 1 {
		t.Fatalf("%d children after a retry, want 1", n)
	}

	// Refused, writing nothing: out of order, a spec naming another parent
	// or tenant, a bad spec.
	_, err = h.childStep(f, 3, queue)
	rejected(t, err, store.ErrValidation)
	_, err = h.childStep(f, 2, queue, func(s *lifecycle.Spec) { s.ParentJobID = "someone-else" })
	rejected(t, err, store.ErrValidation)
	_, err = h.childStep(f, 2, queue, func(s *lifecycle.Spec) { s.Tenant = "other" })
	rejected(t, err, store.ErrValidation)
	_, err = h.childStep(f, 2, queue, func(s *lifecycle.Spec) { s.Kind = "" })
	rejected(t, err, store.ErrValidation)
	h.unchanged(mid)
	if n := h.jobsIn(queue); n != 1 {
		t.Fatalf("%d children after refused steps, want 1", n)
	}

	// The parent awaits the child, which ends and wakes it; the new
	// attempt's replay of step 1 by its own lease is a conflict (the
	// engine replays from the record instead), and it goes on at step 2.
	_, err = h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitChild(c.ID)})
	h.ok("suspend", err)
	stale := f
	kid := fixture{ID: c.ID, Queue: queue}
	h.claim(&kid)
	h.start(kid)
	h.complete(kid)
	h.must(f.ID, lifecycle.Queued)
	h.claim(&f)
	h.start(f)
	_, err = h.childStep(f, 1, queue)
	rejected(t, err, store.ErrStepConflict)

	// A stale lease's child step is refused and writes nothing.
	mid = h.snap(f.ID)
	_, err = h.childStep(stale, 2, queue)
	rejected(t, err, store.ErrStaleLease)
	h.unchanged(mid)
	if n := h.jobsIn(queue); n != 1 {
		t.Fatalf("%d children after a stale step, want 1", n)
	}
	second, err := h.childStep(f, 2, queue)
	h.ok("child step by the new lease", err)
	if second.Child.ID == c.ID || second.Child.StepIndex != 2 || second.Step.Attempt != 2 {
		t.Fatalf("second child %s step %s: want a new child at step 2 by attempt 2", asJSON(second.Child), asJSON(second.Step))
	}
}
