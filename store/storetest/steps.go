package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testSteps covers durable steps (store/step.go) on every backend: records
// fenced by the lease and ordered, the size limit, suspend and wake without
// spending an attempt, signals (first one wins, kept when early), child
// jobs waking their parent, retention, and a clean verify after it all.
func testSteps(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, h *stepHarness)
	}{
		{"record_and_list", testStepRecord},
		{"stale_lease_refused", testStepStale},
		{"order", testStepOrder},
		{"size_limit", testStepSize},
		{"suspend_spends_no_attempt", testStepSuspend},
		{"signals", testStepSignals},
		{"child_wakes_parent", testStepChild},
		{"child_step", testStepChildStart},
		{"retain", testStepRetain},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			ss, err := store.Steps(h.s)
			if err != nil {
				t.Fatalf("store.Steps: %v", err)
			}
			c.fn(t, &stepHarness{harness: h, ss: ss})
			verifyClean(t, h)
		})
	}
}

type stepHarness struct {
	*harness
	ss store.StepStore
}

func (h *stepHarness) record(f fixture, seq int, name, output string) (store.Job, store.StepRecord, error) {
	return h.ss.JobStepRecord(h.ctx, &store.JobStepParams{OwnerParams: h.own(f), Seq: seq, Name: name,
		Status: store.StepOK, Output: json.RawMessage(output), DurationMS: 3})
}

func (h *stepHarness) steps(id string) []store.StepRecord {
	h.t.Helper()
	recs, err := h.ss.JobSteps(h.ctx, id)
	h.ok("steps", err)
	return recs
}

func verifyClean(t *testing.T, h *harness) {
	t.Helper()
	rep, err := h.s.Verify(h.ctx, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(rep.Findings) > 0 {
		t.Fatalf("verify found %v", rep.Findings)
	}
}

func testStepRecord(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	before := h.snap(f.ID)
	outs := []string{`{"b":1,"a":2}`, `"two"`, `[3]`}
	for i, out := range outs {
		at := h.now.Add(time.Second)
		j, rec, err := h.record(f, i+1, fmt.Sprintf("s%d", i+1), out)
		h.ok("record", err)
		if j.Rev != before.Job.Rev+int64(i)+1 || j.State != lifecycle.Running {
			t.Fatalf("step %d: job rev %d state %s", i+1, j.Rev, j.State)
		}
		if rec.Attempt != 1 || rec.LeaseID != f.Lease || !rec.RecordedAt.Equal(at) || string(rec.Output) != out {
			t.Fatalf("step %d: record %+v", i+1, rec)
		}
	}
	recs := h.steps(f.ID)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, r := range recs {
		if r.Seq != i+1 || string(r.Output) != outs[i] || r.Kind != store.StepRun || r.Status != store.StepOK || r.DurationMS != 3 {
			t.Errorf("record %d: %s (outputs are kept byte for byte)", i, asJSON(r))
		}
	}
	after := h.snap(f.ID)
	evs := after.Events[len(before.Events):]
	for i, ev := range evs {
		d, ok := lifecycle.StepOf(ev)
		if !ok || d.Seq != i+1 || d.Name != recs[i].Name || ev.LeaseID != f.Lease {
			t.Errorf("event %d: %s", i, asJSON(ev))
		}
	}
	if after.Job.Usage.Steps != 3 {
		t.Errorf("usage steps %d, want 3", after.Job.Usage.Steps)
	}
}

func testStepStale(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	_, _, err := h.record(f, 1, "charge", `{"ok":1}`)
	h.ok("record", err)
	stale := f
	h.release(f)
	h.system(f, lifecycle.Command{Op: lifecycle.OpRequeue})
	h.claim(&f)
	h.start(f)
	before := h.snap(f.ID)
	_, _, err = h.record(stale, 2, "ship", `{}`)
	rejected(t, err, store.ErrStaleLease)
	h.unchanged(before)
	if n := len(h.steps(f.ID)); n != 1 {
		t.Fatalf("%d records after a stale step, want 1", n)
	}
	// The new lease goes on from the recorded step.
	_, rec, err := h.record(f, 2, "ship", `{}`)
	h.ok("record by the new lease", err)
	if rec.Attempt != 2 || rec.LeaseID != f.Lease {
		t.Errorf("record %+v, want attempt 2 with the new lease", rec)
	}
}

func testStepOrder(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	_, first, err := h.record(f, 1, "a", `1`)
	h.ok("record", err)
	before := h.snap(f.ID)
	_, _, err = h.record(f, 3, "c", `3`)
	rejected(t, err, store.ErrValidation)
	_, _, err = h.record(f, 1, "other", `1`)
	rejected(t, err, store.ErrStepConflict)
	_, again, err := h.record(f, 1, "a", `1`)
	h.ok("the same step again", err)
	if asJSON(again) != asJSON(first) {
		t.Errorf("a repeated step returned %s, want %s", asJSON(again), asJSON(first))
	}
	_, _, err = h.ss.JobStepRecord(h.ctx, &store.JobStepParams{OwnerParams: h.own(f), Seq: 2, Name: "b", Status: "maybe"})
	rejected(t, err, store.ErrValidation)
	h.unchanged(before)
	_, err = h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: lifecycle.Command{Op: lifecycle.OpStep, Actor: lifecycle.ActorOwner,
		LeaseID: f.Lease, StepSeq: 2, StepName: "b"}, Now: h.tick()})
	rejected(t, err, store.ErrValidation)
	h.unchanged(before)

	// A request id is one request: repeated with the same step it returns
	// the record; used again for another step it is refused.
	byRequest := func(seq int, name string) (store.StepRecord, error) {
		o := h.own(f)
		o.RequestID = "req-b"
		_, rec, err := h.ss.JobStepRecord(h.ctx, &store.JobStepParams{OwnerParams: o, Seq: seq, Name: name, Status: store.StepOK, Output: json.RawMessage(`2`)})
		return rec, err
	}
	b, err := byRequest(2, "b")
	h.ok("record b", err)
	again, err = byRequest(2, "b")
	h.ok("record b again", err)
	if asJSON(again) != asJSON(b) {
		t.Errorf("a retried request returned %s, want %s", asJSON(again), asJSON(b))
	}
	before = h.snap(f.ID)
	_, err = byRequest(3, "c")
	rejected(t, err, store.ErrRequestConflict)
	h.unchanged(before)
}

