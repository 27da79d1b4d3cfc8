package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testHistory checks the history read from the job events: outcomes,
// queue entries and exits, pickup waits and run times per queue and
// minute, and the queued counts the depth walks back from.
func testHistory(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("counts_and_latencies", func(t *testing.T) { t.Parallel(); testHistoryCounts(t, newStore) })
	t.Run("validation", func(t *testing.T) { t.Parallel(); testHistoryValidation(t, newStore) })
}

func inQueue(q string) specOpt { return func(s *lifecycle.Spec, _ time.Time) { s.Queue = q } }

// bucketOf is the LatencyBounds bucket of d.
func bucketOf(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	for i, b := range store.LatencyBounds {
		if ms < b {
			return i
		}
	}
	return len(store.LatencyBounds)
}

func testHistoryCounts(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	hr, err := store.HistoryOf(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store reads no history")
	}
	h.ok("history", err)
	since := h.now
	// a: waits 5s queued (enqueue, 4s, the claim's tick), runs 10s.
	a := h.enqueue(inQueue("hist-a"))
	h.advance(4 * time.Second)
	h.claim(&a)
	h.start(a)
	h.advance(9 * time.Second)
	h.complete(a)
	// b: fails its first of two attempts (retrying); c: its only one (dead).
	b := h.enqueue(inQueue("hist-a"), maxAttempts(2))
	h.claim(&b)
	h.start(b)
	h.fail(b, "boom")
	c := h.enqueue(inQueue("hist-b"), maxAttempts(1))
	h.claim(&c)
	h.start(c)
	h.fail(c, "boom")
	h.enqueue(inQueue("hist-b")) // stays queued

	got, err := hr.HistoryRead(h.ctx, since)
	h.ok("history read", err)
	type sums struct{ succeeded, failed, dead, entered, left, pickups, runs int }
	byQueue := map[string]*sums{}
	pickup := map[string][]int{}
	run := map[string][]int{}
	var last time.Time
	for _, m := range got.Minutes {
		if m.Minute.Before(last) || m.Minute.Second() != 0 {
			t.Errorf("minute %s out of order or not a minute's start", m.Minute)
		}
		last = m.Minute
		s := byQueue[m.Queue]
		if s == nil {
			s = &sums{}
			byQueue[m.Queue] = s
			pickup[m.Queue] = make([]int, len(store.LatencyBounds)+1)
			run[m.Queue] = make([]int, len(store.LatencyBounds)+1)
		}
		s.succeeded += m.Succeeded
		s.failed += m.Failed
		s.dead += m.DeadLettered
		s.entered += m.Entered
		s.left += m.Left
		for i := range m.Pickup {
			pickup[m.Queue][i] += m.Pickup[i]
			run[m.Queue][i] += m.Run[i]
		}
	}
	if a := byQueue["hist-a"]; a == nil || *a != (sums{succeeded: 1, failed: 1, entered: 2, left: 2}) {
		t.Errorf("queue hist-a: %+v, want 1 succeeded, 1 failed, 2 entered and left", a)
	}
	if b := byQueue["hist-b"]; b == nil || *b != (sums{dead: 1, entered: 2, left: 1}) {
		t.Errorf("queue hist-b: %+v, want 1 dead-lettered, 2 entered, 1 left", b)
	}
	wantPickup := make([]int, len(store.LatencyBounds)+1)
	wantPickup[bucketOf(5*time.Second)]++
	wantPickup[bucketOf(time.Second)]++
	wantRun := make([]int, len(store.LatencyBounds)+1)
	wantRun[bucketOf(10*time.Second)]++
	wantRun[bucketOf(time.Second)]++
	if asJSON(pickup["hist-a"]) != asJSON(wantPickup) || asJSON(run["hist-a"]) != asJSON(wantRun) {
		t.Errorf("queue hist-a: pickups %v runs %v, want %v and %v", pickup["hist-a"], run["hist-a"], wantPickup, wantRun)
	}
	if got.Queued["hist-b"] != 1 || got.Queued["hist-a"] != 0 {
		t.Errorf("queued: %v, want hist-b 1", got.Queued)
	}
	// Nothing happened after the last event.
	later, err := hr.HistoryRead(h.ctx, h.now.Add(2*time.Minute))
	h.ok("history read later", err)
	if len(later.Minutes) != 0 {
		t.Errorf("history after the last event: %+v, want none", later.Minutes)
	}
}

func testHistoryValidation(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	hr, err := store.HistoryOf(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store reads no history")
	}
	h.ok("history", err)
	_, err = hr.HistoryRead(h.ctx, time.Now().Add(-store.MaxHistory-time.Hour))
	if !errors.Is(err, store.ErrValidation) {
		t.Errorf("a history of more than %s: %v, want a validation error", store.MaxHistory, err)
	}
}
