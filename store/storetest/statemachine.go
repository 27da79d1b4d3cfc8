package storetest

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/store"
)

// machine drives random operations against a store and its model, and
// checks after every step that the two agree and every invariant holds.
type machine struct {
	s     store.Store
	ctx   context.Context
	m     *model
	stats *machineStats
}

// machineStats counts what the state-machine test exercised, over all checks.
type machineStats struct {
	mu       sync.Mutex
	checks   int
	steps    int
	accepted map[string]int // by action
	refused  map[string]int // by sentinel
}

func (st *machineStats) count(action string, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.steps++
	if err == nil {
		st.accepted[action]++
		return
	}
	st.refused[fmt.Sprint(kindOf(err))]++
}

// testStateMachine runs the rapid state-machine test: each check opens a
// fresh store, then rapid draws a sequence of enqueues, claims, owner ops
// (with live, stale, expired and forged leases), cancels, system commands,
// maintenance passes and clock jumps, with repeated and reused request ids.
// Use -rapid.checks and -rapid.steps to run more.
func testStateMachine(t *testing.T, newStore func(*testing.T) store.Store) {
	stats := &machineStats{accepted: map[string]int{}, refused: map[string]int{}}
	rapid.Check(t, func(rt *rapid.T) {
		s := newStore(t)
		defer s.Close()
		mc := &machine{s: s, ctx: t.Context(), m: newModel(epoch), stats: stats}
		stats.mu.Lock()
		stats.checks++
		stats.mu.Unlock()
		rt.Repeat(mc.actions())
		mc.verify(rt)
	})
	t.Logf("rapid: %d checks (-rapid.checks=%s), %d steps (-rapid.steps=%s); accepted %v; refused %v",
		stats.checks, flagValue("rapid.checks"), stats.steps, flagValue("rapid.steps"), stats.accepted, stats.refused)
}

// actions maps rapid's action names to the machine's actions. rapid picks
// names uniformly, so an action listed under n names is drawn n times as
// often: owner operations most, since each needs a claimed job to matter.
func (mc *machine) actions() map[string]func(*rapid.T) {
	weighted := []struct {
		name   string
		weight int
		fn     func(*rapid.T)
	}{
		{"enqueue", 3, mc.enqueue},
		{"claim", 3, mc.claim},
		{"owner", 6, mc.owner},
		{"complete", 2, mc.complete},
		{"cancel", 1, mc.cancel},
		{"apply", 2, mc.apply},
		{"maintenance", 2, mc.maintain},
		{"clock", 2, mc.clock},
	}
	out := map[string]func(*rapid.T){"": mc.check}
	for _, w := range weighted {
		for i := range w.weight {
			out[fmt.Sprintf("%s.%d", w.name, i)] = w.fn
		}
	}
	return out
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return "?"
}

// at returns a pointer to a copy of the model's clock.
func (mc *machine) at() *time.Time {
	t := mc.m.now
	return &t
}

// pickJob draws one of the jobs, or now and then an id no job has. Before
// the first enqueue the action is skipped, and rapid draws another.
func (mc *machine) pickJob(t *rapid.T) string {
	if len(mc.m.ids) == 0 {
		t.Skip("no jobs yet")
	}
	if rapid.IntRange(0, 19).Draw(t, "unknown job") == 0 {
		return "no-such-job"
	}
	return rapid.SampledFrom(mc.m.ids).Draw(t, "job")
}

// pickLeased draws, most of the time, a job that holds a lease: the jobs
// owner operations are meant for.
func (mc *machine) pickLeased(t *rapid.T) string {
	var leased []string
	for _, id := range mc.m.ids {
		if mc.m.jobs[id].State.Leased() {
			leased = append(leased, id)
		}
	}
	if len(leased) == 0 || rapid.IntRange(0, 9).Draw(t, "any job") == 0 {
		return mc.pickJob(t)
	}
	return rapid.SampledFrom(leased).Draw(t, "leased job")
}

// pickLease draws the lease an owner presents: mostly the job's live one
// (or, for a job without one, the last one it had), else the job's last
// lease, any lease ever granted, a forged one, or none.
func (mc *machine) pickLease(t *rapid.T, id string) string {
	j := mc.m.jobs[id]
	switch rapid.IntRange(0, 19).Draw(t, "lease kind") {
	case 0, 1:
		return j.LastLeaseID
	case 2, 3:
		if len(mc.m.leases) > 0 {
			return rapid.SampledFrom(mc.m.leases).Draw(t, "old lease")
		}
	case 4:
		return "lease-forged"
	case 5:
		return ""
	}
	if j.LeaseID == "" {
		return j.LastLeaseID
	}
	return j.LeaseID
}

// pickRequest draws a request id: mostly none, else a fresh one or one
// already used (on this job or another).
func (mc *machine) pickRequest(t *rapid.T) string {
	switch rapid.IntRange(0, 5).Draw(t, "request kind") {
	case 0:
		r := fmt.Sprintf("req-%d", len(mc.m.requests)+1)
		mc.m.requests = append(mc.m.requests, r)
		return r
	case 1:
		if len(mc.m.requests) > 0 {
			return rapid.SampledFrom(mc.m.requests).Draw(t, "reused request")
		}
	}
	return ""
}

// pickRev draws an ExpectedRev: none, the job's, or a wrong one.
func (mc *machine) pickRev(t *rapid.T, id string) *int64 {
	rev := mc.m.jobs[id].Rev
	switch rapid.IntRange(0, 5).Draw(t, "expected rev") {
	case 0:
		return &rev
	case 1:
		rev++
		return &rev
	}
	return nil
}
