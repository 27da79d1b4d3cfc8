package lifecycle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// tableHas reports whether some row lets actor perform op from state.
func tableHas(op lifecycle.Op, actor lifecycle.Actor, from lifecycle.State) bool {
	for _, e := range lifecycle.Table {
		if e.Op == op && e.From == from && slices.Contains(e.Actors, actor) {
			return true
		}
	}
	return false
}

// documentedNoop reports the requests outside the table that DESIGN.md makes
// idempotent no-ops when the job is in state s: a start repeated with the
// live lease, a soft cancel of a job already cancelling or cancelled, and a
// hard cancel of a cancelled job.
func documentedNoop(op lifecycle.Op, actor lifecycle.Actor, s lifecycle.State) bool {
	switch {
	case op == lifecycle.OpStart && actor == lifecycle.ActorOwner:
		return s == lifecycle.Running
	case op == lifecycle.OpCancel && actor == lifecycle.ActorClient:
		return s == lifecycle.CancelRequested || s == lifecycle.Cancelled
	case op == lifecycle.OpCancelHard && actor == lifecycle.ActorClient:
		return s == lifecycle.Cancelled
	}
	return false
}

// wellFormed builds a command for op by actor whose own fields are valid, so
// that only the table can reject it. An owner presents the job's live lease,
// or one that was never issued when the job holds none.
func wellFormed(op lifecycle.Op, actor lifecycle.Actor, j lifecycle.Job) lifecycle.Command {
	c := lifecycle.Command{
		Op: op, Actor: actor, ActorID: "someone", LeaseTTL: leaseTTL,
		LeaseID:    j.LeaseID,
		Result:     json.RawMessage(`{"ok":true}`),
		Error:      &lifecycle.JobError{Code: "network", Message: "reset", Class: lifecycle.ClassTransient},
		ReasonCode: lifecycle.ReasonPolicyViolation,
		Checkpoint: json.RawMessage(`{"cursor":1}`),
	}
	if c.LeaseID == "" || op == lifecycle.OpClaim {
		c.LeaseID = "lease-never-issued"
	}
	return c
}

// TestRejectionsOutsideTable tries every op by every actor on a job in every
// state (and ∅) that the table does not allow.
func TestRejectionsOutsideTable(t *testing.T) {
	t.Parallel()
	states := append([]lifecycle.State{""}, lifecycle.States...)
	for _, op := range allOps {
		for _, actor := range allActors {
			for _, s := range states {
				if tableHas(op, actor, s) {
					continue // TestTableRows takes it
				}
				t.Run(fmt.Sprintf("%s/%s/%s", op, actor, s), func(t *testing.T) {
					t.Parallel()
					job, now := lifecycle.Job{}, t0
					if s != "" {
						w := reach(t, baseSpec(), s)
						job, now = w.job, w.now.Add(time.Second)
					}
					cmd := wellFormed(op, actor, job)
					st, err := applyPure(t, job, cmd, now)
					if documentedNoop(op, actor, s) {
						if err != nil || !st.Noop() || !reflect.DeepEqual(st.Job, job) {
							t.Fatalf("want an idempotent no-op returning the job unchanged, got noop=%v err=%v", st.Noop(), err)
						}
						return
					}
					if err == nil {
						t.Fatalf("Apply accepted %s by %s on a %s job (noop=%v), which the table does not allow", op, actor, s, st.Noop())
					}
					if !isRejection(err) {
						t.Errorf("error %v wraps none of ErrInvalidTransition, ErrStaleLease, ErrValidation", err)
					}
					if !reflect.DeepEqual(st, lifecycle.Step{}) {
						t.Errorf("a rejection returned a step: %+v", st)
					}
					var le *lifecycle.Error
					if !errors.As(err, &le) || le.Msg == "" {
						t.Errorf("error %v is not a *lifecycle.Error with a message", err)
					}
				})
			}
		}
	}
}

