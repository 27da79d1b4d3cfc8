package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/tracing"
)

// pageSize is the default and most jobs one page of the jobs list holds.
const (
	pageSize = 50
	maxPage  = 500
	// scanLimit bounds the rows one DLQ, stalled or workers view reads.
	scanLimit = 10_000
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// storeError answers a store failure by what it means.
func storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, store.ErrInvalidTransition), errors.Is(err, store.ErrRevisionConflict):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, store.ErrValidation):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// jobView is a job as the pages show it: the record, with its trace id
// read out of the traceparent.
type jobView struct {
	store.Job
	Trace string `json:"trace"`
}

func view(j store.Job) jobView { return jobView{Job: j, Trace: tracing.TraceID(j.TraceID)} }

func (h *handler) whoami(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	writeJSON(w, map[string]any{"tenant": v.tenant, "role": v.role, "name": v.name, "read_only": h.cfg.ReadOnly,
		"can_cancel": !h.cfg.ReadOnly && v.mayCancel(), "can_replay": !h.cfg.ReadOnly && v.mayReplay(),
		"can_pause": !h.cfg.ReadOnly && v.mayPause(), "can_see_outbox": v.mayOutbox(),
		"can_see_bus": h.cfg.Bus != nil && v.mayBus()})
}

// queues serves the background count of the viewer's queues: never a count
// per request.
func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	snap := h.cfg.Counter.Snapshot()
	mine := stats.Snapshot{At: snap.At, Truncated: snap.Truncated, Queues: map[string]map[lifecycle.State]int{},
		OldestDue: map[string]time.Time{}, Throughput: map[string]float64{}}
	for q, rate := range snap.Throughput {
		if v.ownsQueue(q) {
			mine.Throughput[q] = rate
		}
	}
	for q, byState := range snap.Queues {
		if v.ownsQueue(q) {
			mine.Queues[q] = byState
			if due, ok := snap.OldestDue[q]; ok {
				mine.OldestDue[q] = due
			}
		}
	}
	workers := h.cfg.Workers
	if v.tenant != "default" {
		workers = nil // another tenant's pools are not its business
	}
	writeJSON(w, stats.BuildReport(mine, workers, h.cfg.Clock.Now()))
}

// jobs serves one page of jobs matching the filters (state, queue, kind,
// tenant, id), from after on.
func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	v, q := viewerOf(r.Context()), r.URL.Query()
	if id := q.Get("id"); id != "" {
		j, err := h.cfg.Store.JobGet(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !v.owns(j)) {
			writeJSON(w, map[string]any{"jobs": []jobView{}})
			return
		}
		if err != nil {
			storeError(w, err)
			return
		}
		writeJSON(w, map[string]any{"jobs": []jobView{view(j)}})
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > maxPage {
		limit = pageSize
	}
	p := &store.JobListParams{Queue: q.Get("queue"), Kind: q.Get("kind"), AfterID: q.Get("after"), Limit: limit}
	if s := q.Get("state"); s != "" {
		p.States = []lifecycle.State{lifecycle.State(s)}
	}
	tenant := q.Get("tenant")
	out := []jobView{}
	next := ""
	// Jobs of other tenants are skipped, so a page may take a few reads.
	for range 20 {
		page, err := h.cfg.Store.JobList(r.Context(), p)
		if err != nil {
			storeError(w, err)
			return
		}
		for _, j := range page {
			next = j.ID
			if v.owns(j) && (tenant == "" || j.Tenant == tenant || (tenant == "default" && j.Tenant == "")) {
				out = append(out, view(j))
			}
			if len(out) == limit {
				break
			}
		}
		if len(page) < p.Limit || len(out) == limit {
			if len(page) < p.Limit && len(out) < limit {
				next = ""
			}
			break
		}
		p.AfterID = next
	}
	writeJSON(w, map[string]any{"jobs": out, "next": next})
}

