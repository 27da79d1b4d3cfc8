package postgres

import (
	"testing"
	"time"
)

// TestAnalyzerBacksOff: checks that find nothing come at doubling
// intervals up to the cap; one that finds a stale table brings the next
// back to a second.
func TestAnalyzerBacksOff(t *testing.T) {
	t.Parallel()
	var a analyzer
	now := time.Unix(0, 0)
	var gaps []time.Duration
	last := now
	for range 8 {
		for !a.due(now) {
			now = now.Add(100 * time.Millisecond)
		}
		gaps = append(gaps, now.Sub(last))
		last = now
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("gaps between checks %v, want %v", gaps, want)
		}
	}
	a.found(now)
	if a.due(now.Add(999*time.Millisecond)) || !a.due(now.Add(time.Second)) {
		t.Fatal("after a check that found a stale table, the next is due a second later")
	}
}
