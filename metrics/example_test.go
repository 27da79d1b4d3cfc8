package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// Register stint's metrics in your own registry, instrument the store the
// pool and clients use, and count the jobs in the background.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-example")
	defer os.RemoveAll(dir)
	raw, err := sqlite.OpenStore(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer raw.Close()

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	s := m.Store(raw) // give s to stint.NewPool, stint.NewClient, the maintenance services
	counter := stats.NewCounter(s, stats.Config{})
	_ = m.Jobs(counter) // stint_jobs{queue,state}, read from the counter's snapshot

	_, _ = s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []stint.Spec{{Kind: "email"}, {Kind: "email"}}})
	_ = counter.Refresh(ctx) // counter.Start(ctx) does this every 15s
	fmt.Println(testutil.ToFloat64(gauge(reg, "default", "queued")))
	// Output: 2
}

// gauge reads one series of stint_jobs.
func gauge(reg *prometheus.Registry, queue, state string) prometheus.Collector {
	mfs, _ := reg.Gather()
	v := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "stint_jobs" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] == queue && labels["state"] == state {
				v = m.GetGauge().GetValue()
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "v"}, func() float64 { return v })
}
