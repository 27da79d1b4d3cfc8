package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stats"
)

// jobsCollector reports a counter's latest snapshot: reading it costs
// nothing, whatever the number of jobs, so scrapes never touch the store.
type jobsCollector struct {
	c       *stats.Counter
	max     int // queues with their own series; the rest are summed under Other
	jobs    *prometheus.Desc
	oldest  *prometheus.Desc
	counted *prometheus.Desc
}

// Jobs registers gauges of the jobs by queue and state (stint_jobs), the
// age of each queue's oldest due job (stint_queue_oldest_job_age_seconds)
// and when they were counted, read from c's background snapshot. The
// dead-letter queue's size is stint_jobs{state="dead_lettered"}. A state
// with no jobs has no series (absent means zero), and only the deepest
// queues (see [MaxLabelValues]) have their own: the rest are summed under
// queue="other", whose oldest job is the oldest of theirs.
//
// It also registers stint_jobs_unserved{queue,kind}: the queued jobs of
// each kind no live worker handles (bounded the same way, by job count).
func (m *Metrics) Jobs(c *stats.Counter) error {
	if err := m.reg.Register(newUnservedCollector(c, m.maxLabelValues)); err != nil {
		return err
	}
	return m.reg.Register(&jobsCollector{c: c, max: m.maxLabelValues,
		jobs: prometheus.NewDesc("stint_jobs", "Jobs by queue and state, as last counted (live states and the dead-letter queue; states with no jobs are left out, queues beyond the deepest are summed under queue=\"other\").",
			[]string{"queue", "state"}, nil),
		oldest: prometheus.NewDesc("stint_queue_oldest_job_age_seconds", "How long the oldest queued job of each queue has been due, as last counted.",
			[]string{"queue"}, nil),
		counted: prometheus.NewDesc("stint_jobs_counted_timestamp_seconds", "When the jobs were last counted (unix seconds).", nil, nil),
	})
}

func (j *jobsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- j.jobs
	ch <- j.oldest
	ch <- j.counted
}

func (j *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	snap := j.c.Snapshot()
	if snap.At.IsZero() {
		return
	}
	depth := make(map[string]int, len(snap.Queues))
	for q, byState := range snap.Queues {
		for _, n := range byState {
			depth[q] += n
		}
	}
	keep := deepest(depth, j.max)
	other := map[lifecycle.State]int{}
	var otherDue time.Time
	for q, byState := range snap.Queues {
		due, hasDue := snap.OldestDue[q]
		if !keep[q] {
			for s, n := range byState {
				other[s] += n
			}
			if hasDue && (otherDue.IsZero() || due.Before(otherDue)) {
				otherDue = due
			}
			continue
		}
		j.emit(ch, q, byState, due, hasDue, snap.At)
	}
	if len(other) > 0 || !otherDue.IsZero() {
		j.emit(ch, Other, other, otherDue, !otherDue.IsZero(), snap.At)
	}
	ch <- prometheus.MustNewConstMetric(j.counted, prometheus.GaugeValue, float64(snap.At.UnixNano())/1e9)
}

// emit sends one queue's series: a count per state with jobs, and the age
// of its oldest due job when it has one.
func (j *jobsCollector) emit(ch chan<- prometheus.Metric, q string, byState map[lifecycle.State]int, due time.Time, hasDue bool, at time.Time) {
	for _, s := range stats.CountedStates {
		if n := byState[s]; n > 0 {
			ch <- prometheus.MustNewConstMetric(j.jobs, prometheus.GaugeValue, float64(n), q, string(s))
		}
	}
	if hasDue {
		ch <- prometheus.MustNewConstMetric(j.oldest, prometheus.GaugeValue, max(at.Sub(due).Seconds(), 0), q)
	}
}

// Pool registers gauges of a pool's worker slots: stint_pool_workers_busy,
// stint_pool_workers_capacity and stint_pool_utilisation (busy/capacity),
// read from workers on each scrape. Name the pool with pool (a constant
// label; one registration per pool).
func (m *Metrics) Pool(pool string, workers stats.Workers) error {
	labels := prometheus.Labels{"pool": pool}
	gauges := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "stint", Name: "pool_workers_busy", ConstLabels: labels,
			Help: "Handlers running in the pool now."}, func() float64 { b, _ := workers(); return float64(b) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "stint", Name: "pool_workers_capacity", ConstLabels: labels,
			Help: "Worker slots of the pool (the sum of its queues' limits)."}, func() float64 { _, c := workers(); return float64(c) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "stint", Name: "pool_utilisation", ConstLabels: labels,
			Help: "Busy share of the pool's worker slots, 0 to 1."}, func() float64 {
			b, c := workers()
			if c == 0 {
				return 0
			}
			return float64(b) / float64(c)
		}),
	}
	for _, g := range gauges {
		if err := m.reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
