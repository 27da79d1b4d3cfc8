package bench_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// TestHistory runs the history bench small (20,000 jobs, 5,000 a simulated
// hour, retention and partitions of an hour) on PostgreSQL and checks the
// structural bound of issue 12: history never grows past about two
// partitions' worth of jobs, and the jobs table holds about the retention's
// worth. It asserts nothing about speed.
func TestHistory(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{EventPartition: time.Hour})
	s := store.New(d, store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	cfg := bench.HistoryConfig{Jobs: 20_000, PerHour: 5_000, Retention: time.Hour, Partition: time.Hour, Batch: 500, Workers: 2,
		Maintain: 5 * time.Minute}
	var seen int
	cfg.Observe = func(bench.HistoryPoint) { seen++ }
	rep, err := bench.RunHistory(t.Context(), s, pgtest.URL(t), d.Schema(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Four simulated hours, and the end.
	if len(rep.Points) < 4 || seen < len(rep.Points) {
		t.Fatalf("%d points (%d observed), want one a simulated hour and one at the end", len(rep.Points), seen)
	}
	last := rep.Points[len(rep.Points)-1]
	if last.JobsDone != cfg.Jobs {
		t.Errorf("%d jobs done, want %d", last.JobsDone, cfg.Jobs)
	}
	// Two partitions' worth, and one maintenance interval of slack.
	bound := 2 + cfg.Maintain.Hours()
	if rep.PeakRatio > bound || rep.Ratio > bound {
		t.Errorf("history held up to %.2f partitions' worth of jobs (%.2f at the end), want at most %.2f", rep.PeakRatio, rep.Ratio, bound)
	}
	// Made ahead: current and two more, and a few of the last hours; the
	// default; old ones dropped.
	if p := last.Tables["job_events"].Partitions; p > 1+3+3 {
		t.Errorf("job_events has %d partitions at the end, want old ones dropped", p)
	}
	// A batch's jobs finish together, at its end: one round of batches of slack.
	if rows, want := last.Tables["jobs"].Rows, int64(float64(cfg.PerHour)*(cfg.Retention+cfg.Maintain).Hours())+int64(cfg.Batch*cfg.Workers); rows > want {
		t.Errorf("jobs holds %d rows at the end, want at most the retention's worth, %d", rows, want)
	}
	if rep.Ratio < 1 {
		t.Errorf("history holds %.2f partitions' worth at the end, want at least the retention's hour: were live rows dropped?", rep.Ratio)
	}
}
