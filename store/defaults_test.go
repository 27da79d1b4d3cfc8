package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestSpecDefaults: a queue's and a kind's job defaults, set in the
// database, are applied by every enqueue inside the store (a plain enqueue,
// a run's jobs, a cron tick), field by field after the spec's own and the
// kind's before the queue's, on both backends; a bad default is refused and
// changes nothing.
func TestSpecDefaults(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{})
			qs, _ := store.Queues(s)
			ctx := t.Context()
			five, seven, ten, two := 5, 7, 10, 2
			minute, hour := time.Minute, time.Hour
			if _, err := qs.QueueLimit(ctx, "mail", store.QueueLimits{DefaultMaxAttempts: &five, DefaultTimeout: &minute, DefaultPriority: &ten}); err != nil {
				t.Fatal(err)
			}
			if _, err := qs.QueueLimit(ctx, store.KindLimitName("send"), store.QueueLimits{DefaultMaxAttempts: &seven}); err != nil {
				t.Fatal(err)
			}
			bad := -1
			if _, err := qs.QueueLimit(ctx, "mail", store.QueueLimits{DefaultMaxAttempts: &bad}); !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("a negative default was taken: %v", err)
			}
			type want struct {
				attempts, priority int
				timeout            time.Duration
			}
			check := func(what string, j lifecycle.Job, w want) {
				t.Helper()
				if j.MaxAttempts != w.attempts || j.Priority != w.priority || j.Timeout.D() != w.timeout {
					t.Errorf("%s: max_attempts %d priority %d timeout %s, want %d %d %s", what, j.MaxAttempts, j.Priority, j.Timeout.D(), w.attempts, w.priority, w.timeout)
				}
			}
			specs := []lifecycle.Spec{
				{Kind: "send", Queue: "mail"},  // kind's attempts, queue's rest
				{Kind: "other", Queue: "mail"}, // the queue's
				{Kind: "send", Queue: "mail", MaxAttempts: 2, Priority: -3, Timeout: time.Hour}, // its own
				{Kind: "send"},  // the kind's, in any queue
				{Kind: "other"}, // stint's
			}
			res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs})
			if err != nil {
				t.Fatal(err)
			}
			if specs[0].MaxAttempts != 0 {
				t.Error("the enqueue changed the caller's specs")
			}
			check("kind and queue", res[0].Job, want{7, 10, minute})
			check("queue", res[1].Job, want{5, 10, minute})
			check("its own", res[2].Job, want{two, -3, hour})
			check("kind", res[3].Job, want{7, 0, 0})
			check("stint's", res[4].Job, want{lifecycle.DefaultMaxAttempts, 0, 0})

			run, err := s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: "r"}, Jobs: []store.RunJobSpec{{Name: "a", Spec: lifecycle.Spec{Kind: "send", Queue: "mail"}}}})
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.JobGet(ctx, run.Jobs[0].JobID)
			if err != nil {
				t.Fatal(err)
			}
			check("a run's job", j, want{7, 10, minute})

			ss, err := store.Schedules(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.SchedulePut(ctx, store.Schedule{Name: "tick", Expr: "@hourly", Kind: "other", Queue: "mail"}); err != nil {
				t.Fatal(err)
			}
			fired, ok, err := ss.ScheduleFire(ctx, &store.ScheduleFireParams{Name: "tick", Tick: time.Now().UTC().Truncate(time.Hour), Enqueue: true})
			if err != nil || !ok {
				t.Fatalf("fire: %v %v", ok, err)
			}
			check("a cron tick's job", fired.Job, want{5, 10, minute})

			zero := 0
			if _, err := qs.QueueLimit(ctx, "mail", store.QueueLimits{DefaultMaxAttempts: &zero, DefaultTimeout: new(time.Duration), DefaultPriority: &zero}); err != nil {
				t.Fatal(err)
			}
			res, err = s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "other", Queue: "mail"}}})
			if err != nil {
				t.Fatal(err)
			}
			check("after the queue's were removed", res[0].Job, want{lifecycle.DefaultMaxAttempts, 0, 0})
			verifyClean(t, s)
		})
	}
}
