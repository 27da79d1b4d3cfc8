package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// runRow is a run as the runs list shows it: the record and how long it
// has taken (to its end, or so far).
type runRow struct {
	store.Run
	DurationSeconds float64 `json:"duration_seconds"`
}

func (h *handler) runRow(r store.Run) runRow {
	end := h.cfg.Clock.Now()
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	return runRow{Run: r, DurationSeconds: max(end.Sub(r.CreatedAt).Seconds(), 0)}
}

// runs serves one page of the viewer's runs, newest first, filtered by
// ?state= and ?name= (a part of the name, any case), from ?before= on.
func (h *handler) runs(w http.ResponseWriter, r *http.Request) {
	v, q := viewerOf(r.Context()), r.URL.Query()
	if !fieldsShort(w, map[string]string{"name": q.Get("name"), "before": q.Get("before"), "state": q.Get("state")}) {
		return
	}
	rs, err := store.RunSearcherOf(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, "this store cannot list runs by name: "+err.Error())
		return
	}
	tenant := v.storeTenant()
	p := store.RunSearchParams{Name: q.Get("name"), BeforeID: q.Get("before"), Tenant: &tenant, Limit: pageSize}
	if s := q.Get("state"); s != "" {
		p.States = []lifecycle.RunState{lifecycle.RunState(s)}
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		p.Limit = min(n, maxPage)
	}
	runs, err := rs.RunSearch(r.Context(), &p)
	if err != nil {
		storeError(w, err)
		return
	}
	out := make([]runRow, len(runs))
	for i, run := range runs {
		out[i] = h.runRow(run)
	}
	next := ""
	if len(runs) == p.Limit {
		next = runs[len(runs)-1].ID
	}
	writeJSON(w, map[string]any{"runs": out, "next": next})
}

// maxRunJobs bounds the jobs one run page reads.
const maxRunJobs = 1000

// run serves a run: its record, its jobs with their dependencies (for the
// page that draws it as its DAG), its names for them and its events.
func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	rv, ok := h.runGet(w, r)
	if !ok {
		return
	}
	id := rv.Run.ID
	jobs, truncated, err := h.runJobs(r, id)
	if err != nil {
		storeError(w, err)
		return
	}
	evs, err := h.cfg.Store.RunEvents(r.Context(), id)
	if err != nil {
		storeError(w, err)
		return
	}
	names := make(map[string]string, len(rv.Jobs))
	for _, j := range rv.Jobs {
		names[j.JobID] = j.Name
	}
	out := make([]runJobView, len(jobs))
	for i, j := range jobs {
		out[i] = runJobView{jobView: view(j), Name: names[j.ID]}
	}
	writeJSON(w, map[string]any{"run_id": id, "run": h.runRow(rv.Run), "jobs": out, "events": evs, "truncated": truncated,
		"can_cancel": !h.cfg.ReadOnly && v.mayCancel() && !rv.Run.State.Terminal(),
		"can_rerun":  !h.cfg.ReadOnly && v.mayCancel() && rv.Run.State.Terminal()})
}

// runJobView is a job of a run with its name in the run.
type runJobView struct {
	jobView
	Name string `json:"name"`
}

// runJobs reads the jobs of run id in one search (or, on a store that
// cannot search, by scanning), ordered by step.
func (h *handler) runJobs(r *http.Request, id string) ([]store.Job, bool, error) {
	var jobs []store.Job
	truncated := false
	if js, err := store.SearcherOf(h.cfg.Store); err == nil {
		jobs, err = js.JobSearch(r.Context(), &store.JobSearchParams{RunID: id, Limit: maxRunJobs})
		if err != nil {
			return nil, false, err
		}
		truncated = len(jobs) == maxRunJobs
	} else {
		jobs, truncated, err = h.scan(r, lifecycle.States, func(j store.Job) bool { return j.RunID == id })
		if err != nil {
			return nil, false, err
		}
	}
	slices.SortFunc(jobs, func(a, b store.Job) int {
		if a.StepIndex != b.StepIndex {
			return a.StepIndex - b.StepIndex
		}
		return cmpString(a.ID, b.ID)
	})
	return jobs, truncated, nil
}

// runGet reads the run of the path for the viewer; another tenant's is not found.
func (h *handler) runGet(w http.ResponseWriter, r *http.Request) (store.RunView, bool) {
	id := r.PathValue("id")
	rv, err := h.cfg.Store.RunGet(r.Context(), id)
	if err == nil && rv.Run.Tenant != viewerOf(r.Context()).storeTenant() {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "run "+quoteShort(id)+" not found")
		return store.RunView{}, false
	}
	if err != nil {
		storeError(w, err)
		return store.RunView{}, false
	}
	return rv, true
}

// runCancel cancels a run two-phase, as `stint runs cancel` does.
func (h *handler) runCancel(w http.ResponseWriter, r *http.Request) {
	rv, ok := h.runGet(w, r)
	if !ok {
		return
	}
	v := viewerOf(r.Context())
	got, err := h.cfg.Store.RunCancel(r.Context(), &store.RunCancelParams{RunID: rv.Run.ID,
		Reason: "cancelled from the dashboard", ActorID: "dashboard:" + v.name})
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"run": h.runRow(got.Run)})
}

// runRerun makes a new run from an ended one: every job, or with
// {"failed_only": true} those that did not succeed.
func (h *handler) runRerun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		FailedOnly bool `json:"failed_only"`
	}
	if !readBody(w, r, &body, `{"failed_only": false}`) {
		return
	}
	rv, ok := h.runGet(w, r)
	if !ok {
		return
	}
	v := viewerOf(r.Context())
	got, err := h.cfg.Store.RunRerun(r.Context(), &store.RunRerunParams{RunID: rv.Run.ID, FailedOnly: body.FailedOnly,
		ActorID: "dashboard:" + v.name})
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"run": h.runRow(got.Run)})
}
