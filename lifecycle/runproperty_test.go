package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
)

// TestRunRulesProperty draws random DAGs and outcomes, drives the run with
// DecideRun in random job orders, and checks that the run ends in exactly
// the state the rules give (computed independently below), that every job
// ends, and that the run's events verify.
func TestRunRulesProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "jobs")
		policy := rapid.SampledFrom([]lifecycle.FailurePolicy{lifecycle.FailCancel, lifecycle.FailContinue}).Draw(t, "policy")
		nodes := make([]lifecycle.RunNode, n)
		outcome := map[string]lifecycle.State{}
		for i := range nodes {
			nd := lifecycle.RunNode{Name: fmt.Sprintf("j%d", i), State: lifecycle.Queued}
			for d := 0; d < i; d++ {
				if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("edge%d-%d", d, i)) == 0 {
					nd.DependsOn = append(nd.DependsOn, fmt.Sprintf("j%d", d))
				}
			}
			if len(nd.DependsOn) > 0 {
				nd.State = lifecycle.Blocked
			}
			nd.AllowFailure = rapid.Bool().Draw(t, "allow"+nd.Name)
			nd.NeedsSuccess = rapid.IntRange(0, 3).Draw(t, "needs"+nd.Name) == 0
			nd.Planner = i == 0 && rapid.IntRange(0, 3).Draw(t, "planner") == 0
			outcome[nd.Name] = rapid.SampledFrom([]lifecycle.State{lifecycle.Succeeded, lifecycle.Succeeded, lifecycle.Failed, lifecycle.DeadLettered}).Draw(t, "outcome"+nd.Name)
			nodes[i] = nd
		}
		if err := lifecycle.CheckRunGraph(nil, nodes); err != nil {
			t.Fatal(err)
		}
		run, ev, err := lifecycle.NewRun(lifecycle.RunSpec{ID: "r", OnFailure: policy}, runT0)
		if err != nil {
			t.Fatal(err)
		}
		events := []lifecycle.RunEvent{ev}
		now := runT0
		settle := func() {
			for i := 0; i < 3*n+3; i++ {
				p := lifecycle.DecideRun(run, nodes, now)
				if p.Empty() {
					return
				}
				set := func(names []string, to func(lifecycle.State) lifecycle.State) {
					for _, name := range names {
						for k := range nodes {
							if nodes[k].Name == name {
								nodes[k].State = to(nodes[k].State)
							}
						}
					}
				}
				set(p.Unblock, func(lifecycle.State) lifecycle.State { return lifecycle.Queued })
				set(p.Upstream, func(lifecycle.State) lifecycle.State { return lifecycle.Cancelled })
				set(p.Cancel, func(s lifecycle.State) lifecycle.State {
					if s.Leased() {
						return lifecycle.CancelRequested
					}
					return lifecycle.Cancelled
				})
				if p.Run != "" {
					s, err := lifecycle.ApplyRun(run, lifecycle.RunCommand{Op: p.Run, Actor: lifecycle.ActorSystem, ReasonCode: p.ReasonCode, Reason: p.Reason}, now)
					if err != nil {
						t.Fatalf("plan %+v: %v", p, err)
					}
					run = s.Run
					events = append(events, *s.Event)
				}
			}
			t.Fatalf("the rules did not settle: %+v", nodes)
		}
		for steps := 0; ; steps++ {
			settle()
			var live []int
			for k, nd := range nodes {
				if nd.State == lifecycle.Queued || nd.State == lifecycle.Running || nd.State == lifecycle.CancelRequested {
					live = append(live, k)
				}
			}
			if len(live) == 0 {
				break
			}
			k := live[rapid.IntRange(0, len(live)-1).Draw(t, "pick")]
			now = now.Add(time.Second)
			switch nodes[k].State {
			case lifecycle.Queued:
				nodes[k].State = lifecycle.Running
			case lifecycle.Running:
				nodes[k].State = outcome[nodes[k].Name]
			case lifecycle.CancelRequested:
				nodes[k].State = lifecycle.Cancelled
			}
		}
		for _, nd := range nodes {
			if !nd.State.Terminal() {
				t.Fatalf("job %s left %s: %+v", nd.Name, nd.State, nodes)
			}
		}
		want, finals := expectedRun(nodes, outcome)
		if run.State != want {
			t.Fatalf("run ended %s (%s), the rules give %s: %+v", run.State, run.Reason, want, nodes)
		}
		if policy == lifecycle.FailContinue {
			for _, nd := range nodes {
				if nd.State != finals[nd.Name] {
					t.Fatalf("job %s ended %s, want %s", nd.Name, nd.State, finals[nd.Name])
				}
			}
		}
		if err := lifecycle.VerifyRun(run, events); err != nil {
			t.Fatal(err)
		}
	})
}

// expectedRun is the oracle: a job runs to its drawn outcome when every
// dependency ended well, else it is cancelled; the run fails when a required
// or planner job did not succeed, else it succeeds.
func expectedRun(nodes []lifecycle.RunNode, outcome map[string]lifecycle.State) (lifecycle.RunState, map[string]lifecycle.State) {
	byName := map[string]lifecycle.RunNode{}
	for _, nd := range nodes {
		byName[nd.Name] = nd
	}
	finals := map[string]lifecycle.State{}
	var final func(name string) lifecycle.State
	final = func(name string) lifecycle.State {
		if s, ok := finals[name]; ok {
			return s
		}
		nd := byName[name]
		s := outcome[name]
		for _, d := range nd.DependsOn {
			ds := final(d)
			if ds != lifecycle.Succeeded && (!byName[d].AllowFailure || nd.NeedsSuccess) {
				s = lifecycle.Cancelled
			}
		}
		finals[name] = s
		return s
	}
	state := lifecycle.RunSucceeded
	for _, nd := range nodes {
		if final(nd.Name) != lifecycle.Succeeded && (!nd.AllowFailure || nd.Planner) {
			state = lifecycle.RunFailed
		}
	}
	return state, finals
}
