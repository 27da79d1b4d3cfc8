package bench_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestRun runs the harness on a few hundred jobs and checks that its report
// is consistent: every job succeeded exactly once, and every figure is
// there. It never asserts a speed.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var s store.Store
			var probe bench.ServerCPU
			if backend == "sqlite" {
				var err error
				s, err = sqlite.OpenStore(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
			} else {
				d := pgtest.NewDriver(t, postgres.Options{})
				s = store.New(d, store.Options{})
				t.Cleanup(func() { _ = s.Close() })
				p, closeProbe, err := bench.PostgresCPU(t.Context(), pgtest.URL(t), postgres.ApplicationName(d.Schema()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(closeProbe)
				probe = p
			}
			var mu sync.Mutex
			phases := map[string]bench.Progress{}
			rep, err := bench.Run(t.Context(), s, bench.Config{
				Jobs: 500, Batch: 64, Producers: 3, LatencySamples: 20, CancelSamples: 3,
				Pool:      stint.Config{Logger: slog.New(slog.DiscardHandler)},
				ServerCPU: probe,
				Progress: func(p bench.Progress) {
					mu.Lock()
					phases[p.Phase] = p
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Check
			if !c.OK || len(c.Problems) > 0 {
				t.Fatalf("check failed: %+v", c)
			}
			if c.Jobs != 520 || c.Succeeded != 520 || c.FirstAttempt != 520 || c.HandlerRuns != 520 || c.Events != 4*520 || len(c.Findings) != 0 {
				t.Errorf("check %+v: want 520 jobs each succeeded once, 2080 events", c)
			}
			if rep.Enqueue.Jobs != 500 || rep.Enqueue.PerSecond <= 0 || rep.Enqueue.Batch != 64 || rep.Enqueue.Producers != 3 {
				t.Errorf("enqueue %+v", rep.Enqueue)
			}
			if rep.Work.Jobs != 500 || rep.Work.PerSecond <= 0 {
				t.Errorf("work %+v", rep.Work)
			}
			// CPU per job is reported for both phases (never judged: the
			// backends' figure may round to 0 on a short run).
			for _, c := range []*bench.CPU{rep.Enqueue.CPU, rep.Work.CPU} {
				if c == nil || c.ClientUSPerJob <= 0 || c.BackendsUSPerJob < 0 || c.ClusterUSPerJob < 0 {
					t.Errorf("cpu %+v: want the client's CPU per job of each phase", c)
				}
			}
			for name, c := range map[string]*bench.CPU{"pickup": rep.Pickup.CPU, "cancel": rep.Cancel.CPU, "check": rep.Check.CPU} {
				if c == nil || c.ClientUSPerJob <= 0 {
					t.Errorf("%s cpu %+v: want the client's CPU per sample or job", name, c)
				}
			}
			p := rep.Pickup
			if p.Samples != 20 || !(p.P50MS <= p.P95MS && p.P95MS <= p.P99MS && p.P99MS <= p.MaxMS) {
				t.Errorf("pickup %+v: want 20 samples, p50 <= p95 <= p99 <= max", p)
			}
			if c := rep.Cancel; c.Samples != 3 || !(c.P50MS <= c.P99MS && c.P99MS <= c.MaxMS) {
				t.Errorf("cancel %+v: want 3 samples, p50 <= p99 <= max", c)
			}
			if rep.Memory.PeakHeapBytes == 0 || rep.Memory.PeakGoBytes < rep.Memory.PeakHeapBytes {
				t.Errorf("memory %+v", rep.Memory)
			}
			if rep.Pool.Queues["default"] != stint.DefaultMaxWorkers || rep.Pool.FetchLimit != stint.DefaultFetchLimit {
				t.Errorf("pool %+v: want the default configuration", rep.Pool)
			}
			for _, phase := range []string{"enqueue", "work", "pickup", "cancel"} {
				if got := phases[phase]; got.Done != got.Total || got.Total == 0 {
					t.Errorf("the last progress of %s is %+v, want done == total", phase, got)
				}
			}
		})
	}
}

// TestRunFindsStrayJobs checks that the check notices a store that holds
// more jobs of the kind than the benchmark enqueued.
func TestRunFindsStrayJobs(t *testing.T) {
	t.Parallel()
	s, err := sqlite.OpenStore(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: bench.DefaultKind, Queue: "elsewhere"}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Run(t.Context(), s, bench.Config{Jobs: 10, LatencySamples: -1, CancelSamples: -1, Pool: stint.Config{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Check.OK || len(rep.Check.Problems) == 0 {
		t.Errorf("check passed on a store with a stray job: %+v", rep.Check)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  bench.Config
	}{
		{"negative jobs", bench.Config{Jobs: -1}},
		{"batch too large", bench.Config{Batch: store.MaxBatch + 1}},
		{"negative producers", bench.Config{Producers: -2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := bench.Run(t.Context(), nil, tt.cfg); err == nil {
				t.Error("Run accepted the config")
			}
		})
	}
}
