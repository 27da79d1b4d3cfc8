package stint_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// BenchmarkWorkNoop enqueues b.N no-op jobs, then times a pool with the
// default configuration working all of them, and reports jobs/s. Run with a
// fixed count, for example:
//
//	go test -run '^$' -bench WorkNoop -benchtime 20000x .
//
// The PostgreSQL variant runs when STINT_TEST_DATABASE_URL is set.
func BenchmarkWorkNoop(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		s, err := sqlite.OpenStore(context.Background(), filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchWork(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		if os.Getenv(pgtest.EnvURL) == "" {
			b.Skipf("%s is not set", pgtest.EnvURL)
		}
		benchWork(b, pgtest.NewStore(b))
	})
}

func benchWork(b *testing.B, s store.Store) {
	ctx := context.Background()
	c, err := stint.NewClient(s, stint.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	for left := b.N; left > 0; {
		specs := make([]stint.Spec, min(left, store.MaxBatch))
		for i := range specs {
			specs[i] = stint.Spec{Kind: "noop"}
		}
		if _, err := c.EnqueueMany(ctx, specs); err != nil {
			b.Fatal(err)
		}
		left -= len(specs)
	}
	mux := stint.NewMux()
	mux.HandleFunc("noop", func(context.Context, *stint.Job) error { return nil })
	p, err := stint.NewPool(s, mux, stint.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for p.Stats().Succeeded < int64(b.N) {
		<-tick.C
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := p.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkPoolOverhead works b.N no-op jobs from an in-memory stand-in for
// a store that does no I/O: the ceiling the pool's own machinery (claims,
// goroutines, heartbeat bookkeeping, batched completions) puts on
// throughput, apart from any database.
func BenchmarkPoolOverhead(b *testing.B) {
	s := &memStore{queued: b.N}
	mux := stint.NewMux()
	mux.HandleFunc("noop", func(context.Context, *stint.Job) error { return nil })
	p, err := stint.NewPool(s, mux, stint.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for p.Stats().Succeeded < int64(b.N) {
		<-tick.C
	}
	elapsed := time.Since(start)
	b.StopTimer()
	_ = p.Stop(ctx)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
}

// memStore hands out queued no-op jobs and accepts their completions; the
// pool calls nothing else on a run without failures.
type memStore struct {
	store.Store // nil: any other method panics
	mu          sync.Mutex
	queued      int
	next        int
}

func (m *memStore) JobClaim(_ context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	m.mu.Lock()
	n := min(p.Limit, m.queued)
	m.queued -= n
	first := m.next
	m.next += n
	m.mu.Unlock()
	jobs := make([]store.Job, n)
	for i := range jobs {
		id := strconv.Itoa(first + i)
		jobs[i] = store.Job{ID: id, Kind: "noop", Queue: "default", State: stint.Running, Attempt: 1, MaxAttempts: 3, LeaseID: "lease-" + id}
	}
	return jobs, nil
}

func (m *memStore) JobComplete(_ context.Context, ps []store.JobCompleteParams) ([]store.Result, error) {
	return make([]store.Result, len(ps)), nil
}

func (m *memStore) Wakeups() (<-chan string, func()) { return make(chan string), func() {} }
