package store_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestRateLimitAnyWindow: claims of random sizes at random times (rapid),
// under a queue's or a kind's rate limit of N per interval, on both
// backends. Each claim starts exactly what a sliding window allows (its
// size, the jobs left, and N less the starts of the interval ending at its
// time, whichever is least), so no interval of that length, wherever it
// begins, holds more than N starts. Fixed windows let up to 2N through
// across a boundary: N just before it, N just after.
func TestRateLimitAnyWindow(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			// Each case has its own queue and kind, and later times than the
			// case before, on one store.
			at := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
			round := 0
			rapid.Check(t, func(rt *rapid.T) {
				round++
				queue, kind := fmt.Sprintf("rate%d", round), fmt.Sprintf("kind%d", round)
				limit := rapid.IntRange(1, 5).Draw(rt, "limit")
				interval := time.Duration(rapid.IntRange(1, 10).Draw(rt, "interval_s")) * time.Second
				name := queue
				if rapid.Bool().Draw(rt, "by_kind") {
					name = store.KindLimitName(kind)
				}
				if _, err := qs.QueueLimit(ctx, name, store.QueueLimits{RateLimit: &limit, RateInterval: &interval}); err != nil {
					rt.Fatal(err)
				}
				left := 40
				specs := make([]lifecycle.Spec, left)
				for i := range specs {
					specs[i] = lifecycle.Spec{Kind: kind, Queue: queue}
				}
				if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
					rt.Fatal(err)
				}
				var starts []time.Time
				for i := range rapid.IntRange(1, 12).Draw(rt, "claims") {
					at = at.Add(time.Duration(rapid.IntRange(0, int(2*interval/time.Millisecond)).Draw(rt, fmt.Sprintf("gap_ms_%d", i))) * time.Millisecond)
					size := rapid.IntRange(1, 6).Draw(rt, fmt.Sprintf("size_%d", i))
					now := at
					jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: size, LeaseTTL: time.Hour, Start: true, Now: &now})
					if err != nil {
						rt.Fatal(err)
					}
					used := 0
					for _, st := range starts {
						if st.After(at.Add(-interval)) {
							used++
						}
					}
					if want := min(size, left, limit-used); len(jobs) != want {
						rt.Fatalf("claim %d of %d at +%s started %d, want %d (%d started in the interval ending then, limit %d per %s)",
							i, size, at.Sub(starts0(starts, at)), len(jobs), want, used, limit, interval)
					}
					left -= len(jobs)
					for range jobs {
						starts = append(starts, at)
					}
				}
				for i, from := range starts {
					n := 0
					for _, st := range starts[i:] {
						if st.Before(from.Add(interval)) {
							n++
						}
					}
					if n > limit {
						rt.Fatalf("%d starts in the %s from %s: the limit is %d", n, interval, from.Format(time.RFC3339Nano), limit)
					}
				}
				at = at.Add(time.Hour)
			})
			verifyClean(t, s)
		})
	}
}

// starts0 is the first start, or at when there is none: the origin the
// failure message counts from.
func starts0(starts []time.Time, at time.Time) time.Time {
	if len(starts) == 0 {
		return at
	}
	return starts[0]
}
