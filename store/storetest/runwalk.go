package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testRunWalk draws random DAGs, job outcomes and failure policies, drives
// each run through the store in a random order of claims, completions,
// failures and cancel acknowledgements, and checks that the run ends in
// exactly the state the rules give (an oracle independent of the engine),
// that every job ends, and that verify is clean. Runs share one store.
func testRunWalk(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		if testing.Short() && checks > 25 {
			rt.Skip("enough runs in -short mode")
		}
		n := rapid.IntRange(1, 6).Draw(rt, "jobs")
		policy := rapid.SampledFrom([]lifecycle.FailurePolicy{lifecycle.FailCancel, lifecycle.FailContinue}).Draw(rt, "policy")
		jobs := make([]store.RunJobSpec, n)
		outcome := map[string]bool{}
		for i := range jobs {
			name := fmt.Sprintf("j%d", i)
			s := h.spec(h.now)
			s.MaxAttempts, s.OnExhausted = 1, lifecycle.Failed
			jobs[i] = store.RunJobSpec{Name: name, Spec: s, AllowFailure: rapid.Bool().Draw(rt, "allow"+name),
				NeedsSuccess: rapid.IntRange(0, 3).Draw(rt, "needs"+name) == 0}
			for d := 0; d < i; d++ {
				if rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("edge%d-%d", d, i)) == 0 {
					jobs[i].DependsOn = append(jobs[i].DependsOn, fmt.Sprintf("j%d", d))
				}
			}
			outcome[name] = rapid.IntRange(0, 2).Draw(rt, "ok"+name) > 0
		}
		v, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{OnFailure: policy}, Jobs: jobs, Now: h.tick()})
		if err != nil {
			rt.Fatal(err)
		}
		lease := map[string]string{}
		for step := 0; step < 4*n+4; step++ {
			v, err = h.s.RunGet(h.ctx, v.Run.ID)
			if err != nil {
				rt.Fatal(err)
			}
			var live []store.RunJob
			for _, j := range v.Jobs {
				if j.State == lifecycle.Queued || j.State == lifecycle.Running || j.State == lifecycle.CancelRequested {
					live = append(live, j)
				}
			}
			if len(live) == 0 {
				break
			}
			j := live[rapid.IntRange(0, len(live)-1).Draw(rt, "pick")]
			own := store.OwnerParams{JobID: j.JobID, LeaseID: lease[j.Name], Now: h.tick()}
			switch j.State {
			case lifecycle.Queued:
				got, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "walker", Queues: []string{jobs[nameIndex(j.Name)].Spec.Queue},
					Limit: 1, LeaseTTL: leaseTTL, Start: true, Now: h.tick()})
				if err != nil || len(got) != 1 {
					rt.Fatalf("claim %s: %d jobs, %v", j.Name, len(got), err)
				}
				lease[j.Name] = got[0].LeaseID
			case lifecycle.Running:
				if outcome[j.Name] {
					res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: own, Result: json.RawMessage(`{}`)}})
					if err == nil {
						err = res[0].Err
					}
					if err != nil {
						rt.Fatalf("complete %s: %v", j.Name, err)
					}
				} else if _, err := h.s.JobFail(h.ctx, &store.JobFailParams{OwnerParams: own,
					Error: lifecycle.JobError{Code: "test_failure", Message: "no", Class: lifecycle.ClassPermanent}}); err != nil {
					rt.Fatalf("fail %s: %v", j.Name, err)
				}
			case lifecycle.CancelRequested:
				if _, err := h.s.JobAckCancel(h.ctx, &own); err != nil {
					rt.Fatalf("ack cancel %s: %v", j.Name, err)
				}
			}
		}
		v, err = h.s.RunGet(h.ctx, v.Run.ID)
		if err != nil {
			rt.Fatal(err)
		}
		nodes := make([]lifecycle.RunNode, n)
		for i, j := range jobs {
			nodes[i] = lifecycle.RunNode{Name: j.Name, AllowFailure: j.AllowFailure, NeedsSuccess: j.NeedsSuccess, DependsOn: j.DependsOn}
		}
		want, finals := runOracle(nodes, outcome)
		if v.Run.State != want {
			rt.Fatalf("run ended %s (%s), the rules give %s; jobs %+v", v.Run.State, v.Run.Reason, want, v.Jobs)
		}
		for _, j := range v.Jobs {
			if !j.State.Terminal() {
				rt.Fatalf("job %s left %s", j.Name, j.State)
			}
			if policy == lifecycle.FailContinue && j.State != finals[j.Name] {
				rt.Fatalf("job %s ended %s, the rules give %s", j.Name, j.State, finals[j.Name])
			}
		}
	})
	if f := h.findings(); len(f) > 0 {
		t.Fatalf("verify found %v", f)
	}
}

func nameIndex(name string) int {
	var i int
	fmt.Sscanf(name, "j%d", &i)
	return i
}

// runOracle gives a run's end without the engine: a job runs to its drawn
// outcome when every dependency ended well (succeeded, or failed while
// allowed to and the job does not need success), else it is cancelled; the
// run fails when a required job did not succeed.
func runOracle(nodes []lifecycle.RunNode, ok map[string]bool) (lifecycle.RunState, map[string]lifecycle.State) {
	finals := map[string]lifecycle.State{}
	byName := map[string]lifecycle.RunNode{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var final func(string) lifecycle.State
	final = func(name string) lifecycle.State {
		if s, done := finals[name]; done {
			return s
		}
		n := byName[name]
		s := lifecycle.Failed
		if ok[name] {
			s = lifecycle.Succeeded
		}
		for _, d := range n.DependsOn {
			if ds := final(d); ds != lifecycle.Succeeded && (!byName[d].AllowFailure || n.NeedsSuccess) {
				s = lifecycle.Cancelled
			}
		}
		finals[name] = s
		return s
	}
	state := lifecycle.RunSucceeded
	for _, n := range nodes {
		if final(n.Name) != lifecycle.Succeeded && !n.AllowFailure {
			state = lifecycle.RunFailed
		}
	}
	return state, finals
}
