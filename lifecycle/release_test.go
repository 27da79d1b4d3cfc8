package lifecycle_test

import (
	"testing"

	"github.com/stint-dev/stint/lifecycle"
)

// TestReleaseCostsNoRetry: a release by the owner (a graceful stop) ends an
// attempt without using the retry budget, so a job released on its last
// attempt is requeued, and released again and again it still runs; a lease
// lost by expiry, a fail and a timeout do count (issue 13, item 2).
func TestReleaseCostsNoRetry(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.MaxAttempts = 2
	w := enqueue(t, spec)
	for i := range 5 { // more releases than max_attempts
		lease := w.claim(t)
		w.must(t, ownerCmd(lifecycle.OpStart, lease))
		w.must(t, ownerCmd(lifecycle.OpStall, lease))
		w.must(t, systemCmd(lifecycle.OpRequeue))
		if w.job.State != lifecycle.Queued || w.job.Failures != 0 || w.job.Attempt != i+1 {
			t.Fatalf("after release %d: %s, attempt %d, failures %d; want queued, attempt %d, failures 0", i+1, w.job.State, w.job.Attempt, w.job.Failures, i+1)
		}
	}
	lease := w.claim(t)
	w.must(t, ownerCmd(lifecycle.OpStart, lease))
	w.must(t, failCmd(lease, "network", lifecycle.ClassTransient))
	if w.job.State != lifecycle.Retrying || w.job.Failures != 1 {
		t.Fatalf("first failure: %s, failures %d; want retrying, 1", w.job.State, w.job.Failures)
	}
	w.mustAt(t, w.job.RunAt, systemCmd(lifecycle.OpPromote))
	lease = w.claim(t)
	w.must(t, ownerCmd(lifecycle.OpStart, lease))
	w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
	w.must(t, systemCmd(lifecycle.OpRequeue))
	if w.job.State != lifecycle.DeadLettered || w.job.ReasonCode != lifecycle.ReasonLeaseExpired || w.job.Failures != 2 || w.job.Attempt != 7 {
		t.Fatalf("a lost lease on the last retry: %s (%s), failures %d, attempt %d; want dead_lettered (lease_expired), 2, 7",
			w.job.State, w.job.ReasonCode, w.job.Failures, w.job.Attempt)
	}
	if err := lifecycle.Verify(w.job, w.events); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}
