package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// recipe says how to take one row of the table: the job options the row
// needs, the command and the time to apply it at.
type recipe struct {
	spec func(*lifecycle.Spec)
	cmd  func(w *world, actor lifecycle.Actor) lifecycle.Command
	at   func(w *world, actor lifecycle.Actor) time.Time // nil: a second after the last step
	// reach builds the job instead of reaching the row's From state plainly.
	reach func(t fataler, spec lifecycle.Spec) *world
}

type rowKey struct {
	op lifecycle.Op
	to lifecycle.State
}

// ownerLease is the lease an owner presents: the live one, else the last one.
func ownerLease(j lifecycle.Job) string {
	switch {
	case j.LeaseID != "":
		return j.LeaseID
	case j.LastLeaseID != "":
		return j.LastLeaseID
	}
	return "lease-never-issued"
}

func byActor(actor lifecycle.Actor, j lifecycle.Job, op lifecycle.Op) lifecycle.Command {
	switch actor {
	case lifecycle.ActorOwner:
		return ownerCmd(op, ownerLease(j))
	case lifecycle.ActorSystem:
		return systemCmd(op)
	}
	return clientCmd(op)
}

func plain(op lifecycle.Op) func(*world, lifecycle.Actor) lifecycle.Command {
	return func(w *world, a lifecycle.Actor) lifecycle.Command { return byActor(a, w.job, op) }
}

func failWith(code string, class lifecycle.ErrorClass) func(*world, lifecycle.Actor) lifecycle.Command {
	return func(w *world, _ lifecycle.Actor) lifecycle.Command { return failCmd(ownerLease(w.job), code, class) }
}

func oneAttempt(s *lifecycle.Spec)   { s.MaxAttempts = 1 }
func withDeadline(s *lifecycle.Spec) { s.Deadline = ptr(t0.Add(time.Hour)) }
func withTimeout(s *lifecycle.Spec)  { s.Timeout = 5 * time.Minute }

func atDeadline(w *world, _ lifecycle.Actor) time.Time { return *w.job.Deadline }

// recipes covers every (op, to) of the table except enqueue, which New takes.
var recipes = map[rowKey]recipe{
	{lifecycle.OpPromote, lifecycle.Queued}: {
		cmd: plain(lifecycle.OpPromote),
		at:  func(w *world, _ lifecycle.Actor) time.Time { return later(w.now.Add(time.Second), w.job.RunAt) },
	},
	{lifecycle.OpUnblock, lifecycle.Queued}: {cmd: plain(lifecycle.OpUnblock)},
	{lifecycle.OpClaim, lifecycle.Claimed}: {
		cmd: func(*world, lifecycle.Actor) lifecycle.Command { return claimCmd("lease-fresh") },
	},
	{lifecycle.OpStart, lifecycle.Running}:             {cmd: plain(lifecycle.OpStart)},
	{lifecycle.OpHeartbeat, lifecycle.Claimed}:         {cmd: plain(lifecycle.OpHeartbeat)},
	{lifecycle.OpHeartbeat, lifecycle.Running}:         {cmd: plain(lifecycle.OpHeartbeat)},
	{lifecycle.OpHeartbeat, lifecycle.CancelRequested}: {cmd: plain(lifecycle.OpHeartbeat)},
	{lifecycle.OpCheckpoint, lifecycle.Running}: {
		cmd: func(w *world, a lifecycle.Actor) lifecycle.Command {
			c := byActor(a, w.job, lifecycle.OpCheckpoint)
			c.Checkpoint = json.RawMessage(`{"cursor":7}`)
			c.UsageDelta = lifecycle.Usage{Steps: 1, Cost: 2}
			return c
		},
	},
	{lifecycle.OpComplete, lifecycle.Succeeded}: {
		cmd: func(w *world, _ lifecycle.Actor) lifecycle.Command { return completeCmd(ownerLease(w.job)) },
	},
	{lifecycle.OpFail, lifecycle.Retrying}:     {cmd: failWith("network", lifecycle.ClassTransient)},
	{lifecycle.OpFail, lifecycle.Failed}:       {cmd: failWith("compile_error", lifecycle.ClassPermanent)},
	{lifecycle.OpFail, lifecycle.DeadLettered}: {spec: oneAttempt, cmd: failWith("network", lifecycle.ClassTransient)},
	{lifecycle.OpFail, lifecycle.TimedOut}:     {spec: oneAttempt, cmd: failWith("timeout", lifecycle.ClassTimeout)},
	{lifecycle.OpHalt, lifecycle.Halted}:       {cmd: plain(lifecycle.OpHalt)},
	{lifecycle.OpStall, lifecycle.Stalled}: {
		cmd: plain(lifecycle.OpStall),
		at: func(w *world, a lifecycle.Actor) time.Time {
			if a == lifecycle.ActorSystem {
				return *w.job.LeaseExpiresAt // the reaper stalls a job when its lease expires
			}
			return w.now.Add(time.Second)
		},
	},
	{lifecycle.OpRequeue, lifecycle.Queued}:       {cmd: plain(lifecycle.OpRequeue)},
	{lifecycle.OpRequeue, lifecycle.DeadLettered}: {spec: oneAttempt, cmd: plain(lifecycle.OpRequeue)},
	{lifecycle.OpDeadLetter, lifecycle.DeadLettered}: {
		cmd: func(w *world, a lifecycle.Actor) lifecycle.Command {
			c := deadLetterCmd(a, "")
			if a == lifecycle.ActorOwner {
				c.LeaseID, c.ActorID = ownerLease(w.job), worker
			}
			return c
		},
	},
	{lifecycle.OpCancel, lifecycle.Cancelled}:       {cmd: plain(lifecycle.OpCancel)},
	{lifecycle.OpCancel, lifecycle.CancelRequested}: {cmd: plain(lifecycle.OpCancel)},
	{lifecycle.OpCancelHard, lifecycle.Cancelled}:   {cmd: plain(lifecycle.OpCancelHard)},
	{lifecycle.OpAckCancel, lifecycle.Cancelled}:    {cmd: plain(lifecycle.OpAckCancel)},
	{lifecycle.OpForceCancel, lifecycle.Cancelled}: {
		cmd: plain(lifecycle.OpForceCancel),
		at:  func(w *world, _ lifecycle.Actor) time.Time { return *w.job.CancelDeadline },
	},
	{lifecycle.OpStep, lifecycle.Running}:      {cmd: stepCmdOf(1, "charge")},
	{lifecycle.OpSuspend, lifecycle.Scheduled}: {cmd: suspendCmdOf(time.Hour)},
	{lifecycle.OpWake, lifecycle.Queued}:       {cmd: plain(lifecycle.OpWake), reach: reachSuspended},
	{lifecycle.OpTimeOut, lifecycle.Retrying}: {
		spec: withTimeout,
		cmd:  plain(lifecycle.OpTimeOut),
		at:   func(w *world, _ lifecycle.Actor) time.Time { return *w.job.TimeoutAt },
	},
	{lifecycle.OpTimeOut, lifecycle.TimedOut}: {
		spec: withDeadline,
		cmd: func(w *world, a lifecycle.Actor) lifecycle.Command {
			c := byActor(a, w.job, lifecycle.OpTimeOut)
			c.Deadline = true
			return c
		},
		at: atDeadline,
	},
}

