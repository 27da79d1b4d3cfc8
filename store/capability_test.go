package store_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/tracing"
)

// outer is a host program's own wrapper, which forwards only the Store verbs.
type outer struct{ store.Store }

func (o outer) Unwrap() store.Store { return o.Store }

// TestCapabilitiesSurviveWrapping wraps each backend's store for metrics,
// tracing and a host's own decorator, as stint dev and stint server do, and
// finds every optional capability through the wrappers.
func TestCapabilitiesSurviveWrapping(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			m, err := metrics.New(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			s := outer{tracing.Store(m.Store(b.open(t, store.Options{})), nil)}
			if _, err := store.Schedules(s); err != nil {
				t.Errorf("schedules: %v", err)
			}
			if _, err := store.Queues(s); err != nil {
				t.Errorf("queue controls: %v", err)
			}
			if _, err := store.TokensOf(s); err != nil {
				t.Errorf("tokens: %v", err)
			}
			if _, err := store.Debounce(s); err != nil {
				t.Errorf("debounce: %v", err)
			}
			// A wrapper that does not unwrap hides what is under it, and
			// says so rather than pretending.
			type opaque struct{ store.Store }
			if _, err := store.Schedules(opaque{s}); err == nil {
				t.Error("schedules found through a wrapper without Unwrap")
			}
		})
	}
}
