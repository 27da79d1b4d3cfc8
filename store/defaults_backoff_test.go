package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestSpecDefaultsBackoff: a queue's and a kind's default backoff, set in
// the database, schedule the retries of their jobs' failed and timed-out
// attempts inside the store, field by field (the kind's before the
// queue's, stint's for the rest), on both backends; a fail that names its
// own backoff or a retry-after keeps it; a bad backoff is refused and
// changes nothing.
func TestSpecDefaultsBackoff(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			base, hour, three := 10*time.Second, time.Hour, 3.0
			if _, err := qs.QueueLimit(ctx, "mail", store.QueueLimits{DefaultBackoffBase: &base, DefaultBackoffFactor: &three, DefaultBackoffMax: &hour}); err != nil {
				t.Fatal(err)
			}
			kindBase := 20 * time.Second
			if _, err := qs.QueueLimit(ctx, store.KindLimitName("send"), store.QueueLimits{DefaultBackoffBase: &kindBase}); err != nil {
				t.Fatal(err)
			}
			neg, short, half := -time.Second, 5*time.Second, 0.5
			for name, l := range map[string]store.QueueLimits{
				"negative base":      {DefaultBackoffBase: &neg},
				"negative max":       {DefaultBackoffMax: &neg},
				"max below base":     {DefaultBackoffMax: &short},
				"max below its base": {DefaultBackoffBase: &hour, DefaultBackoffMax: &base},
				"factor below 1":     {DefaultBackoffFactor: &half},
				"max below stint's":  {DefaultBackoffBase: new(time.Duration), DefaultBackoffMax: &[]time.Duration{time.Millisecond}[0]},
				"and a good max too": {DefaultMaxAttempts: &[]int{4}[0], DefaultBackoffBase: &neg},
			} {
				if _, err := qs.QueueLimit(ctx, "mail", l); !errors.Is(err, lifecycle.ErrValidation) {
					t.Errorf("%s: taken (%v)", name, err)
				}
			}
			set, err := qs.QueueSettingsList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range set {
				if q.Name == "mail" && q.Defaults != (store.SpecDefaults{BackoffBase: base, BackoffFactor: three, BackoffMax: hour}) {
					t.Errorf("a refused change changed the queue's defaults: %+v", q.Defaults)
				}
			}

			t0 := time.Now().UTC().Truncate(time.Second)
			specs := []lifecycle.Spec{
				{Kind: "send", Queue: "mail"},                        // the kind's base, the queue's factor and max
				{Kind: "other", Queue: "mail"},                       // the queue's
				{Kind: "send", Queue: "plain"},                       // the kind's base, stint's rest
				{Kind: "other", Queue: "plain"},                      // stint's
				{Kind: "send", Queue: "mail"},                        // the worker names its own
				{Kind: "other", Queue: "mail"},                       // a retry-after
				{Kind: "other", Queue: "mail", Timeout: time.Second}, // timed out by the store
			}
			res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs, Now: &t0})
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"mail", "plain"}, Limit: 10, LeaseTTL: time.Hour, Now: &t0})
			if err != nil || len(jobs) != len(specs) {
				t.Fatalf("claim: %d %v", len(jobs), err)
			}
			lease := map[string]string{}
			for _, j := range jobs {
				lease[j.ID] = j.LeaseID
				if _, err := s.JobStart(ctx, &store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: &t0}); err != nil {
					t.Fatal(err)
				}
			}
			t1 := t0.Add(2 * time.Second)
			own := lifecycle.Backoff{Base: time.Minute, Factor: 2, Max: time.Minute}
			want := []lifecycle.Backoff{
				{Base: kindBase, Factor: three, Max: hour},
				{Base: base, Factor: three, Max: hour},
				{Base: kindBase},
				{},
				own,
			}
			for i, w := range want {
				id := res[i].Job.ID
				p := &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: id, LeaseID: lease[id], Now: &t1}, Error: lifecycle.JobError{Code: "boom", Message: "boom"}}
				if i == 4 {
					p.Backoff = own
				}
				j, err := s.JobFail(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if at := t1.Add(w.Delay(id, 1)).Truncate(time.Microsecond); j.State != lifecycle.Retrying || !j.RunAt.Equal(at) {
					t.Errorf("job %d: %s, retry at %s, want %s (backoff %+v)", i, j.State, j.RunAt, at, w.OrDefault())
				}
			}
			id := res[5].Job.ID
			j, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: id, LeaseID: lease[id], Now: &t1}, Error: lifecycle.JobError{Code: "slow", Message: "later"}, RetryAfter: 7 * time.Second})
			if err != nil || !j.RunAt.Equal(t1.Add(7*time.Second)) {
				t.Errorf("a retry-after: retry at %s (%v), want %s", j.RunAt, err, t1.Add(7*time.Second))
			}
			if n, err := s.JobTimeOutDue(ctx, &store.MaintainParams{Now: &t1}); err != nil || n != 1 {
				t.Fatalf("time out: %d %v", n, err)
			}
			id = res[6].Job.ID
			if j, err = s.JobGet(ctx, id); err != nil {
				t.Fatal(err)
			}
			if at := t1.Add(lifecycle.Backoff{Base: base, Factor: three, Max: hour}.Delay(id, 1)).Truncate(time.Microsecond); j.State != lifecycle.Retrying || !j.RunAt.Equal(at) {
				t.Errorf("timed out: %s, retry at %s, want %s", j.State, j.RunAt, at)
			}
			verifyClean(t, s)
		})
	}
}
