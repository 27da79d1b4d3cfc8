package storetest

import (
	"slices"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testReads checks JobList's filters and paging, and wake-ups.
func testReads(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("list_filters_and_pages", func(t *testing.T) { t.Parallel(); testList(t, newStore) })
	t.Run("list_validation", func(t *testing.T) { t.Parallel(); testListValidation(t, newStore) })
	t.Run("wakeups", func(t *testing.T) { t.Parallel(); testWakeups(t, newStore) })
}

func testList(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	byState := map[lifecycle.State]string{}
	var all []string
	for _, s := range lifecycle.States {
		f := h.build(s)
		byState[s] = f.ID
	}
	// build(Blocked) also creates the scheduled job of its run it depends on.
	jobs, err := h.s.JobList(h.ctx, &store.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	inState := map[lifecycle.State][]string{}
	for _, j := range jobs {
		all = append(all, j.ID)
		inState[j.State] = append(inState[j.State], j.ID)
	}
	slices.Sort(all)
	list := func(p store.JobListParams) []string {
		t.Helper()
		jobs, err := h.s.JobList(h.ctx, &p)
		if err != nil {
			t.Fatalf("list %+v: %v", p, err)
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		return ids
	}
	if got := list(store.JobListParams{}); asJSON(got) != asJSON(all) {
		t.Errorf("list all: %v, want every job ordered by id %v", got, all)
	}
	for s, id := range byState {
		if got := list(store.JobListParams{States: []lifecycle.State{s}}); !slices.Contains(got, id) || asJSON(got) != asJSON(inState[s]) {
			t.Errorf("list state %s: %v, want %v (with %s)", s, got, inState[s], id)
		}
	}
	two := list(store.JobListParams{States: []lifecycle.State{lifecycle.Queued, lifecycle.Running}})
	if len(two) != 2 {
		t.Errorf("list two states: %v", two)
	}
	q := h.get(byState[lifecycle.Running]).Queue
	if got := list(store.JobListParams{Queue: q}); len(got) != 1 || got[0] != byState[lifecycle.Running] {
		t.Errorf("list queue %s: %v", q, got)
	}
	if got := list(store.JobListParams{Kind: "no-such-kind"}); len(got) != 0 {
		t.Errorf("list unknown kind: %v", got)
	}
	var paged []string
	for after := ""; ; {
		page := list(store.JobListParams{AfterID: after, Limit: 4})
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1]
	}
	if asJSON(paged) != asJSON(all) {
		t.Errorf("paging by 4: %v, want %v", paged, all)
	}
}

func testListValidation(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	for _, p := range []store.JobListParams{
		{States: []lifecycle.State{"sleeping"}},
		{Limit: -1},
		{Limit: store.MaxBatch + 1},
	} {
		_, err := h.s.JobList(h.ctx, &p)
		rejected(t, err, store.ErrValidation)
	}
}

// testWakeups: a commit that makes jobs claimable in a queue tells this
// process's subscribers, by the time the call returns.
func testWakeups(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	ch, stop := h.s.Wakeups()
	defer stop()
	f := h.build(lifecycle.Queued)
	if !drained(ch, f.Queue) {
		t.Errorf("no wake-up for queue %s after an enqueue", f.Queue)
	}
	g := h.build(lifecycle.Running)
	h.release(g)
	drained(ch, "")
	h.system(g, lifecycle.Command{Op: lifecycle.OpRequeue})
	if !drained(ch, g.Queue) {
		t.Errorf("no wake-up for queue %s after a requeue", g.Queue)
	}
}

// drained empties ch without blocking and reports whether queue was in it.
func drained(ch <-chan string, queue string) bool {
	seen := false
	for {
		select {
		case q := <-ch:
			seen = seen || q == queue
		default:
			return seen
		}
	}
}
