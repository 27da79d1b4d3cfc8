package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestKindRateLimit: a kind's rate limit holds across queues within one
// window, leaves other kinds alone, and resets in the next window.
func TestKindRateLimit(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			var specs []lifecycle.Spec
			for range 4 {
				specs = append(specs, lifecycle.Spec{Kind: "sms", Queue: "a"}, lifecycle.Spec{Kind: "sms", Queue: "b"}, lifecycle.Spec{Kind: "mail", Queue: "a"})
			}
			if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
				t.Fatal(err)
			}
			three, minute := 3, time.Minute
			if _, err := qs.QueueLimit(ctx, store.KindLimitName("sms"), store.QueueLimits{RateLimit: &three, RateInterval: &minute}); err != nil {
				t.Fatal(err)
			}
			one := 1
			if _, err := qs.QueueLimit(ctx, store.KindLimitName("sms"), store.QueueLimits{MaxRunning: &one}); !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("a kind took a concurrency limit: %v", err)
			}
			if _, err := qs.QueueLimit(ctx, store.KindLimitName("bad kind"), store.QueueLimits{RateLimit: &three, RateInterval: &minute}); !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("a bad kind name was taken: %v", err)
			}
			t0 := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
			claimAt := func(d time.Duration) map[string]int {
				at := t0.Add(d)
				jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"a", "b"}, Limit: 100, LeaseTTL: time.Hour, Start: true, Now: &at})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]int{}
				for _, j := range jobs {
					got[j.Kind]++
				}
				return got
			}
			if got := claimAt(0); got["sms"] != 3 || got["mail"] != 4 {
				t.Fatalf("first window claimed %v, want 3 sms and every mail", got)
			}
			if got := claimAt(59 * time.Second); got["sms"] != 0 {
				t.Fatalf("claimed %v more in the same window, want no sms", got)
			}
			if got := claimAt(time.Minute); got["sms"] != 3 {
				t.Fatalf("next window claimed %v, want 3 sms", got)
			}
			verifyClean(t, s)
		})
	}
}