func testStepSize(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	before := h.snap(f.ID)
	big := `"` + strings.Repeat("x", store.MaxStepBytes) + `"`
	_, _, err := h.record(f, 1, "big", big)
	rejected(t, err, store.ErrValidation)
	if !errors.Is(err, store.ErrStepTooLarge) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("err %v: want ErrStepTooLarge saying the limit", err)
	}
	_, _, err = h.record(f, 1, "bad", `{"unclosed":`)
	rejected(t, err, store.ErrValidation)
	h.unchanged(before)
	if n := len(h.steps(f.ID)); n != 0 {
		t.Fatalf("%d records, want none", n)
	}
}

func testStepSuspend(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running, maxAttempts(1))
	for round := range 3 {
		at := h.now.Add(time.Second)
		j, err := h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Minute, Wait: store.WaitSleep})
		h.ok("suspend", err)
		if j.State != lifecycle.Scheduled || !j.RunAt.Equal(at.Add(time.Minute)) || j.LeaseID != "" {
			t.Fatalf("round %d: after suspend %s run_at %s lease %q", round, j.State, j.RunAt, j.LeaseID)
		}
		// The same suspend again (a lost reply) is a no-op.
		again, err := h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Minute, Wait: store.WaitSleep})
		h.ok("suspend again", err)
		if again.Rev != j.Rev {
			t.Errorf("a repeated suspend moved rev %d → %d", j.Rev, again.Rev)
		}
		if n, err := h.s.JobPromoteDue(h.ctx, &store.MaintainParams{Now: h.tick()}); err != nil || n != 0 {
			t.Fatalf("promote before the wake time: %d, %v", n, err)
		}
		h.advance(time.Minute)
		if n, err := h.s.JobPromoteDue(h.ctx, &store.MaintainParams{Now: h.tick()}); err != nil || n != 1 {
			t.Fatalf("promote at the wake time: %d, %v", n, err)
		}
		h.claim(&f)
		h.start(f)
	}
	j := h.get(f.ID)
	if j.Attempt != 4 || j.Failures != 0 || j.ReasonCode != "" {
		t.Fatalf("attempt %d failures %d reason %q; want 4, 0 and none (max_attempts is 1)", j.Attempt, j.Failures, j.ReasonCode)
	}
}

