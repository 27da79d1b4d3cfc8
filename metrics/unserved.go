package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stint-dev/stint/stats"
)

// unservedCollector reports the queued jobs of kinds no live worker
// handles (DESIGN §7), from the counter's latest snapshot.
type unservedCollector struct {
	c    *stats.Counter
	max  int // (queue, kind) pairs with their own series; the rest are summed under Other
	jobs *prometheus.Desc
}

func newUnservedCollector(c *stats.Counter, max int) *unservedCollector {
	return &unservedCollector{c: c, max: max,
		jobs: prometheus.NewDesc("stint_jobs_unserved",
			"Queued jobs of a kind no worker seen in the last minute handles, by queue and kind, as last counted: they wait until one does (pairs beyond the largest are summed under queue=\"other\", kind=\"other\"; none: no series).",
			[]string{"queue", "kind"}, nil)}
}

func (u *unservedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- u.jobs }

func (u *unservedCollector) Collect(ch chan<- prometheus.Metric) {
	snap := u.c.Snapshot()
	depth := make(map[string]int, len(snap.Unserved))
	for _, k := range snap.Unserved {
		depth[k.Queue+"\x00"+k.Kind] += k.Jobs
	}
	keep := deepest(depth, u.max)
	other := 0
	for key, n := range depth {
		if !keep[key] {
			other += n
			continue
		}
		queue, kind, _ := strings.Cut(key, "\x00")
		ch <- prometheus.MustNewConstMetric(u.jobs, prometheus.GaugeValue, float64(n), queue, kind)
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(u.jobs, prometheus.GaugeValue, float64(other), Other, Other)
	}
}