// attempt is one attempt of a job as its events tell it.
type attempt struct {
	Attempt  int        `json:"attempt"`
	Owner    string     `json:"owner,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Outcome  string     `json:"outcome,omitempty"`
	Error    string     `json:"error,omitempty"`
	ErrorMsg string     `json:"error_message,omitempty"`
}

// job serves a job with its events, its attempts and its provenance.
func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	j, ok := h.get(w, r)
	if !ok {
		return
	}
	evs, err := h.cfg.Store.JobEvents(r.Context(), j.ID)
	if err != nil {
		storeError(w, err)
		return
	}
	out := map[string]any{"job": view(j), "events": evs, "attempts": attempts(evs)}
	if prov, ok := lifecycle.ProvenanceOf(j); ok {
		out["provenance"] = prov
	}
	// A job run as durable steps shows them as a timeline (steps.go).
	if steps, err := h.steps(r, j.ID); err != nil {
		storeError(w, err)
		return
	} else if len(steps) > 0 {
		out["steps"] = steps
	}
	writeJSON(w, out)
}

// attempts groups events by attempt: each claim starts one, and the event
// that leaves it (completion, failure, expiry...) says how it ended.
func attempts(evs []store.Event) []attempt {
	var out []attempt
	for _, e := range evs {
		if e.Attempt == 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Attempt != e.Attempt {
			out = append(out, attempt{Attempt: e.Attempt, Owner: e.ActorID, Started: e.At})
		}
		a := &out[len(out)-1]
		if e.FromState.Leased() && !e.ToState.Leased() {
			at := e.At
			a.Ended, a.Outcome = &at, string(e.ToState)
			a.Error = e.Reason
			if len(e.Details) > 0 {
				var d struct {
					Error *lifecycle.JobError `json:"error"`
				}
				if json.Unmarshal(e.Details, &d) == nil && d.Error != nil {
					a.Error, a.ErrorMsg = d.Error.Code, d.Error.Message
				}
			}
		}
	}
	return out
}

// get reads the job of the path for the viewer: another tenant's is not found.
func (h *handler) get(w http.ResponseWriter, r *http.Request) (store.Job, bool) {
	id := r.PathValue("id")
	j, err := h.cfg.Store.JobGet(r.Context(), id)
	if err == nil && !viewerOf(r.Context()).owns(j) {
		err = store.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, http.StatusNotFound, "job "+id+" not found")
		} else {
			storeError(w, err)
		}
		return store.Job{}, false
	}
	return j, true
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	j, ok := h.get(w, r)
	if !ok {
		return
	}
	v := viewerOf(r.Context())
	got, err := h.cfg.Store.JobCancel(r.Context(), &store.JobCancelParams{JobID: j.ID, Reason: "cancelled from the dashboard",
		ActorID: "dashboard:" + v.name})
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"job": view(got)})
}

func (h *handler) replay(w http.ResponseWriter, r *http.Request) {
	j, ok := h.get(w, r)
	if !ok {
		return
	}
	got, err := h.client.Replay(r.Context(), j.ID)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"job": view(got)})
}

// scan reads up to scanLimit of the viewer's jobs in states.
func (h *handler) scan(r *http.Request, states []lifecycle.State, keep func(store.Job) bool) ([]store.Job, bool, error) {
	v := viewerOf(r.Context())
	var out []store.Job
	after, read := "", 0
	for read < scanLimit {
		page, err := h.cfg.Store.JobList(r.Context(), &store.JobListParams{States: states, AfterID: after, Limit: 1000})
		if err != nil {
			return nil, false, err
		}
		for _, j := range page {
			if v.owns(j) && keep(j) {
				out = append(out, j)
			}
		}
		read += len(page)
		if len(page) < 1000 {
			return out, false, nil
		}
		after = page[len(page)-1].ID
	}
	return out, true, nil
}

// dlqGroup is the dead letters of one reason code.
type dlqGroup struct {
	ReasonCode string    `json:"reason_code"`
	Count      int       `json:"count"`
	Jobs       []jobView `json:"jobs"`
}

// dlqFilter selects dead letters by queue, kind and reason code.
type dlqFilter struct {
	Queue      string `json:"queue"`
	Kind       string `json:"kind"`
	ReasonCode string `json:"reason_code"`
}

func (f dlqFilter) keep(j store.Job) bool {
	return (f.Queue == "" || j.Queue == f.Queue) && (f.Kind == "" || j.Kind == f.Kind) &&
		(f.ReasonCode == "" || reasonOf(j) == f.ReasonCode)
}

func reasonOf(j store.Job) string { return stats.ReasonOf(j) }

// dlqRows bounds the dead letters listed under their groups: the counts
// come from the background count, the rows from one read.
const dlqRows = 1000

// dlq serves the dead letters grouped by reason code, most first: each
// group's count from the background count (never a count per request), and
// up to 100 of its newest-listed jobs from one bounded read.
func (h *handler) dlq(w http.ResponseWriter, r *http.Request) {
	v, q := viewerOf(r.Context()), r.URL.Query()
	f := dlqFilter{Queue: q.Get("queue"), Kind: q.Get("kind"), ReasonCode: q.Get("reason_code")}
	groups := map[string]*dlqGroup{}
	group := func(code string) *dlqGroup {
		g := groups[code]
		if g == nil {
			g = &dlqGroup{ReasonCode: code, Jobs: []jobView{}}
			groups[code] = g
		}
		return g
	}
	snap := h.cfg.Counter.Snapshot()
	for queue, byReason := range snap.DeadByReason {
		// The count knows no kinds: filtered by kind, the listed rows count.
		if !v.ownsQueue(queue) || (f.Queue != "" && queue != f.Queue) || f.Kind != "" {
			continue
		}
		for code, n := range byReason {
			if f.ReasonCode == "" || code == f.ReasonCode {
				group(code).Count += n
			}
		}
	}
	page, err := h.cfg.Store.JobList(r.Context(), &store.JobListParams{States: []lifecycle.State{lifecycle.DeadLettered},
		Queue: f.Queue, Kind: f.Kind, Limit: dlqRows})
	if err != nil {
		storeError(w, err)
		return
	}
	for _, j := range page {
		if !v.owns(j) || !f.keep(j) {
			continue
		}
		g := group(reasonOf(j))
		if len(g.Jobs) < 100 {
			g.Jobs = append(g.Jobs, view(j))
		}
		// A dead letter newer than the count still shows in its group.
		g.Count = max(g.Count, len(g.Jobs))
	}
	out := make([]*dlqGroup, 0, len(groups))
	for _, g := range groups {
		if g.Count > 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *dlqGroup) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return cmpString(a.ReasonCode, b.ReasonCode)
	})
	writeJSON(w, map[string]any{"groups": out, "counted_at": snap.At, "listed": len(page), "more": len(page) == dlqRows})
}

// dlqReplay replays the dead letters named by ids, or, with all set, every
// one matching the filter.
func (h *handler) dlqReplay(w http.ResponseWriter, r *http.Request) {
	var body struct {
		IDs []string `json:"ids"`
		All bool     `json:"all"`
		dlqFilter
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "expected a JSON body {\"ids\": [...]} or {\"all\": true, \"queue\", \"kind\", \"reason_code\"}: "+err.Error())
		return
	}
	if len(body.IDs) == 0 && !body.All {
		writeError(w, http.StatusBadRequest, "name the dead letters to replay in \"ids\", or set \"all\": true to replay every one matching the filter")
		return
	}
	ids := body.IDs
	if body.All {
		jobs, _, err := h.scan(r, []lifecycle.State{lifecycle.DeadLettered}, body.keep)
		if err != nil {
			storeError(w, err)
			return
		}
		ids = ids[:0]
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
	}
	v := viewerOf(r.Context())
	replayed, failed := []string{}, map[string]string{}
	for _, id := range ids {
		j, err := h.cfg.Store.JobGet(r.Context(), id)
		if err == nil && !v.owns(j) {
			err = store.ErrNotFound
		}
		if err == nil {
			var got store.Job
			if got, err = h.client.Replay(r.Context(), id); err == nil {
				replayed = append(replayed, got.ID)
				continue
			}
		}
		failed[id] = err.Error()
	}
	writeJSON(w, map[string]any{"replayed": replayed, "failed": failed})
}

// stale is a job whose lease is at risk.
type stale struct {
	jobView
	LeaseAgeSeconds float64 `json:"lease_age_seconds"`
}

// stalled serves the stalled jobs and the leased ones whose last heartbeat
// is older than StaleAfter, oldest first.
func (h *handler) stalled(w http.ResponseWriter, r *http.Request) {
	now := h.cfg.Clock.Now()
	states := []lifecycle.State{lifecycle.Stalled, lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested}
	jobs, truncated, err := h.scan(r, states, func(j store.Job) bool {
		return j.State == lifecycle.Stalled || now.Sub(j.UpdatedAt) > h.cfg.StaleAfter
	})
	if err != nil {
		storeError(w, err)
		return
	}
	out := make([]stale, len(jobs))
	for i, j := range jobs {
		out[i] = stale{jobView: view(j), LeaseAgeSeconds: now.Sub(j.UpdatedAt).Seconds()}
	}
	slices.SortFunc(out, func(a, b stale) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	writeJSON(w, map[string]any{"jobs": out, "stale_after_seconds": h.cfg.StaleAfter.Seconds(), "truncated": truncated})
}

// worker is one lease holder and what it holds.
type worker struct {
	Owner         string    `json:"owner"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
	Leases        []lease   `json:"leases"`
}

