package stint_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// failOnce is a handler whose first call fails.
func failOnce() stint.Handler {
	var calls atomic.Int32
	return stint.HandlerFunc(func(context.Context, *stint.Job) error {
		if calls.Add(1) == 1 {
			return errors.New("try again")
		}
		return nil
	})
}

// A pool runs the maintenance services by default: a retry becomes due and
// runs with nothing else started.
func TestThePoolRunsTheMaintenanceServices(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	cfg := e.config()
	cfg.NoMaintenance = false
	e.start(muxOf("flaky", failOnce()), cfg)
	id := e.enqueue(stint.Spec{Kind: "flaky"}).ID
	e.advanceUntil(time.Second, "the retry to run and succeed", func() bool { return e.get(id).State == stint.Succeeded })
	if j := e.get(id); j.Attempt != 2 {
		t.Errorf("attempt %d, want 2", j.Attempt)
	}
}

// elsewhere is a store maintained by another process (as a network client
// of stint server is).
type elsewhere struct{ store.Store }

func (elsewhere) MaintainedElsewhere() bool { return true }

// A pool on a store maintained elsewhere runs no services of its own.
func TestAPoolOnAStoreMaintainedElsewhereRunsNoServices(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	cfg := e.config()
	cfg.NoMaintenance = false
	p, err := stint.NewPool(elsewhere{e.s}, muxOf("flaky", failOnce()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	id := e.enqueue(stint.Spec{Kind: "flaky"}).ID
	e.waitState(id, stint.Retrying)
	// The maintenance seat is free: this pool never ran for it.
	l, err := e.s.LeaderElect(context.Background(), &store.LeaderElectParams{Name: maintenance.DefaultSeat, ID: "probe", TTL: time.Minute})
	if err != nil || !l.Elected {
		t.Errorf("the maintenance seat is taken (%+v, %v): the pool ran the services on a store maintained elsewhere", l, err)
	}
}

// A pool told not to run them, with nothing else running them, says so
// loudly once its check finds a retry left overdue.
func TestAPoolWarnsWhenNoMaintenanceRuns(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	logs := &recordLog{records: make(chan slog.Record, 256)}
	cfg := e.config()
	cfg.Logger = slog.New(logs)
	e.start(muxOf("flaky", failOnce()), cfg)
	id := e.enqueue(stint.Spec{Kind: "flaky"}).ID
	e.waitState(id, stint.Retrying)
	var r slog.Record
	e.advanceUntil(stint.DefaultMaintenanceCheck, "the warning", func() bool {
		for {
			select {
			case r = <-logs.records:
				if strings.Contains(r.Message, "NO MAINTENANCE LEADER") {
					return true
				}
			default:
				return false
			}
		}
	})
	if r.Level != slog.LevelError || !strings.Contains(r.Message, "1 jobs are overdue") || !strings.Contains(r.Message, "NoMaintenance is set") {
		t.Errorf("warning %s %q: want an error naming the overdue job and the fix", r.Level, r.Message)
	}
	if j := e.get(id); j.State != stint.Retrying {
		t.Errorf("the job is %s; nothing should have promoted it", j.State)
	}
}
