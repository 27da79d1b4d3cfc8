package cron_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestServiceOncePerTick runs three services on one database, all passing
// at every tick at once (as during a leader failover, when two nodes may
// both believe they lead): each tick is enqueued exactly once.
func TestServiceOncePerTick(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			stores := b.open(t, 3)
			ctx := t.Context()
			decl, err := cron.Declare(ctx, stores[0], store.Schedule{Name: "report", Expr: "* * * * *", Kind: "report", Tenant: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			// The services' clock starts at the schedule's creation (the store's clock).
			ck := clock.NewManual(decl[0].CreatedAt)
			var services []*cron.Service
			for _, s := range stores {
				sv, err := cron.NewService(s, &cron.Config{Clock: ck})
				if err != nil {
					t.Fatal(err)
				}
				services = append(services, sv)
			}
			const ticks = 5
			for range ticks {
				ck.Advance(time.Minute)
				var wg sync.WaitGroup
				for _, sv := range services {
					wg.Go(func() {
						if _, err := sv.Pass(ctx); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			jobs := listJobs(t, stores[1])
			if len(jobs) != ticks {
				t.Fatalf("%d jobs for %d ticks", len(jobs), ticks)
			}
			keys := map[string]bool{}
			for _, j := range jobs {
				if j.Kind != "report" || j.Tenant != "acme" || j.State != lifecycle.Queued || keys[j.DedupeKey] {
					t.Fatalf("job %+v", j)
				}
				keys[j.DedupeKey] = true
			}
			verifyClean(t, stores[2])
		})
	}
}

// TestServiceMissedTicks: after a long outage the latest missed tick runs
// once by default; a paused schedule fires nothing and, resumed, does not
// fire the ticks of its pause.
func TestServiceMissedTicks(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, 1)[0]
			ctx := t.Context()
			decl, err := cron.Declare(ctx, s,
				store.Schedule{Name: "latest", Expr: "*/5 * * * *", Kind: "k"},
				store.Schedule{Name: "all", Expr: "*/5 * * * *", Kind: "k", Missed: store.MissedAll},
				store.Schedule{Name: "paused", Expr: "*/5 * * * *", Kind: "k", Paused: true})
			if err != nil {
				t.Fatal(err)
			}
			ck := clock.NewManual(decl[0].CreatedAt)
			sv, err := cron.NewService(s, &cron.Config{Clock: ck})
			if err != nil {
				t.Fatal(err)
			}
			ck.Advance(21 * time.Minute) // four or five ticks came due while nothing ran
			if _, err := sv.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			latest := countBy(t, s, "latest")
			all := countBy(t, s, "all")
			if latest != 1 || all < 4 || countBy(t, s, "paused") != 0 {
				t.Fatalf("latest %d, all %d, paused %d: want 1, 4 or more, 0", latest, all, countBy(t, s, "paused"))
			}
			ss, _ := store.Schedules(s)
			if _, err := ss.SchedulePause(ctx, "paused", false); err != nil {
				t.Fatal(err)
			}
			if _, err := sv.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			if n := countBy(t, s, "paused"); n != 0 {
				t.Fatalf("a resumed schedule fired %d ticks of its pause", n)
			}
			ck.Advance(5 * time.Minute)
			if _, err := sv.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			if n := countBy(t, s, "paused"); n != 1 {
				t.Fatalf("a resumed schedule fired %d jobs at its next tick, want 1", n)
			}
			verifyClean(t, s)
		})
	}
}

// TestDeclareRefuses: a bad schedule writes nothing.
func TestDeclareRefuses(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, 1)[0]
			_, err := cron.Declare(t.Context(), s,
				store.Schedule{Name: "good", Expr: "@daily", Kind: "k"},
				store.Schedule{Name: "bad", Expr: "@sometimes", Kind: "k"})
			if !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("err %v, want a validation error", err)
			}
			ss, _ := store.Schedules(s)
			if got, err := ss.ScheduleList(t.Context()); err != nil || len(got) != 0 {
				t.Fatalf("schedules %v (%v), want none", got, err)
			}
		})
	}
}

func listJobs(t *testing.T, s store.Store) []lifecycle.Job {
	t.Helper()
	jobs, err := s.JobList(context.Background(), &store.JobListParams{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].DedupeKey < jobs[k].DedupeKey })
	return jobs
}

// countBy counts the jobs of schedule name.
func countBy(t *testing.T, s store.Store, name string) int {
	n := 0
	for _, j := range listJobs(t, s) {
		if len(j.DedupeKey) > len(name)+6 && j.DedupeKey[:len(name)+6] == "cron:"+name+":" {
			n++
		}
	}
	return n
}

func verifyClean(t *testing.T, s store.Store) {
	t.Helper()
	rep, err := s.Verify(t.Context(), &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) > 0 {
		t.Fatalf("verify: %+v", rep.Findings)
	}
}