// TestRejectionsByGuard covers rows the table allows whose time or attempt
// guard does not hold yet: each is an invalid transition that says why.
func TestRejectionsByGuard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spec  func(*lifecycle.Spec)
		from  lifecycle.State
		cmd   func(w *world) lifecycle.Command
		at    func(w *world) time.Time
		inMsg string
	}{
		{
			name: "promote scheduled before run_at", from: lifecycle.Scheduled,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpPromote) },
			at:    func(w *world) time.Time { return w.job.RunAt.Add(-time.Nanosecond) },
			inMsg: "not yet: run_at",
		},
		{
			name: "promote retrying before its backoff", from: lifecycle.Retrying,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpPromote) },
			at:    func(w *world) time.Time { return w.job.RunAt.Add(-time.Nanosecond) },
			inMsg: "not yet: run_at",
		},
		{
			name: "system stall before the lease expires", from: lifecycle.Running,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpStall) },
			at:    func(w *world) time.Time { return w.job.LeaseExpiresAt.Add(-time.Nanosecond) },
			inMsg: "not yet: lease_expires_at",
		},
		{
			name: "force_cancel before the cancel deadline", from: lifecycle.CancelRequested,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpForceCancel) },
			at:    func(w *world) time.Time { return w.job.CancelDeadline.Add(-time.Nanosecond) },
			inMsg: "not yet: cancel_deadline",
		},
		{
			name: "time_out before the attempt's timeout", from: lifecycle.Running, spec: withTimeout,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpTimeOut) },
			at:    func(w *world) time.Time { return w.job.TimeoutAt.Add(-time.Nanosecond) },
			inMsg: "has not run past its timeout",
		},
		{
			name: "time_out of a job without a timeout", from: lifecycle.Running,
			cmd:   func(*world) lifecycle.Command { return systemCmd(lifecycle.OpTimeOut) },
			at:    func(w *world) time.Time { return w.now.Add(24 * time.Hour) },
			inMsg: "has not run past its timeout",
		},
		{
			name: "deadline time_out before the deadline", from: lifecycle.Queued, spec: withDeadline,
			cmd: func(*world) lifecycle.Command {
				c := systemCmd(lifecycle.OpTimeOut)
				c.Deadline = true
				return c
			},
			at:    func(w *world) time.Time { return w.job.Deadline.Add(-time.Nanosecond) },
			inMsg: "deadline has not passed",
		},
		{
			name: "deadline time_out of a job without a deadline", from: lifecycle.Queued,
			cmd: func(*world) lifecycle.Command {
				c := systemCmd(lifecycle.OpTimeOut)
				c.Deadline = true
				return c
			},
			at:    func(w *world) time.Time { return w.now.Add(24 * time.Hour) },
			inMsg: "deadline has not passed",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			if tc.spec != nil {
				tc.spec(&spec)
			}
			w := reach(t, spec, tc.from)
			st, err := applyPure(t, w.job, tc.cmd(w), tc.at(w))
			if !errors.Is(err, lifecycle.ErrInvalidTransition) {
				t.Fatalf("err = %v (step %+v), want ErrInvalidTransition", err, st)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("error %q does not say %q", err, tc.inMsg)
			}
		})
	}
}

