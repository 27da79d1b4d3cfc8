package maintenance

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func newTestTimeouts(d *db) (*Timeouts, <-chan passResult) {
	s := must(NewTimeouts(d.s, &TimeoutsConfig{Clock: d.clock, Logger: d.logger()}))
	s.now = d.nowFor()
	return s, watch(s.l)
}

// The timeouts' cases: each sets up a job, moves the clock past one of its
// limits, and expects one pass to change it as the table says. Each revokes
// the lease: the old owner's late complete is rejected.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	E := func(ts ...lifecycle.EventType) []lifecycle.EventType { return ts }
	started := E(lifecycle.EventEnqueued, lifecycle.EventClaimed, lifecycle.EventStarted)
	tests := []struct {
		name      string
		spec      func(now time.Time) lifecycle.Spec
		claim     bool // claim and start the job with a long lease
		advance   time.Duration
		state     lifecycle.State
		reason    string
		errorCode string // of Error when terminal, else of LastError
		events    []lifecycle.EventType
	}{{
		name:    "timeout with attempts left retries",
		spec:    func(time.Time) lifecycle.Spec { return lifecycle.Spec{Timeout: 10 * time.Second, MaxAttempts: 2} },
		claim:   true,
		advance: 10 * time.Second,
		state:   lifecycle.Retrying, errorCode: lifecycle.ReasonTimeout,
		events: append(started, lifecycle.EventRetryScheduled),
	}, {
		name:    "timeout with no attempts left is timed_out",
		spec:    func(time.Time) lifecycle.Spec { return lifecycle.Spec{Timeout: 10 * time.Second, MaxAttempts: 1} },
		claim:   true,
		advance: 11 * time.Second,
		state:   lifecycle.TimedOut, reason: lifecycle.ReasonTimeout, errorCode: lifecycle.ReasonTimeout,
		events: append(started, lifecycle.EventTimedOut),
	}, {
		name: "deadline of a running job",
		spec: func(now time.Time) lifecycle.Spec {
			dl := now.Add(time.Minute)
			return lifecycle.Spec{Deadline: &dl}
		},
		claim:   true,
		advance: time.Minute,
		state:   lifecycle.TimedOut, reason: lifecycle.ReasonDeadline, errorCode: lifecycle.ReasonDeadline,
		events: append(started, lifecycle.EventTimedOut),
	}, {
		name: "deadline of a scheduled job",
		spec: func(now time.Time) lifecycle.Spec {
			runAt, dl := now.Add(time.Hour), now.Add(time.Minute)
			return lifecycle.Spec{RunAt: &runAt, Deadline: &dl}
		},
		advance: 2 * time.Minute,
		state:   lifecycle.TimedOut, reason: lifecycle.ReasonDeadline, errorCode: lifecycle.ReasonDeadline,
		events: []lifecycle.EventType{lifecycle.EventEnqueued, lifecycle.EventTimedOut},
	}, {
		name: "runtime budget halts a running job",
		spec: func(time.Time) lifecycle.Spec {
			return lifecycle.Spec{Budget: &lifecycle.Budget{MaxRuntime: lifecycle.Duration(time.Minute)}}
		},
		claim:   true,
		advance: time.Minute + time.Second,
		state:   lifecycle.Halted, reason: lifecycle.ReasonBudget,
		events: append(started, lifecycle.EventHalted),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			onBoth(t, func(t *testing.T, d *db) {
				j := d.enqueue(tc.spec(d.clock.Now()))
				if tc.claim {
					j = d.claim(time.Hour, true)
				}
				s, passes := newTestTimeouts(d)
				start(t, s)
				if n := nextPass(t, passes); n != 0 {
					t.Fatalf("first pass changed %d jobs before any limit passed", n)
				}
				d.clock.Advance(tc.advance)
				if n := nextPass(t, passes); n != 1 {
					t.Fatalf("pass changed %d jobs, want 1", n)
				}
				got := d.wantState(j.ID, tc.state, tc.reason)
				e := got.LastError
				if got.State.Terminal() {
					e = got.Error
				}
				if code := errCode(e); code != tc.errorCode {
					t.Errorf("error code %q, want %q", code, tc.errorCode)
				}
				if got.LeaseID != "" {
					t.Errorf("lease %s not revoked", got.LeaseID)
				}
				d.wantEvents(j.ID, tc.events...)
				if tc.claim {
					lateComplete(t, d, j)
				}
				d.verify()
			})
		})
	}
}

// With the budget scan off, a job past its runtime budget is left to its
// worker pool.
func TestTimeoutsBudgetScanOff(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		d.enqueue(lifecycle.Spec{Budget: &lifecycle.Budget{MaxRuntime: lifecycle.Duration(time.Minute)}})
		j := d.claim(time.Hour, true)
		s := must(NewTimeouts(d.s, &TimeoutsConfig{Clock: d.clock, Logger: d.logger(), BudgetInterval: -1}))
		s.now = d.nowFor()
		passes := watch(s.l)
		start(t, s)
		nextPass(t, passes)
		d.clock.Advance(2 * time.Minute)
		if n := nextPass(t, passes); n != 0 {
			t.Fatalf("pass changed %d jobs with the budget scan off", n)
		}
		d.wantState(j.ID, lifecycle.Running, "")
		d.verify()
	})
}

func errCode(e *lifecycle.JobError) string {
	if e == nil {
		return ""
	}
	return e.Code
}