type lease struct {
	JobID          string     `json:"job_id"`
	Kind           string     `json:"kind"`
	Queue          string     `json:"queue"`
	State          string     `json:"state"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	LastHeartbeat  time.Time  `json:"last_heartbeat"`
}

// workers serves the owners of the leased jobs, with what each holds and
// its latest heartbeat (a job's last write while leased).
func (h *handler) workers(w http.ResponseWriter, r *http.Request) {
	jobs, truncated, err := h.scan(r, []lifecycle.State{lifecycle.Claimed, lifecycle.Running, lifecycle.CancelRequested},
		func(store.Job) bool { return true })
	if err != nil {
		storeError(w, err)
		return
	}
	by := map[string]*worker{}
	for _, j := range jobs {
		wk := by[j.Owner]
		if wk == nil {
			wk = &worker{Owner: j.Owner}
			by[j.Owner] = wk
		}
		wk.Leases = append(wk.Leases, lease{JobID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State),
			LeaseExpiresAt: j.LeaseExpiresAt, LastHeartbeat: j.UpdatedAt})
		if j.UpdatedAt.After(wk.LastHeartbeat) {
			wk.LastHeartbeat = j.UpdatedAt
		}
	}
	out := make([]*worker, 0, len(by))
	for _, wk := range by {
		out = append(out, wk)
	}
	slices.SortFunc(out, func(a, b *worker) int { return cmpString(a.Owner, b.Owner) })
	writeJSON(w, map[string]any{"workers": out, "truncated": truncated})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
