package bench_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestSoak runs a soak of a few seconds on each backend and checks that it
// completes and reports every interval, the held horizon and the storage
// figures, and draws its chart. It never asserts a speed.
func TestSoak(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var s store.Store
			var obs bench.Observer
			var err error
			if backend == "sqlite" {
				path := filepath.Join(t.TempDir(), "stint.db")
				if s, err = sqlite.OpenStore(t.Context(), path, sqlite.Options{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				obs = bench.SQLiteObserver(path)
			} else {
				d := pgtest.NewDriver(t, postgres.Options{})
				s = store.New(d, store.Options{})
				t.Cleanup(func() { _ = s.Close() })
				if obs, err = bench.PostgresObserver(t.Context(), pgtest.URL(t), d.Schema()); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { _ = obs.Close() })
			var seen int
			rep, err := bench.Soak(t.Context(), s, bench.SoakConfig{
				Rate: 200, Duration: 1500 * time.Millisecond, Interval: 250 * time.Millisecond,
				Pool: stint.Config{Logger: slog.New(slog.DiscardHandler)}, Observer: obs,
				Progress: func(bench.SoakInterval) { seen++ },
			})
			if err != nil {
				t.Fatal(err)
			}
			// A slow machine makes fewer, longer intervals: want one at least.
			if len(rep.Intervals) == 0 || seen != len(rep.Intervals) {
				t.Fatalf("%d intervals (%d reported as they closed), want every interval reported", len(rep.Intervals), seen)
			}
			held, enqueued := 0, 0
			for _, iv := range rep.Intervals {
				if iv.Held {
					held++
				}
				enqueued += iv.Enqueued
				if iv.Storage.Bytes() == 0 {
					t.Errorf("interval %+v: no storage figures", iv)
				}
				if backend == "postgres" && len(iv.Storage.Relations) == 0 {
					t.Errorf("interval %+v: no relations", iv)
				}
			}
			if held == 0 || enqueued == 0 || rep.HeldFrom <= 0 || rep.HeldUntil <= rep.HeldFrom {
				t.Errorf("report %+v: want some held intervals and some jobs", rep)
			}
			for _, format := range []string{"png", "svg"} {
				var buf bytes.Buffer
				if err := bench.WriteSoakChart(&buf, rep, format, "soak"); err != nil || buf.Len() == 0 {
					t.Errorf("%s chart: %d bytes, %v", format, buf.Len(), err)
				}
			}
		})
	}
}

func TestSoakConfigErrors(t *testing.T) {
	t.Parallel()
	obs := bench.SQLiteObserver(filepath.Join(t.TempDir(), "none.db"))
	tests := []struct {
		name string
		cfg  bench.SoakConfig
	}{
		{"no observer", bench.SoakConfig{}},
		{"negative rate", bench.SoakConfig{Rate: -1, Observer: obs}},
		{"duration under three intervals", bench.SoakConfig{Duration: time.Second, Interval: time.Second, Observer: obs}},
		{"tiny interval", bench.SoakConfig{Interval: time.Millisecond, Observer: obs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := bench.Soak(context.Background(), nil, tt.cfg); err == nil {
				t.Error("Soak accepted the config")
			}
		})
	}
}