func testStepSignals(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	// Sent before the wait: kept, and the wait is over before it starts.
	sig, err := h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "early", Payload: json.RawMessage(`{"n":1}`), Now: h.tick()})
	h.ok("signal", err)
	before := h.snap(f.ID)
	_, err = h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitSignal("early")})
	rejected(t, err, store.ErrWaitOver)
	h.unchanged(before)
	got, ok, err := h.ss.JobSignalGet(h.ctx, f.ID, "early")
	if err != nil || !ok || asJSON(got) != asJSON(sig) {
		t.Fatalf("signal get: %s %v %v", asJSON(got), ok, err)
	}
	// Sent during the wait: wakes the job; a second one is refused.
	_, err = h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitSignal("approve")})
	h.ok("suspend", err)
	at := h.now.Add(time.Second)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "approve", Payload: json.RawMessage(`true`), ActorID: "alice", Now: h.tick()})
	h.ok("signal", err)
	j := h.get(f.ID)
	if j.State != lifecycle.Queued || !j.RunAt.Equal(at) {
		t.Fatalf("after the signal the job is %s due %s, want queued now", j.State, j.RunAt)
	}
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "approve", Payload: json.RawMessage(`false`), Now: h.tick()})
	rejected(t, err, store.ErrSignalTaken)
	if s, _, _ := h.ss.JobSignalGet(h.ctx, f.ID, "approve"); string(s.Payload) != "true" || s.ActorID != "alice" {
		t.Errorf("the kept signal is %s; the first one wins", asJSON(s))
	}
	// A signal of another name does not wake a waiting job.
	h.claim(&f)
	h.start(f)
	_, err = h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitSignal("other")})
	h.ok("suspend", err)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "unrelated", Now: h.tick()})
	h.ok("signal", err)
	h.must(f.ID, lifecycle.Scheduled)
	if sigs, err := h.ss.JobSignals(h.ctx, f.ID); err != nil || len(sigs) != 3 {
		t.Errorf("%d signals (%v), want 3", len(sigs), err)
	}
	done := h.build(lifecycle.Succeeded)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: done.ID, Name: "late", Now: h.tick()})
	rejected(t, err, store.ErrInvalidTransition)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: "no-such-job", Name: "x", Now: h.tick()})
	rejected(t, err, store.ErrNotFound)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "bad", Payload: json.RawMessage(`{`), Now: h.tick()})
	rejected(t, err, store.ErrValidation)
}

func testStepChild(t *testing.T, h *stepHarness) {
	parent := h.build(lifecycle.Running)
	child := h.enqueue(func(s *lifecycle.Spec, _ time.Time) { s.ParentJobID = parent.ID })
	_, err := h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(parent), For: time.Hour, Wait: store.WaitChild(child.ID)})
	h.ok("suspend", err)
	h.claim(&child)
	h.start(child)
	h.complete(child)
	h.must(parent.ID, lifecycle.Queued)
	// A wait for a child that already ended is over at once.
	h.claim(&parent)
	h.start(parent)
	_, err = h.ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(parent), For: time.Hour, Wait: store.WaitChild(child.ID)})
	rejected(t, err, store.ErrWaitOver)
}

func testStepRetain(t *testing.T, h *stepHarness) {
	f := h.build(lifecycle.Running)
	_, _, err := h.record(f, 1, "a", `1`)
	h.ok("record", err)
	_, err = h.ss.JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "s", Now: h.tick()})
	h.ok("signal", err)
	h.complete(f)
	h.advance(time.Hour)
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: h.now})
	if err != nil || res.Jobs != 1 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	if n := len(h.steps(f.ID)); n != 0 {
		t.Errorf("%d step records left after retention", n)
	}
	if sigs, err := h.ss.JobSignals(h.ctx, f.ID); err != nil || len(sigs) != 0 {
		t.Errorf("%d signals left after retention (%v)", len(sigs), err)
	}
}

