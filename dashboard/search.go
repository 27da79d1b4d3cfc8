package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// maxBulk is the most jobs one bulk action changes, and the most a count
// counts.
const maxBulk = 5_000

// searchFields are the filters a search takes from the query string.
var searchFields = []string{"state", "kind", "queue", "tenant", "run", "topic", "correlation", "path", "value", "from", "to"}

// searchParams reads a search from the query string q for the viewer:
// always within the viewer's tenant (a tenant filter naming another finds
// nothing). The message is for a 400 when the filters are not valid.
func searchParams(v viewer, q url.Values, now time.Time) (p store.JobSearchParams, none bool, msg string) {
	for _, f := range append(searchFields, "before") {
		if len(q.Get(f)) > maxField {
			return p, false, fmt.Sprintf("%s is %d bytes long: at most %d", f, len(q.Get(f)), maxField)
		}
	}
	tenant := v.storeTenant()
	p = store.JobSearchParams{Kind: q.Get("kind"), Queue: q.Get("queue"), Tenant: &tenant, RunID: q.Get("run"),
		Topic: q.Get("topic"), CorrelationID: q.Get("correlation"), PayloadValue: q.Get("value"), BeforeID: q.Get("before")}
	if t := q.Get("tenant"); t != "" && t != v.tenant && !(t == "default" && v.tenant == "default") {
		none = true
	}
	for _, s := range q["state"] {
		if s != "" {
			p.States = append(p.States, lifecycle.State(s))
		}
	}
	if len(p.States) > len(lifecycle.States) {
		return p, false, "too many states"
	}
	if path := q.Get("path"); path != "" {
		p.PayloadPath = strings.Split(strings.TrimPrefix(path, "$."), ".")
	}
	for name, dst := range map[string]**time.Time{"from": &p.CreatedFrom, "to": &p.CreatedTo} {
		if s := q.Get(name); s != "" {
			t, err := whenOf(s, now)
			if err != nil {
				return p, false, fmt.Sprintf("%s %s: %v", name, quoteShort(s), err)
			}
			*dst = &t
		}
	}
	if err := p.Validate(); err != nil {
		return p, false, err.Error()
	}
	return p, none, ""
}

// whenOf reads a time as RFC 3339, or as a duration before now such as
// 90m, 6h or 7d (so a shared link to "the last hour" stays one).
func whenOf(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n >= 0 && n <= 3650 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("use an RFC 3339 time (2026-01-02T15:04:05Z) or a time ago (90m, 6h, 7d)")
}

// search serves one page of the jobs matching the filters, newest first.
func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	p, none, msg := searchParams(v, r.URL.Query(), h.cfg.Clock.Now())
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	js, err := store.SearcherOf(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, "this store cannot search jobs")
		return
	}
	p.Limit = pageSize
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		p.Limit = min(n, maxPage)
	}
	out, next := []jobView{}, ""
	if !none {
		jobs, err := js.JobSearch(r.Context(), &p)
		if err != nil {
			storeError(w, err)
			return
		}
		for _, j := range jobs {
			if v.owns(j) {
				out = append(out, view(j))
			}
		}
		if len(jobs) == p.Limit {
			next = jobs[len(jobs)-1].ID
		}
	}
	writeJSON(w, map[string]any{"jobs": out, "next": next})
}

