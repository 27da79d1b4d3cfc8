package cli

import (
	"log/slog"
	"time"

	"github.com/stint-dev/stint/stats"
)

// unservedSettle is how long after its first count the reporter stays
// quiet: the process's own pool records that it serves its kinds at its
// first claim, which may come after the first count.
const unservedSettle = 10 * time.Second

// unservedMaxLines bounds the lines one count logs; the rest are counted.
const unservedMaxLines = 20

// unservedReporter logs, once per (queue, kind) while it lasts, that queued
// jobs wait for a kind no live worker handles (DESIGN §7): `stint dev`
// prints it among its narration, `stint server` in its log. Its count goes
// to the counter's OnCount.
type unservedReporter struct {
	log   *slog.Logger
	since time.Time          // the first count's time
	shown map[[2]string]bool // pairs reported and still unserved
}

func (r *unservedReporter) count(s stats.Snapshot) {
	if r.since.IsZero() {
		r.since = s.At
	}
	if s.At.Sub(r.since) < unservedSettle {
		return
	}
	// A pair no longer unserved is forgotten: should it come back, it is
	// reported again. Pairs beyond the line limit wait for a later count.
	shown, lines, more := map[[2]string]bool{}, 0, 0
	for _, k := range s.Unserved {
		key := [2]string{k.Queue, k.Kind}
		if r.shown[key] {
			shown[key] = true
			continue
		}
		if lines == unservedMaxLines {
			more++
			continue
		}
		lines++
		shown[key] = true
		r.log.Warn("stint: jobs wait for a kind no worker handles: start a worker that registers it, or cancel them",
			"queue", k.Queue, "kind", k.Kind, "jobs", k.Jobs)
	}
	if more > 0 {
		r.log.Warn("stint: more kinds wait for a worker; see `stint queues ls` or stint_jobs_unserved", "kinds", more)
	}
	r.shown = shown
}
