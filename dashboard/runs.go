package dashboard

import (
	"net/http"
	"slices"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// run serves the jobs of a run with their dependencies, by step, for the
// page that draws the run as its DAG. Runs are found by scanning (at most
// scanLimit jobs): the store has no index by run.
func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	jobs, truncated, err := h.scan(r, lifecycle.States, func(j store.Job) bool { return j.RunID == id })
	if err != nil {
		storeError(w, err)
		return
	}
	if len(jobs) == 0 {
		writeError(w, http.StatusNotFound, "run "+id+" not found (or it has no jobs among the latest scanned)")
		return
	}
	slices.SortFunc(jobs, func(a, b store.Job) int {
		if a.StepIndex != b.StepIndex {
			return a.StepIndex - b.StepIndex
		}
		return cmpString(a.ID, b.ID)
	})
	out := make([]jobView, len(jobs))
	for i, j := range jobs {
		out[i] = view(j)
	}
	writeJSON(w, map[string]any{"run_id": id, "jobs": out, "truncated": truncated})
}
