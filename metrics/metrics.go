package metrics

import (
	"maps"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds stint's collectors, registered in one registry.
type Metrics struct {
	claims          *prometheus.CounterVec
	claimConflicts  *prometheus.CounterVec
	leaseRenewals   *prometheus.CounterVec
	leaseExpiries   prometheus.Counter
	staleRejections *prometheus.CounterVec
	completions     *prometheus.CounterVec
	failures        *prometheus.CounterVec
	retries         *prometheus.CounterVec
	deadLettered    *prometheus.CounterVec
	storeErrors     *prometheus.CounterVec
	outbox          *prometheus.CounterVec
	queueWait       *prometheus.HistogramVec
	runTime         *prometheus.HistogramVec
	reg             prometheus.Registerer

	// queues and kinds bound the label values that come from users.
	queues, kinds  *labelLimit
	maxLabelValues int

	mu    sync.Mutex
	ended map[string]int64 // attempts ended by queue, for stats.Config.Ended
}

// durationBuckets cover a few milliseconds to an hour: job systems run
// both quick jobs and long ones, and p50/p95 per kind must be readable for
// both.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// New makes stint's collectors and registers them with reg (for example
// prometheus.DefaultRegisterer, or a prometheus.NewRegistry()). It fails when
// reg already holds collectors of the same names. Every label whose values
// users choose (queue, kind) is bounded: see [MaxLabelValues].
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxLabelValues < 1 {
		o.maxLabelValues = DefaultMaxLabelValues
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "stint", Name: name, Help: help}, labels)
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "stint", Name: name, Help: help,
			Buckets: durationBuckets}, []string{"kind"})
	}
	m := &Metrics{
		claims:          counter("claims_total", "Jobs claimed (leased to a worker), by queue and kind.", "queue", "kind"),
		claimConflicts:  counter("claim_conflicts_total", "Claims the store refused because of a concurrent write or a reused request id, by queue.", "queue"),
		leaseRenewals:   counter("lease_renewals_total", "Heartbeats that extended a lease, by kind.", "kind"),
		leaseExpiries:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: "stint", Name: "lease_expiries_total", Help: "Leases that expired without a heartbeat (jobs marked stalled by maintenance)."}),
		staleRejections: counter("stale_lease_rejections_total", "Reports from a worker refused because the job was no longer its own (lease expired, revoked or superseded), by operation.", "op"),
		completions:     counter("completions_total", "Attempts that ended, by kind and the state the job was left in.", "kind", "state"),
		failures:        counter("failures_total", "Attempts that failed (retried or not), by kind.", "kind"),
		retries:         counter("retries_total", "Failed attempts scheduled to run again, by kind.", "kind"),
		deadLettered:    counter("dead_lettered_total", "Jobs moved to the dead-letter queue by a worker, by kind.", "kind"),
		storeErrors:     counter("store_errors_total", "Store calls that failed for reasons other than a refused transition, by operation.", "op"),
		outbox:          counter("outbox_deliveries_total", "Webhook delivery attempts the store recorded, by result: delivered, failed (to be retried) or dead.", "result"),
		queueWait:       hist("queue_wait_seconds", "Time from a job being due to its attempt being claimed, by kind."),
		runTime:         hist("run_seconds", "Time an attempt ran, from its start to its report, by kind."),
		reg:             reg,
		queues:          newLabelLimit(o.maxLabelValues),
		kinds:           newLabelLimit(o.maxLabelValues),
		maxLabelValues:  o.maxLabelValues,
		ended:           map[string]int64{},
	}
	for _, c := range []prometheus.Collector{m.claims, m.claimConflicts, m.leaseRenewals, m.leaseExpiries,
		m.staleRejections, m.completions, m.failures, m.retries, m.deadLettered, m.storeErrors, m.outbox, m.queueWait, m.runTime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Ended returns how many attempts ended (reports the store accepted) in
// each queue since m was made: give it to stats.Config.Ended for the
// throughput of the dashboard and /stats.
func (m *Metrics) Ended() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.ended)
}

// queue and kind return the label value of a queue or kind name, bounded.
func (m *Metrics) queue(q string) string { return m.queues.value(q) }
func (m *Metrics) kind(k string) string  { return m.kinds.value(k) }
