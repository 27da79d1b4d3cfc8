package stats

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Report is the JSON body [Handler] serves: what KEDA's metrics-api trigger
// reads with a valueLocation such as "backlog", "utilisation" or
// "queues.default.backlog".
type Report struct {
	// At is when the jobs were last counted.
	At time.Time `json:"at"`
	// Backlog is the jobs waiting to run now (queued, retrying, stalled) in
	// every queue.
	Backlog int `json:"backlog"`
	// Running is the jobs leased to workers (claimed, running,
	// cancel_requested) in every queue.
	Running int `json:"running"`
	// DeadLettered is the jobs in the dead-letter queue.
	DeadLettered int `json:"dead_lettered"`
	// Utilisation is the busy share of the workers that report here (0 to
	// 1), or of the running jobs over Capacity when only that is known.
	Utilisation float64 `json:"utilisation"`
	// Capacity is the worker slots of the pools that report here; 0 when
	// none does.
	Capacity int `json:"capacity"`
	// Queues breaks the figures down by queue.
	Queues map[string]QueueReport `json:"queues"`
	// Truncated is set when the count stopped at the counter's MaxRows.
	Truncated bool `json:"truncated,omitempty"`
}

// QueueReport is one queue's figures.
type QueueReport struct {
	Backlog      int `json:"backlog"`
	Running      int `json:"running"`
	Scheduled    int `json:"scheduled"`
	DeadLettered int `json:"dead_lettered"`
	// OldestAgeSeconds is how long the longest-waiting queued job has been
	// due; 0 when none waits.
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	// Throughput is the attempts that ended per second in the queue
	// between the last two counts, as seen by this process.
	Throughput float64 `json:"throughput"`
	// States counts the jobs by state.
	States map[lifecycle.State]int `json:"states"`
}

// Workers reports how many worker slots are busy and how many there are.
type Workers func() (busy, capacity int)

// BuildReport turns a snapshot into a report; workers may be nil.
func BuildReport(s Snapshot, workers Workers, now time.Time) Report {
	r := Report{At: s.At, Queues: map[string]QueueReport{}, Truncated: s.Truncated}
	for q := range s.Throughput {
		if _, ok := s.Queues[q]; !ok && s.Throughput[q] > 0 {
			r.Queues[q] = QueueReport{Throughput: s.Throughput[q], States: map[lifecycle.State]int{}}
		}
	}
	for q, byState := range s.Queues {
		qr := QueueReport{States: byState,
			Backlog:      byState[lifecycle.Queued] + byState[lifecycle.Retrying] + byState[lifecycle.Stalled],
			Running:      byState[lifecycle.Claimed] + byState[lifecycle.Running] + byState[lifecycle.CancelRequested],
			Scheduled:    byState[lifecycle.Scheduled],
			DeadLettered: byState[lifecycle.DeadLettered]}
		qr.Throughput = s.Throughput[q]
		if due, ok := s.OldestDue[q]; ok && now.After(due) {
			qr.OldestAgeSeconds = now.Sub(due).Seconds()
		}
		r.Queues[q] = qr
		r.Backlog += qr.Backlog
		r.Running += qr.Running
		r.DeadLettered += qr.DeadLettered
	}
	if workers != nil {
		busy, capacity := workers()
		r.Capacity = capacity
		if capacity > 0 {
			r.Utilisation = float64(busy) / float64(capacity)
		}
	}
	return r
}

// Handler serves the counter's latest snapshot as a [Report] (GET only).
// workers, when set, gives the utilisation of the pools in this process.
// Mount it behind your own auth; stint server serves it at /stats.
func Handler(c *Counter, workers Workers) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(BuildReport(c.Snapshot(), workers, c.cfg.Clock.Now()))
	})
}