// live are the states a cancel applies to.
var live = func() []lifecycle.State {
	var out []lifecycle.State
	for _, s := range lifecycle.States {
		if !s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}()

// narrowed returns p limited to states (those of p among them, or all of
// them when p names none); ok is false when none is left.
func narrowed(p store.JobSearchParams, states []lifecycle.State) (store.JobSearchParams, bool) {
	if len(p.States) == 0 {
		p.States = states
		return p, true
	}
	var keep []lifecycle.State
	for _, s := range p.States {
		for _, t := range states {
			if s == t {
				keep = append(keep, s)
			}
		}
	}
	p.States = keep
	return p, len(keep) > 0
}

// searchCount counts the matching jobs, those a cancel would change and
// those a replay would, each up to maxBulk (more reads as maxBulk+1).
func (h *handler) searchCount(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	p, none, msg := searchParams(v, r.URL.Query(), h.cfg.Clock.Now())
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	js, err := store.SearcherOf(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, "this store cannot search jobs")
		return
	}
	counts := map[string]int{"total": 0, "cancellable": 0, "replayable": 0}
	if !none {
		for name, states := range map[string][]lifecycle.State{"total": nil, "cancellable": live,
			"replayable": {lifecycle.DeadLettered}} {
			q, ok := p, true
			if states != nil {
				q, ok = narrowed(p, states)
			}
			if !ok {
				continue
			}
			if counts[name], err = js.JobSearchCount(r.Context(), &q, maxBulk); err != nil {
				storeError(w, err)
				return
			}
		}
	}
	writeJSON(w, map[string]any{"counts": counts, "most": maxBulk})
}

type bulkAction int

const (
	bulkCancel bulkAction = iota
	bulkReplay
)

// searchBulk cancels or replays every job a search finds that the action
// applies to (live jobs; dead letters), once the viewer has confirmed the
// count: the body is {"query": "state=...&kind=...", "expect": N}, and
// when more than N jobs now match nothing is done (409), so a confirmed
// count is never exceeded.
func (h *handler) searchBulk(action bulkAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r.Context())
		var body struct {
			Query  string `json:"query"`
			Expect int    `json:"expect"`
		}
		if !readBody(w, r, &body, `{"query": "the search's query string", "expect": N}`) {
			return
		}
		q, err := url.ParseQuery(body.Query)
		if err != nil || len(body.Query) > 4096 {
			writeError(w, http.StatusBadRequest, "query: expected the search's query string (at most 4 KiB), such as state=queued&kind=email")
			return
		}
		if body.Expect <= 0 || body.Expect > maxBulk {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("expect: the confirmed count, 1 to %d", maxBulk))
			return
		}
		p, none, msg := searchParams(v, q, h.cfg.Clock.Now())
		if msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
		states := live
		if action == bulkReplay {
			states = []lifecycle.State{lifecycle.DeadLettered}
		}
		p, ok := narrowed(p, states)
		if none || !ok {
			writeJSON(w, map[string]any{"done": []string{}, "failed": map[string]string{}})
			return
		}
		h.bulk(w, r, p, body.Expect, action)
	}
}

// bulk reads every job p finds (at most expect, else 409) and applies the
// action to each the viewer owns.
func (h *handler) bulk(w http.ResponseWriter, r *http.Request, p store.JobSearchParams, expect int, action bulkAction) {
	v := viewerOf(r.Context())
	js, err := store.SearcherOf(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, "this store cannot search jobs")
		return
	}
	p.BeforeID, p.Limit = "", expect+1
	jobs, err := js.JobSearch(r.Context(), &p)
	if err != nil {
		storeError(w, err)
		return
	}
	if len(jobs) > expect {
		writeError(w, http.StatusConflict, fmt.Sprintf("more than the %d confirmed jobs match now: count again and confirm", expect))
		return
	}
	done, failed := []string{}, map[string]string{}
	for _, j := range jobs {
		if !v.owns(j) {
			continue
		}
		var err error
		switch action {
		case bulkCancel:
			_, err = h.cfg.Store.JobCancel(r.Context(), &store.JobCancelParams{JobID: j.ID,
				Reason: "cancelled from the dashboard (bulk)", ActorID: "dashboard:" + v.name})
		case bulkReplay:
			_, err = h.client.Replay(r.Context(), j.ID)
		}
		if err != nil {
			failed[j.ID] = err.Error()
			continue
		}
		done = append(done, j.ID)
	}
	writeJSON(w, map[string]any{"done": done, "failed": failed})
}
