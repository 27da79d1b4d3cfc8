package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Check is the proof that every job succeeded exactly once, from three
// sources that do not depend on each other: the jobs' rows, their event
// logs (replayed by store.Verify), and the handler's own count of its calls.
type Check struct {
	// Jobs is how many jobs of the benchmark's kind the store holds: the
	// work phase's and the pickup phase's.
	Jobs int `json:"jobs"`
	// Succeeded counts those in state succeeded, and FirstAttempt those of
	// them that succeeded on their first claim.
	Succeeded    int `json:"succeeded"`
	FirstAttempt int `json:"first_attempt"`
	// HandlerRuns counts the handler's calls; Duplicates the jobs it was
	// called for more than once, and NeverRun the jobs it never saw.
	HandlerRuns int `json:"handler_runs"`
	Duplicates  int `json:"duplicates"`
	NeverRun    int `json:"never_run"`
	// Events is how many events the store holds, and EventsPerJob the
	// events of one job (all jobs' logs have the same shape when the check
	// passes: Events == Jobs × len(EventsPerJob)).
	Events       int      `json:"events"`
	EventsPerJob []string `json:"events_per_job"`
	// Findings are the jobs whose event log does not replay to their row.
	Findings []store.Finding `json:"findings"`
	// OK: every job succeeded on its first and only claim, the handler ran
	// once for each, every log replays to its job and holds exactly one
	// claimed and one succeeded event.
	OK bool `json:"ok"`
	// Problems says what is wrong when not OK.
	Problems []string `json:"problems,omitempty"`
	// CPU is the check's CPU per job checked, client and server; nil where
	// it cannot be read.
	CPU *CPU `json:"cpu,omitempty"`
}

// check reads every job and its event log once, through store.Verify.
//
// Verify replays each job's log through the lifecycle from nothing and
// reports any job whose replay does not end in its row's state, attempt and
// rev; so a succeeded job with attempt 1 and a clean replay was claimed
// exactly once (only a claim raises the attempt) and succeeded once (a
// second succeeded event would be a transition out of a terminal state,
// which the replay rejects). The event count then rules out anything else
// in the logs: each job has at least enqueued, claimed, started and
// succeeded, so Events == 4 × Jobs means exactly those. One pass keeps the
// check's cost (which compare.sh counts with the rest of the process) to
// one read of each row and log.
func (r *runner) check(ctx context.Context) (Check, error) {
	c := Check{Findings: []store.Finding{}}
	cpu := r.markCPU(ctx)
	want := r.cfg.Jobs + r.cfg.LatencySamples
	stop := r.progress("check", want, func() int { return 0 })
	defer stop()

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.runs {
		c.HandlerRuns += int(n)
	}
	events := 0
	rep, err := r.s.Verify(ctx, &store.VerifyParams{OnJob: func(j store.Job, evs []store.Event) {
		if j.Kind != r.cfg.Kind {
			return
		}
		c.Jobs++
		events += len(evs)
		if c.EventsPerJob == nil {
			c.EventsPerJob = []string{}
			for _, e := range evs {
				c.EventsPerJob = append(c.EventsPerJob, string(e.Type))
			}
		}
		if j.State == lifecycle.Succeeded {
			c.Succeeded++
			if j.Attempt == 1 {
				c.FirstAttempt++
			}
		}
		switch n := r.runs[j.ID]; {
		case n == 0:
			c.NeverRun++
		case n > 1:
			c.Duplicates++
		}
	}})
	if err != nil {
		return c, err
	}
	c.Events = events
	c.Findings = append(c.Findings, rep.Findings...)
	c.judge(want)
	c.CPU = r.cpuSince(ctx, cpu, c.Jobs)
	return c, nil
}

// judge sets OK and Problems.
func (c *Check) judge(want int) {
	problem := func(format string, args ...any) { c.Problems = append(c.Problems, fmt.Sprintf(format, args...)) }
	if c.Jobs != want {
		problem("the store holds %d jobs of the benchmark, want %d", c.Jobs, want)
	}
	if c.Succeeded != c.Jobs {
		problem("%d of %d jobs succeeded", c.Succeeded, c.Jobs)
	}
	if c.FirstAttempt != c.Succeeded {
		problem("%d jobs were claimed more than once", c.Succeeded-c.FirstAttempt)
	}
	if c.Duplicates > 0 || c.NeverRun > 0 || c.HandlerRuns != c.Jobs {
		problem("the handler ran %d times for %d jobs: %d jobs more than once, %d never", c.HandlerRuns, c.Jobs, c.Duplicates, c.NeverRun)
	}
	if len(c.Findings) > 0 {
		problem("verify found %d jobs whose events do not replay to them", len(c.Findings))
	}
	shape := []string{string(lifecycle.EventEnqueued), string(lifecycle.EventClaimed), string(lifecycle.EventStarted), string(lifecycle.EventSucceeded)}
	if !slices.Equal(c.EventsPerJob, shape) {
		problem("a job's events are %s, want %s", strings.Join(c.EventsPerJob, ", "), strings.Join(shape, ", "))
	}
	if c.Events != len(shape)*c.Jobs {
		problem("the store holds %d events for %d jobs, want %d (%d each)", c.Events, c.Jobs, len(shape)*c.Jobs, len(shape))
	}
	c.OK = len(c.Problems) == 0
}
