package lifecycle

import (
	"fmt"
	"slices"
	"time"
)

// RunNode is one job of a run as the run rules see it.
type RunNode struct {
	Name  string
	JobID string
	State State
	// AllowFailure jobs never fail their run; their dependents still run
	// when they fail, unless those dependents say NeedsSuccess.
	AllowFailure bool
	// NeedsSuccess makes this job need every dependency to succeed, even
	// one that is allowed to fail.
	NeedsSuccess bool
	// Planner jobs add jobs to their run; their failure fails the run
	// with plan_failed, whether or not they are allowed to fail.
	Planner   bool
	DependsOn []string // names within the run
}

// RunPlan is what the run rules say must happen now, in one transaction.
type RunPlan struct {
	// Unblock lists blocked jobs whose dependencies all ended well.
	Unblock []string
	// Upstream lists blocked jobs to cancel with reason upstream_failed: a
	// dependency ended without success and they could not do without it.
	Upstream []string
	// Cancel lists live jobs to cancel because the run failed (policy
	// FailCancel) or is being cancelled; leased ones are cancelled two-phase.
	Cancel []string
	// TimeOut lists live jobs to time out with their run.
	TimeOut []string
	// Run is the run's own transition, if any, with its reason and the job
	// that caused it.
	Run        RunOp
	ReasonCode string
	Reason     string
	JobName    string
}

// Empty reports whether the plan changes nothing.
func (p RunPlan) Empty() bool {
	return len(p.Unblock)+len(p.Upstream)+len(p.Cancel)+len(p.TimeOut) == 0 && p.Run == ""
}

// DecideRun applies the run rules (DESIGN.md section 2, seed-ci) to a run and
// the current states of its jobs at now. It is a pure function: the store
// calls it inside the transaction of every transition of a run's job, and
// carries the plan out in that same transaction.
//
//   - A blocked job is unblocked when every dependency ended well: it
//     succeeded, or it is allowed to fail and the job does not need success.
//   - A blocked job is cancelled (upstream_failed) as soon as one dependency
//     ended otherwise; this cascades down the graph in the same plan.
//   - The run fails as soon as a required job ends without success (a
//     planner: plan_failed), succeeds when every job ended and every
//     required one succeeded, and times out at its timeout with its live jobs.
//   - A cancel-requested run is cancelled when all its jobs have ended.
func DecideRun(run Run, nodes []RunNode, now time.Time) RunPlan {
	var p RunPlan
	states := make(map[string]State, len(nodes))
	byName := make(map[string]RunNode, len(nodes))
	for _, n := range nodes {
		states[n.Name], byName[n.Name] = n.State, n
	}
	timedOut := run.TimeoutAt != nil && !now.Before(*run.TimeoutAt)
	switch {
	case run.State == RunCancelRequested || run.State == RunCancelled:
		p.Cancel = liveNames(nodes, states)
		if timedOut && run.State == RunCancelRequested {
			p.Cancel = nil
			p.TimeOut = liveNames(nodes, states)
			p.Run, p.ReasonCode, p.Reason = RunOpTimeOut, ReasonRunTimeout, "the run's timeout passed"
			return p
		}
		if run.State == RunCancelRequested && allEnded(nodes, states, p.Cancel) {
			p.Run, p.ReasonCode, p.Reason = RunOpFinish, ReasonRunCancelled, "every job of the run has ended"
		}
		return p
	case run.State == RunTimedOut || (timedOut && !run.State.Terminal()):
		p.TimeOut = liveNames(nodes, states)
		if !run.State.Terminal() {
			p.Run, p.ReasonCode, p.Reason = RunOpTimeOut, ReasonRunTimeout, "the run's timeout passed"
		}
		return p
	}
	cascade(nodes, byName, states, &p)
	if !run.State.Terminal() {
		failure(nodes, states, &p)
	}
	if run.State == RunFailed || p.Run == RunOpFail {
		if run.OnFailure != FailContinue {
			// Nothing more is learned: what was about to be unblocked is
			// cancelled with the rest.
			for _, name := range p.Unblock {
				states[name] = Blocked
			}
			p.Unblock = nil
			p.Cancel = liveNames(nodes, states)
		}
		return p
	}
	if run.State.Terminal() {
		return p
	}
	if allEnded(nodes, states, nil) {
		p.Run, p.Reason = RunOpSucceed, "every required job succeeded"
		return p
	}
	if run.State == RunQueued && slices.ContainsFunc(nodes, func(n RunNode) bool {
		st := states[n.Name]
		return st.Terminal() || st.Leased() || st == Stalled || st == Retrying
	}) {
		p.Run = RunOpStart
	}
	return p
}

// cascade decides every blocked job, to a fixed point: a cancel makes a job
// terminal, which can decide its own dependents in turn.
func cascade(nodes []RunNode, byName map[string]RunNode, states map[string]State, p *RunPlan) {
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if states[n.Name] != Blocked {
				continue
			}
			ended, bad := true, ""
			for _, d := range n.DependsOn {
				st, ok := states[d]
				switch {
				case !ok:
					bad = d // a dependency outside the run can never end well
				case !st.Terminal():
					ended = false
				case st != Succeeded && (!byName[d].AllowFailure || n.NeedsSuccess):
					bad = d
				}
			}
			switch {
			case bad != "":
				states[n.Name] = Cancelled
				p.Upstream = append(p.Upstream, n.Name)
				changed = true
			case ended:
				states[n.Name] = Queued
				p.Unblock = append(p.Unblock, n.Name)
			}
		}
	}
}

// failure sets the run's failure, if a job's end fails it: a planner's
// failure first (plan_failed), else the first required job's.
func failure(nodes []RunNode, states map[string]State, p *RunPlan) {
	for _, planner := range []bool{true, false} {
		for _, n := range nodes {
			st := states[n.Name]
			if !st.Terminal() || st == Succeeded || n.Planner != planner || (!planner && n.AllowFailure) {
				continue
			}
			p.Run, p.JobName, p.ReasonCode = RunOpFail, n.Name, ReasonJobFailed
			p.Reason = fmt.Sprintf("required job %q ended %s", n.Name, st)
			if planner {
				p.ReasonCode, p.Reason = ReasonPlanFailed, fmt.Sprintf("planner job %q ended %s", n.Name, st)
			}
			return
		}
	}
}

// liveNames lists the jobs not yet ended, skipping those already asked to
// cancel.
func liveNames(nodes []RunNode, states map[string]State) []string {
	var out []string
	for _, n := range nodes {
		st := states[n.Name]
		if !st.Terminal() && st != CancelRequested {
			out = append(out, n.Name)
		}
	}
	return out
}

// allEnded reports whether every job is terminal, counting those in skip
// as about to be (cancelled now, without a lease to wait for).
func allEnded(nodes []RunNode, states map[string]State, skip []string) bool {
	for _, n := range nodes {
		st := states[n.Name]
		if st.Terminal() {
			continue
		}
		if slices.Contains(skip, n.Name) && !st.Leased() {
			continue
		}
		return false
	}
	return true
}
