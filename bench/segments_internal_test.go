package bench

import (
	"testing"
	"time"
)

// TestSegments: the first segment ends at the first sample past
// SegmentJobs, the last begins at the last sample before total-SegmentJobs,
// and a phase shorter than two segments has none.
func TestSegments(t *testing.T) {
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return began.Add(time.Duration(s * float64(time.Second))) }
	var e segmentEnds
	total := int64(1_000_000)
	for i, done := range []int64{0, 50_000, 100_000, 500_000, 900_000, 950_000, 1_000_000} {
		e.see(done, total, at(float64(i*10)))
	}
	g := e.segments(began, at(60))
	if g == nil {
		t.Fatal("no segments for a phase of 1,000,000 jobs")
	}
	// The first 100,000 jobs took 20 s; the last began at 40 s and ended at 60 s.
	if g.First != 5_000 || g.Last != 5_000 || g.LastOverFirst != 1 {
		t.Fatalf("segments %+v, want 5,000 jobs/s for both", g)
	}
	var short segmentEnds
	short.see(150_000, 150_000, at(1))
	if short.segments(began, at(1)) != nil {
		t.Fatal("a phase of 150,000 jobs has no burn-down segments")
	}
}
