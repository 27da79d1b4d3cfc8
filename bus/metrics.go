package bus

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the bridge's counters. Labels are bounded: error codes,
// statuses and reasons are fixed sets, never topics or job ids.
type metrics struct {
	received   prometheus.Counter
	enqueued   prometheus.Counter
	duplicates prometheus.Counter
	denied     prometheus.Counter
	rejected   *prometheus.CounterVec // code
	dispatched prometheus.Counter
	applied    *prometheus.CounterVec // status
	ignored    *prometheus.CounterVec // reason
	published  prometheus.Counter
	lag        prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "stint", Subsystem: "bus", Name: name, Help: help})
	}
	vec := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "stint", Subsystem: "bus", Name: name, Help: help}, []string{label})
	}
	m := &metrics{
		received:   counter("requests_received_total", "JobRequests taken from the request stream (redeliveries included)."),
		enqueued:   counter("requests_enqueued_total", "JobRequests that created a job."),
		duplicates: counter("requests_duplicate_total", "JobRequests whose job_id already had its job (redeliveries and duplicate publishes)."),
		denied:     counter("requests_denied_total", "JobRequests the admission policy denied (recorded as denied jobs)."),
		rejected:   vec("requests_rejected_total", "JobRequests refused with an error result, by error code.", "code"),
		dispatched: counter("dispatched_total", "Jobs published to bus workers."),
		applied:    vec("results_applied_total", "Bus worker results applied to their job, by status.", "status"),
		ignored:    vec("results_ignored_total", "Bus worker results that changed nothing, by reason (stale, terminal, invalid, unknown_job).", "reason"),
		published:  counter("events_published_total", "State changes published on the event subjects."),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "stint", Subsystem: "bus", Name: "event_publish_lag_seconds",
			Help: "Time from a state change's commit to its publish on the bus.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.received, m.enqueued, m.duplicates, m.denied, m.rejected, m.dispatched,
		m.applied, m.ignored, m.published, m.lag} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("bus: the bridge's metrics are registered already: run one bridge per registry")
			}
			return nil, err
		}
	}
	return m, nil
}
