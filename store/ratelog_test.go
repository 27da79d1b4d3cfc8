package store_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
)

// TestRateLog: the log keeps its starts in time order, merges starts at
// one time, forgets what left the interval, and reads back what it wrote;
// a damaged row is an error, never a zero count.
func TestRateLog(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	var l store.RateLog
	l = l.Add(t0, 2).Add(t0.Add(time.Second), 1).Add(t0.Add(time.Second), 2).Add(t0.Add(-time.Second), 1).Add(t0, 0)
	if got, want := l.String(), "1893553444000006:1,1893553445000006:2,1893553446000006:3"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
	if n := l.Count(); n != 6 {
		t.Errorf("count %d, want 6", n)
	}
	if n := l.Since(t0).Count(); n != 3 {
		t.Errorf("starts after t0: %d, want 3 (a start at t0 has left an interval that begins at t0)", n)
	}
	back, err := store.ParseRateLog(l.String())
	if err != nil || back.String() != l.String() {
		t.Errorf("read back %q (%v), want %q", back, err, l)
	}
	if empty, err := store.ParseRateLog(""); err != nil || empty != nil {
		t.Errorf("empty log: %v %v", empty, err)
	}
	for _, bad := range []string{"x", "1:0", "1:2,", "1", ":3"} {
		if _, err := store.ParseRateLog(bad); err == nil {
			t.Errorf("ParseRateLog(%q) took it", bad)
		}
	}
}
