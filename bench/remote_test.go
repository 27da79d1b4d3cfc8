package bench_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestRunRemote runs the remote benchmark, embedded phase first, on a few
// jobs against a real server on SQLite, and checks that its report is
// consistent: every job of each phase ran exactly once, verify is clean,
// and both phases' figures are there. It never asserts a speed.
func TestRunRemote(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h, err := server.New(server.Config{Store: s, NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	rep, err := bench.RunRemote(t.Context(), bench.RemoteConfig{
		URL: srv.URL, Pools: 3, Slots: 2, Jobs: 60, Batch: 20, Rate: 10_000, Idle: -1,
		Verify: func(ctx context.Context) (store.VerifyReport, error) { return s.Verify(ctx, &store.VerifyParams{}) },
		// The embedded pool works straight on the same database file.
		Embedded: func(ctx context.Context) (store.Store, error) { return sqlite.OpenStore(ctx, path, sqlite.Options{}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.Verified || rep.Runs != 60 {
		t.Fatalf("report %+v: want every job once, verify clean", rep)
	}
	e := rep.Embedded
	if e == nil || !e.ExactlyOnce || e.Runs != 60 || e.Handlers != 6 || e.WorkedRate <= 0 || e.RemoteShare <= 0 || e.ClientCPUPerJobUS < 0 {
		t.Fatalf("embedded phase %+v: want its 60 jobs once by 6 handlers, with its rates", e)
	}
	if rep.WorkedRate <= 0 || rep.P99MS < rep.P50MS {
		t.Fatalf("remote phase: worked %v/s, p50 %v p99 %v", rep.WorkedRate, rep.P50MS, rep.P99MS)
	}
}
