package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// nextFires is how many coming ticks the schedules page lists.
const nextFires = 5

// scheduleView is a schedule with its coming ticks and the job its last
// tick enqueued.
type scheduleView struct {
	store.Schedule
	Next    []time.Time `json:"next"`
	BadExpr string      `json:"bad_expr,omitempty"`
	LastJob *struct {
		ID    string          `json:"id"`
		State lifecycle.State `json:"state"`
	} `json:"last_job,omitempty"`
}

// ownsSchedule reports whether s is the viewer's: its tenant's, in one of
// its queues.
func (v viewer) ownsSchedule(s store.Schedule) bool {
	return s.Tenant == v.storeTenant() && v.ownsQueue(cmp.Or(s.Queue, lifecycle.DefaultQueue))
}

// schedules serves the viewer's schedules with their next ticks and their
// last job.
func (h *handler) schedules(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	ss, err := store.Schedules(h.cfg.Store)
	if err != nil {
		writeJSON(w, map[string]any{"schedules": []scheduleView{}, "supported": false})
		return
	}
	all, err := ss.ScheduleList(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	now := h.cfg.Clock.Now()
	out := []scheduleView{}
	for _, s := range all {
		if !v.ownsSchedule(s) {
			continue
		}
		out = append(out, h.scheduleView(r, s, now))
	}
	writeJSON(w, map[string]any{"schedules": out, "supported": true,
		"can_edit": !h.cfg.ReadOnly && v.mayPause()})
}

func (h *handler) scheduleView(r *http.Request, s store.Schedule, now time.Time) scheduleView {
	sv := scheduleView{Schedule: s, Next: []time.Time{}}
	e, err := cron.Parse(s.Expr, s.TimeZone)
	if err != nil {
		sv.BadExpr = err.Error()
	} else {
		for t := now; len(sv.Next) < nextFires; {
			if t = e.Next(t); t.IsZero() {
				break
			}
			sv.Next = append(sv.Next, t)
		}
	}
	if s.LastTick != nil {
		j, err := h.cfg.Store.JobGet(r.Context(), store.ScheduleTickJobID(s, *s.LastTick))
		if err == nil {
			sv.LastJob = &struct {
				ID    string          `json:"id"`
				State lifecycle.State `json:"state"`
			}{j.ID, j.State}
		}
	}
	return sv
}

// scheduleInput is a schedule as the add form sends it.
type scheduleInput struct {
	Name        string          `json:"name"`
	Expr        string          `json:"expr"`
	TimeZone    string          `json:"time_zone"`
	Missed      string          `json:"missed"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Priority    int             `json:"priority"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts int             `json:"max_attempts"`
}

// scheduleAdd creates or redefines one of the viewer's schedules, checked
// as `stint cron add` checks it. A name another tenant holds is refused.
func (h *handler) scheduleAdd(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	var in scheduleInput
	if !readBody(w, r, &in, `{"name", "expr", "time_zone", "kind", "queue", "payload", "missed", "max_attempts", "priority"}`) {
		return
	}
	if !fieldsShort(w, map[string]string{"name": in.Name, "expr": in.Expr, "time_zone": in.TimeZone, "missed": in.Missed,
		"kind": in.Kind, "queue": in.Queue}) {
		return
	}
	if len(in.Payload) == 0 || string(in.Payload) == "null" {
		in.Payload = nil
	}
	s := store.Schedule{Name: in.Name, Expr: in.Expr, TimeZone: in.TimeZone, Missed: in.Missed, Kind: in.Kind,
		Queue: in.Queue, Tenant: v.storeTenant(), Priority: in.Priority, Payload: in.Payload, MaxAttempts: in.MaxAttempts}
	if s.Queue == "" && v.tenant != "default" {
		writeError(w, http.StatusBadRequest, "name a queue of tenant "+v.tenant+", such as "+v.tenant+"/default")
		return
	}
	if !v.ownsQueue(cmp.Or(s.Queue, lifecycle.DefaultQueue)) {
		writeError(w, http.StatusForbidden, "queue "+quoteShort(s.Queue)+" is not tenant "+v.tenant+"'s")
		return
	}
	if err := cron.Check(s); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ss, err := store.Schedules(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	}
	if old, err := ss.ScheduleGet(r.Context(), s.Name); err == nil && !v.ownsSchedule(old) {
		writeError(w, http.StatusConflict, "schedule name "+quoteShort(s.Name)+" is taken: choose another")
		return
	}
	got, err := ss.SchedulePut(r.Context(), s)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"schedule": h.scheduleView(r, got, h.cfg.Clock.Now())})
}

// scheduleOf reads the viewer's schedule of the path.
func (h *handler) scheduleOf(w http.ResponseWriter, r *http.Request) (store.ScheduleStore, store.Schedule, bool) {
	name := r.PathValue("name")
	ss, err := store.Schedules(h.cfg.Store)
	if err != nil {
		writeError(w, http.StatusNotImplemented, err.Error())
		return nil, store.Schedule{}, false
	}
	s, err := ss.ScheduleGet(r.Context(), name)
	if err == nil && !viewerOf(r.Context()).ownsSchedule(s) {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "schedule "+quoteShort(name)+" not found")
		return nil, store.Schedule{}, false
	}
	if err != nil {
		storeError(w, err)
		return nil, store.Schedule{}, false
	}
	return ss, s, true
}

// schedulePause pauses (or resumes) a schedule.
func (h *handler) schedulePause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, s, ok := h.scheduleOf(w, r)
		if !ok {
			return
		}
		got, err := ss.SchedulePause(r.Context(), s.Name, pause)
		if err != nil {
			storeError(w, err)
			return
		}
		writeJSON(w, map[string]any{"schedule": h.scheduleView(r, got, h.cfg.Clock.Now())})
	}
}

// scheduleDelete removes a schedule; the jobs it enqueued stay.
func (h *handler) scheduleDelete(w http.ResponseWriter, r *http.Request) {
	ss, s, ok := h.scheduleOf(w, r)
	if !ok {
		return
	}
	if err := ss.ScheduleDelete(r.Context(), s.Name); err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, map[string]any{"deleted": s.Name})
}