// TestRejectionsOfMalformedCommands: a command whose own fields are wrong is
// a validation error that names the field, whatever the job's state.
func TestRejectionsOfMalformedCommands(t *testing.T) {
	t.Parallel()
	with := func(c lifecycle.Command, f func(*lifecycle.Command)) lifecycle.Command {
		f(&c)
		return c
	}
	cases := []struct {
		name  string
		from  lifecycle.State
		cmd   func(lease string) lifecycle.Command
		inMsg string
	}{
		{"unknown op", lifecycle.Running, func(l string) lifecycle.Command { return ownerCmd("explode", l) }, `unknown operation "explode"`},
		{"enqueue through Apply", lifecycle.Queued, func(string) lifecycle.Command { return clientCmd(lifecycle.OpEnqueue) }, "unknown operation"},
		{"unknown actor", lifecycle.Running, func(l string) lifecycle.Command {
			return with(ownerCmd(lifecycle.OpHeartbeat, l), func(c *lifecycle.Command) { c.Actor = "robot" })
		}, "expected client, owner or system"},
		{"actor the op never has", lifecycle.Queued, func(string) lifecycle.Command { return clientCmd(lifecycle.OpClaim) }, "client may not claim"},
		{"owner op without lease", lifecycle.Running, func(string) lifecycle.Command { return ownerCmd(lifecycle.OpHeartbeat, "") }, "lease_id is required"},
		{"claim without worker id", lifecycle.Queued, func(string) lifecycle.Command {
			return with(claimCmd("lease-x"), func(c *lifecycle.Command) { c.ActorID = "" })
		}, "worker id"},
		{"claim without lease TTL", lifecycle.Queued, func(string) lifecycle.Command {
			return with(claimCmd("lease-x"), func(c *lifecycle.Command) { c.LeaseTTL = 0 })
		}, "positive lease TTL"},
		{"heartbeat without lease TTL", lifecycle.Running, func(l string) lifecycle.Command {
			return with(ownerCmd(lifecycle.OpHeartbeat, l), func(c *lifecycle.Command) { c.LeaseTTL = -time.Second })
		}, "positive lease TTL"},
		{"complete with invalid JSON", lifecycle.Running, func(l string) lifecycle.Command {
			return with(completeCmd(l), func(c *lifecycle.Command) { c.Result = json.RawMessage(`{"sent":`) })
		}, "result is not valid JSON"},
		{"complete with a huge result", lifecycle.Running, func(l string) lifecycle.Command {
			return with(completeCmd(l), func(c *lifecycle.Command) {
				c.Result = json.RawMessage(`"` + strings.Repeat("x", lifecycle.MaxPayloadBytes) + `"`)
			})
		}, "pass result_ptr"},
		{"dead_letter with an unknown reason code", lifecycle.Queued, func(string) lifecycle.Command {
			return with(deadLetterCmd(lifecycle.ActorSystem, ""), func(c *lifecycle.Command) { c.ReasonCode = "bored" })
		}, `reason code "bored"`},
		{"checkpoint with invalid JSON", lifecycle.Running, func(l string) lifecycle.Command {
			return with(ownerCmd(lifecycle.OpCheckpoint, l), func(c *lifecycle.Command) { c.Checkpoint = json.RawMessage(`[1,`) })
		}, "checkpoint must be valid JSON"},
		{"checkpoint with negative usage", lifecycle.Running, func(l string) lifecycle.Command {
			return with(ownerCmd(lifecycle.OpCheckpoint, l), func(c *lifecycle.Command) { c.UsageDelta.Cost = -1 })
		}, "must not be negative"},
		{"heartbeat with invalid progress", lifecycle.Running, func(l string) lifecycle.Command {
			return with(ownerCmd(lifecycle.OpHeartbeat, l), func(c *lifecycle.Command) { c.Progress = json.RawMessage(`{`) })
		}, "progress is not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := reach(t, baseSpec(), tc.from)
			st, err := applyPure(t, w.job, tc.cmd(w.job.LeaseID), w.now.Add(time.Second))
			if !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("err = %v (step %+v), want ErrValidation", err, st)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("error %q does not say %q", err, tc.inMsg)
			}
		})
	}
}

// TestApplyOnEmptyJob: Apply is not a way to create a job.
func TestApplyOnEmptyJob(t *testing.T) {
	t.Parallel()
	_, err := applyPure(t, lifecycle.Job{ID: "ghost"}, systemCmd(lifecycle.OpPromote), t0)
	if !errors.Is(err, lifecycle.ErrInvalidTransition) || !strings.Contains(err.Error(), "enqueue it first") {
		t.Fatalf("err = %v, want ErrInvalidTransition telling to enqueue first", err)
	}
}