// TestTableRows takes every row of lifecycle.Table, for each of its actors,
// from a job built in the row's From state, and checks the step it records.
func TestTableRows(t *testing.T) {
	t.Parallel()
	for _, row := range lifecycle.Table {
		for _, actor := range row.Actors {
			name := fmt.Sprintf("%s/%s/%s->%s", row.Op, actor, row.From, row.To)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if row.Op == lifecycle.OpEnqueue {
					checkEnqueueRow(t, row)
					return
				}
				r, ok := recipes[rowKey{row.Op, row.To}]
				if !ok {
					t.Fatalf("no recipe takes row %s: add one so the row is tested", name)
				}
				spec := baseSpec()
				if r.spec != nil {
					r.spec(&spec)
				}
				var w *world
				if r.reach != nil {
					w = r.reach(t, spec)
				} else {
					w = reach(t, spec, row.From)
				}
				now := w.now.Add(time.Second)
				if r.at != nil {
					now = r.at(w, actor)
				}
				cmd := r.cmd(w, actor)
				st, err := applyPure(t, w.job, cmd, now)
				if err != nil {
					t.Fatalf("the table allows %s, but Apply(%s by %s, lease %q) on a %s job rejected it: %v",
						name, cmd.Op, cmd.Actor, cmd.LeaseID, w.job.State, err)
				}
				checkStep(t, row, actor, w.job, st, now)
				if err := lifecycle.Verify(st.Job, append(w.events, *st.Event)); err != nil {
					t.Errorf("Verify after %s: %v", name, err)
				}
			})
		}
	}
}

// checkStep asserts what every accepted transition must show.
func checkStep(t *testing.T, row lifecycle.Edge, actor lifecycle.Actor, prev lifecycle.Job, st lifecycle.Step, now time.Time) {
	t.Helper()
	if st.Noop() {
		t.Fatalf("step is a no-op; want %s -> %s", row.From, row.To)
	}
	next, ev := st.Job, st.Event
	if next.State != row.To {
		t.Errorf("state = %s, want %s", next.State, row.To)
	}
	if ev.Type != row.Event || ev.Op != row.Op || ev.FromState != row.From || ev.ToState != row.To || ev.Actor != actor {
		t.Errorf("event = %s %s by %s %s->%s, want %s %s by %s %s->%s",
			ev.Type, ev.Op, ev.Actor, ev.FromState, ev.ToState, row.Event, row.Op, actor, row.From, row.To)
	}
	if next.Rev != prev.Rev+1 || ev.Rev != next.Rev {
		t.Errorf("rev: job %d, event %d; want %d", next.Rev, ev.Rev, prev.Rev+1)
	}
	wantAttempt := prev.Attempt
	if row.Op == lifecycle.OpClaim {
		wantAttempt++
	}
	if next.Attempt != wantAttempt || ev.Attempt != wantAttempt {
		t.Errorf("attempt: job %d, event %d; want %d (only a claim adds one)", next.Attempt, ev.Attempt, wantAttempt)
	}
	if !ev.At.Equal(now) || !next.UpdatedAt.Equal(now) {
		t.Errorf("event at %s, updated_at %s; want %s", ev.At, next.UpdatedAt, now)
	}
	if ev.JobID != next.ID || ev.CorrelationID != next.CorrelationID || ev.Version != lifecycle.EventVersion {
		t.Errorf("event ids: job %q corr %q version %d", ev.JobID, ev.CorrelationID, ev.Version)
	}
	if err := lifecycle.Check(next); err != nil {
		t.Errorf("Check(next): %v", err)
	}
}

// checkEnqueueRow takes an enqueue row through New, the only way in from ∅.
func checkEnqueueRow(t *testing.T, row lifecycle.Edge) {
	t.Helper()
	w := reach(t, baseSpec(), row.To)
	if len(w.events) != 1 {
		t.Fatalf("New recorded %d events, want 1", len(w.events))
	}
	checkStep(t, row, lifecycle.ActorClient, lifecycle.Job{}, lifecycle.Step{Job: w.job, Event: &w.events[0]}, t0)
}