// stepRecipes take the table's step, suspend and wake rows (transitions.go).
func stepRecipes(e lifecycle.Edge, a lifecycle.Actor) []recipe {
	ss := func(h *harness) store.StepStore {
		s, err := store.Steps(h.s)
		h.ok("store.Steps", err)
		return s
	}
	switch e.Op {
	case lifecycle.OpStep:
		return []recipe{{name: "record", call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
			j, _, err := ss(h).JobStepRecord(h.ctx, &store.JobStepParams{OwnerParams: ownerAt(f, at), Seq: 1, Name: "charge", Status: store.StepOK, Output: json.RawMessage(`{"id":"ch_1"}`)})
			return j, err
		}}}
	case lifecycle.OpSuspend:
		return []recipe{{name: "sleep",
			cmd: with(own(lifecycle.OpSuspend), func(c *lifecycle.Command) { c.WakeAt, c.Reason = ptrTime(epoch.Add(48*time.Hour)), store.WaitSleep }),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				return ss(h).JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: ownerAt(f, at), For: time.Hour, Wait: store.WaitSleep})
			}}}
	case lifecycle.OpWake:
		if a == lifecycle.ActorClient {
			return []recipe{{name: "signal", from: suspendedFor("approve"),
				cmd: func(fixture) lifecycle.Command {
					return lifecycle.Command{Op: lifecycle.OpWake, Actor: lifecycle.ActorClient, ActorID: "operator"}
				},
				call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
					_, err := ss(h).JobSignal(h.ctx, &store.JobSignalParams{JobID: f.ID, Name: "approve", Now: at})
					return store.Job{}, err
				}}}
		}
		return []recipe{{name: "child_ended", from: suspendedOnChild, cmd: sys(lifecycle.OpWake),
			call: func(h *harness, f fixture, at *time.Time) (store.Job, error) {
				c, _ := children.Load(f.ID)
				child := c.(fixture)
				res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt(child, at), Result: json.RawMessage(`1`)}})
				if err == nil {
					err = res[0].Err
				}
				return store.Job{}, err
			}}}
	}
	return nil
}

// children holds the running child of each parent suspendedOnChild built.
var children sync.Map

func suspendedFor(signal string) func(h *harness, opts ...specOpt) fixture {
	return func(h *harness, opts ...specOpt) fixture {
		f := h.build(lifecycle.Running, opts...)
		ss, err := store.Steps(h.s)
		h.ok("store.Steps", err)
		_, err = ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitSignal(signal)})
		h.ok("suspend", err)
		return f
	}
}

func suspendedOnChild(h *harness, opts ...specOpt) fixture {
	f := h.build(lifecycle.Running, opts...)
	child := h.enqueue(func(s *lifecycle.Spec, _ time.Time) { s.ParentJobID = f.ID })
	h.claim(&child)
	h.start(child)
	ss, err := store.Steps(h.s)
	h.ok("store.Steps", err)
	_, err = ss.JobSuspend(h.ctx, &store.JobSuspendParams{OwnerParams: h.own(f), For: time.Hour, Wait: store.WaitChild(child.ID)})
	h.ok("suspend", err)
	children.Store(f.ID, child)
	return f
}

func ptrTime(t time.Time) *time.Time { return &t }

// performStep takes the walk through a step, a suspend or a wake.
func (w *walker) performStep(j store.Job, p opActor, owner store.OwnerParams, at *time.Time) (store.Job, int, error) {
	ss, err := store.Steps(w.s)
	if err != nil {
		w.t.Fatalf("store.Steps: %v", err)
	}
	switch p.Op {
	case lifecycle.OpStep:
		recs, err := ss.JobSteps(w.ctx, j.ID)
		if err != nil {
			return store.Job{}, 0, err
		}
		got, _, err := ss.JobStepRecord(w.ctx, &store.JobStepParams{OwnerParams: owner, Seq: len(recs) + 1, Name: "walk", Status: store.StepOK, Output: json.RawMessage(`1`)})
		return got, 1, err
	case lifecycle.OpSuspend:
		got, err := ss.JobSuspend(w.ctx, &store.JobSuspendParams{OwnerParams: owner, For: time.Duration(w.rng.IntN(600)) * time.Second, Wait: store.WaitSleep})
		return got, 1, err
	}
	got, err := w.s.JobApply(w.ctx, &store.JobApplyParams{JobID: j.ID, Command: lifecycle.Command{Op: p.Op, Actor: p.Actor, ActorID: "walker"}, Now: at})
	return got, 1, err
}
