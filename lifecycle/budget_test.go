package lifecycle_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func checkpointCmd(lease string, cursor string, delta lifecycle.Usage) lifecycle.Command {
	c := ownerCmd(lifecycle.OpCheckpoint, lease)
	c.Checkpoint = json.RawMessage(`{"cursor":"` + cursor + `"}`)
	c.UsageDelta = delta
	return c
}

// TestBudget: a checkpoint that takes the usage past a limit halts the job
// as the system, with reason budget_exceeded, keeping that checkpoint.
func TestBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		budget lifecycle.Budget
		first  lifecycle.Usage // accepted, stays running
		second lifecycle.Usage
		wait   time.Duration // before the second checkpoint
		halted bool
		inMsg  string
	}{
		{name: "steps exactly at the limit", budget: lifecycle.Budget{MaxSteps: 10},
			first: lifecycle.Usage{Steps: 6}, second: lifecycle.Usage{Steps: 4}},
		{name: "steps past the limit", budget: lifecycle.Budget{MaxSteps: 10},
			first: lifecycle.Usage{Steps: 6}, second: lifecycle.Usage{Steps: 5}, halted: true, inMsg: "step budget exceeded: 11 of 10"},
		{name: "cost past the limit", budget: lifecycle.Budget{MaxCost: 100},
			first: lifecycle.Usage{Cost: 99}, second: lifecycle.Usage{Cost: 2}, halted: true, inMsg: "cost budget exceeded: 101 of 100"},
		{name: "cost exactly at the limit", budget: lifecycle.Budget{MaxCost: 100},
			first: lifecycle.Usage{Cost: 50}, second: lifecycle.Usage{Cost: 50}},
		{name: "runtime past the limit", budget: lifecycle.Budget{MaxRuntime: lifecycle.Duration(30 * time.Second)},
			first: lifecycle.Usage{Steps: 1}, second: lifecycle.Usage{Steps: 1}, wait: 30 * time.Second, halted: true, inMsg: "runtime budget exceeded"},
		{name: "unlimited", budget: lifecycle.Budget{},
			first: lifecycle.Usage{Steps: 1 << 40, Cost: 1 << 40}, second: lifecycle.Usage{Steps: 1 << 40, Cost: 1 << 40}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := baseSpec()
			spec.Budget = &tc.budget
			w := reach(t, spec, lifecycle.Running)
			w.must(t, checkpointCmd(w.job.LeaseID, "a", tc.first))
			if w.job.State != lifecycle.Running {
				t.Fatalf("first checkpoint: state %s", w.job.State)
			}
			prev := w.job
			now := w.now.Add(tc.wait)
			if tc.wait > 0 {
				// Keep the lease alive while the runtime budget runs out.
				w.mustAt(t, now.Add(-time.Second), ownerCmd(lifecycle.OpHeartbeat, w.job.LeaseID))
				prev = w.job
			}
			st, err := applyPure(t, prev, checkpointCmd(prev.LeaseID, "b", tc.second), now.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			j, ev := st.Job, st.Event
			if string(j.Checkpoint) != `{"cursor":"b"}` {
				t.Errorf("checkpoint = %s, want the last one kept", j.Checkpoint)
			}
			want := prev.Usage
			want.Steps += tc.second.Steps
			want.Cost += tc.second.Cost
			if j.Usage.Steps != want.Steps || j.Usage.Cost != want.Cost {
				t.Errorf("usage = %+v, want steps %d cost %d", j.Usage, want.Steps, want.Cost)
			}
			if !tc.halted {
				if j.State != lifecycle.Running || ev.Type != lifecycle.EventCheckpointed {
					t.Fatalf("state %s event %s, want running/checkpointed", j.State, ev.Type)
				}
				return
			}
			if j.State != lifecycle.Halted || j.ReasonCode != lifecycle.ReasonBudget || !strings.Contains(j.Reason, tc.inMsg) {
				t.Errorf("state %s reason_code %q reason %q; want halted, %q, %q", j.State, j.ReasonCode, j.Reason, lifecycle.ReasonBudget, tc.inMsg)
			}
			if ev.Type != lifecycle.EventHalted || ev.Op != lifecycle.OpHalt || ev.Actor != lifecycle.ActorSystem ||
				ev.FromState != lifecycle.Running || ev.Reason != j.Reason || ev.LeaseID != prev.LeaseID {
				t.Errorf("event %s %s by %s from %s reason %q lease %q; want halted/halt by system from running",
					ev.Type, ev.Op, ev.Actor, ev.FromState, ev.Reason, ev.LeaseID)
			}
			if j.Rev != prev.Rev+1 || j.Attempt != prev.Attempt || j.Error != nil || j.FinishedAt == nil || j.Owner != "" {
				t.Errorf("rev %d attempt %d error %v finished %v owner %q", j.Rev, j.Attempt, j.Error, j.FinishedAt, j.Owner)
			}
			if err := lifecycle.Verify(j, append(w.events, *ev)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOverBudget(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(time.Minute)}
	w := reach(t, spec, lifecycle.Running)
	start := *w.job.StartedAt
	if why, over := lifecycle.OverBudget(w.job, start.Add(time.Minute)); over {
		t.Errorf("over budget at exactly the limit: %s", why)
	}
	if why, over := lifecycle.OverBudget(w.job, start.Add(time.Minute+time.Nanosecond)); !over || !strings.Contains(why, "runtime") {
		t.Errorf("OverBudget past the limit = %q, %v", why, over)
	}
	if _, over := lifecycle.OverBudget(reach(t, baseSpec(), lifecycle.Running).job, start.Add(time.Hour)); over {
		t.Error("a job without a budget is over budget")
	}
}

// TestRuntimeCountsRunningTimeOnly: usage.runtime_ms adds up the time each
// attempt ran, start to end; queue time, backoff and a claim that never
// started do not count, and the runtime budget uses the same sum (issue 13,
// item 5).
func TestRuntimeCountsRunningTimeOnly(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(10 * time.Second)}
	w := reach(t, spec, lifecycle.Running)
	w.mustAt(t, w.now.Add(3*time.Second), failCmd(w.job.LeaseID, "network", lifecycle.ClassTransient)) // ran 3 s
	if got := w.job.Usage.RuntimeMS; got != 3000 {
		t.Fatalf("after a 3 s attempt: runtime_ms %d, want 3000", got)
	}
	w.mustAt(t, w.job.RunAt.Add(time.Hour), systemCmd(lifecycle.OpPromote)) // an hour of backoff and queue
	lease := w.claim(t)
	w.mustAt(t, w.now.Add(10*time.Second), ownerCmd(lifecycle.OpStall, lease)) // claimed, never started
	w.must(t, systemCmd(lifecycle.OpRequeue))
	if got := w.job.Usage.RuntimeMS; got != 3000 {
		t.Fatalf("after a claim that never started: runtime_ms %d, want 3000", got)
	}
	lease = w.claim(t)
	w.must(t, ownerCmd(lifecycle.OpStart, lease))
	start := w.now
	if why, over := lifecycle.OverBudget(w.job, start.Add(7*time.Second)); over {
		t.Errorf("3 s + 7 s of a 10 s budget: over (%s)", why)
	}
	if _, over := lifecycle.OverBudget(w.job, start.Add(7*time.Second+time.Millisecond)); !over {
		t.Errorf("3 s + 7.001 s of a 10 s budget: not over")
	}
	w.mustAt(t, start.Add(2500*time.Millisecond), completeCmd(lease))
	if got := w.job.Usage.RuntimeMS; got != 5500 {
		t.Errorf("after attempts of 3 s and 2.5 s: runtime_ms %d, want 5500 (the time since the first start is over an hour)", got)
	}
}
