package dashboard

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/stint-dev/stint/store"
)

// flowQueue is one queue's flow control as the queues page shows it: its
// settings and the current use of each limit.
type flowQueue struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	// MaxRunning is the concurrency limit (0: none) and Running the leased
	// jobs counting against it, from the background count.
	MaxRunning int `json:"max_running"`
	Running    int `json:"running"`
	// RateLimit starts per RateIntervalSeconds (0: none); RateUsed of them
	// happened in the window that started at RateWindow.
	RateLimit           int            `json:"rate_limit"`
	RateIntervalSeconds float64        `json:"rate_interval_seconds,omitempty"`
	RateUsed            int            `json:"rate_used"`
	RateWindow          *time.Time     `json:"rate_window,omitempty"`
	KeyLimit            int            `json:"key_limit"`
	FairTenants         bool           `json:"fair_tenants"`
	Weights             map[string]int `json:"weights,omitempty"`
}

// flow serves the flow control of the viewer's queues that have settings.
// The settings are one small read; running counts come from the background
// count, so nothing here counts jobs per request.
func (h *handler) flow(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	can := !h.cfg.ReadOnly && v.mayPause()
	qs, err := store.Queues(h.cfg.Store)
	if err != nil {
		writeJSON(w, map[string]any{"queues": []flowQueue{}, "supported": false, "can_pause": false})
		return
	}
	settings, err := qs.QueueSettingsList(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	snap := h.cfg.Counter.Snapshot()
	out := []flowQueue{}
	for _, s := range settings {
		if !v.ownsQueue(s.Name) {
			continue
		}
		f := flowQueue{Name: s.Name, Paused: s.Paused, MaxRunning: s.MaxRunning, RateLimit: s.RateLimit,
			KeyLimit: s.KeyLimit, FairTenants: s.FairTenants, Weights: s.Weights}
		for st, n := range snap.Queues[s.Name] {
			if st.Leased() {
				f.Running += n
			}
		}
		if s.RateLimit > 0 {
			window := s.RateWindow
			f.RateIntervalSeconds, f.RateUsed, f.RateWindow = s.RateInterval.Seconds(), s.RateCount, &window
		}
		out = append(out, f)
	}
	writeJSON(w, map[string]any{"queues": out, "supported": true, "can_pause": can, "counted_at": snap.At})
}

// pause pauses (or, with paused false, resumes) the queue named in the
// body, on every node.
func (h *handler) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Queue string `json:"queue"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil || body.Queue == "" {
			writeError(w, http.StatusBadRequest, "expected a JSON body {\"queue\": \"name\"} naming the queue")
			return
		}
		if !viewerOf(r.Context()).ownsQueue(body.Queue) {
			writeError(w, http.StatusNotFound, "queue "+body.Queue+" not found")
			return
		}
		qs, err := store.Queues(h.cfg.Store)
		if err != nil {
			writeError(w, http.StatusNotImplemented, "this store keeps no queue controls")
			return
		}
		got, err := qs.QueuePause(r.Context(), body.Queue, paused)
		if err != nil {
			storeError(w, err)
			return
		}
		writeJSON(w, map[string]any{"queue": got.Name, "paused": got.Paused})
	}
}
