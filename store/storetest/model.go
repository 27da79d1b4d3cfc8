package storetest

import (
	"cmp"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// model is the reference the state-machine test holds a store to: its own
// copy of every job and of every job's event log, advanced with
// lifecycle.Apply exactly as the Store contract orders a request (a known
// request id first, then the expected revision, then the lifecycle).
type model struct {
	now    time.Time
	jobs   map[string]lifecycle.Job
	events map[string][]lifecycle.Event
	ids    []string                           // in creation order
	reqs   map[string]map[string]lifecycle.Op // job → request id → op of the event that carries it
	// enqueued maps an enqueue's request id to the jobs it created, by
	// their index in the batch: a repeat returns them.
	enqueued map[string]map[int]string
	// leases lists every lease ever granted, and requests every request id
	// ever sent: the test sends them again, stale or repeated, on purpose.
	leases   []string
	requests []string
	// frozen holds each terminal job as it was when it ended (LI-1).
	frozen map[string]string
}

func newModel(now time.Time) *model {
	return &model{
		now: now, jobs: map[string]lifecycle.Job{}, events: map[string][]lifecycle.Event{},
		reqs: map[string]map[string]lifecycle.Op{}, enqueued: map[string]map[int]string{}, frozen: map[string]string{},
	}
}

// outcome is what the model expects of one request: the job after it and
// the events it appends (none for a no-op), or the error it is refused with.
type outcome struct {
	job lifecycle.Job
	evs []lifecycle.Event
	err error
}

// step is one transition inside a request, as the store's engine takes it.
func (m *model) step(j lifecycle.Job, cmd lifecycle.Command, expected *int64) (lifecycle.Job, *lifecycle.Event, error) {
	if cmd.RequestID != "" {
		if op, ok := m.reqs[j.ID][cmd.RequestID]; ok {
			if op != cmd.Op && !(cmd.Op == lifecycle.OpCheckpoint && op == lifecycle.OpHalt) {
				return j, nil, store.ErrRequestConflict
			}
			return j, nil, nil
		}
	}
	if expected != nil && *expected != j.Rev {
		return j, nil, store.ErrRevisionConflict
	}
	s, err := lifecycle.Apply(j, cmd, m.now)
	if err != nil {
		return j, nil, err
	}
	return s.Job, s.Event, nil
}

// one is the outcome of cmd on the job with id, as a Store method that acts
// on one job in one transaction.
func (m *model) one(id string, cmd lifecycle.Command, expected *int64) outcome {
	if id == "" {
		return outcome{err: store.ErrValidation}
	}
	j, ok := m.jobs[id]
	if !ok {
		return outcome{err: store.ErrNotFound}
	}
	next, ev, err := m.step(j, cmd, expected)
	o := outcome{job: next, err: err}
	if ev != nil {
		o.evs = []lifecycle.Event{*ev}
	}
	return o
}

// releaseRequeue is the outcome of JobRelease with Requeue: the owner's
// stall and, when it took, the system's requeue, in one transaction.
func (m *model) releaseRequeue(id string, cmd lifecycle.Command) outcome {
	o := m.one(id, cmd, nil)
	if o.err != nil || len(o.evs) == 0 || o.job.State != lifecycle.Stalled {
		return o
	}
	next, ev, err := m.step(o.job, lifecycle.Command{Op: lifecycle.OpRequeue, Actor: lifecycle.ActorSystem, ActorID: "release"}, nil)
	if err != nil {
		return outcome{err: err}
	}
	o.job, o.evs = next, append(o.evs, *ev)
	return o
}

// commit makes an accepted outcome the model's truth.
func (m *model) commit(o outcome) {
	id := o.job.ID
	if _, ok := m.jobs[id]; !ok {
		m.ids = append(m.ids, id)
	}
	m.jobs[id] = o.job
	for _, ev := range o.evs {
		m.events[id] = append(m.events[id], ev)
		if ev.RequestID != "" {
			if m.reqs[id] == nil {
				m.reqs[id] = map[string]lifecycle.Op{}
			}
			m.reqs[id][ev.RequestID] = ev.Op
		}
	}
	if o.job.State.Terminal() {
		if _, ok := m.frozen[id]; !ok {
			m.frozen[id] = asJSON(o.job)
		}
	}
}

// liveByKey returns the live job holding (tenant, key), if any.
func (m *model) liveByKey(tenant, key string) (lifecycle.Job, bool) {
	for _, id := range m.ids {
		if j := m.jobs[id]; j.DedupeKey == key && j.Tenant == tenant && !j.State.Terminal() {
			return j, true
		}
	}
	return lifecycle.Job{}, false
}

// claimable lists the jobs a claim of queues and kinds may take, in claim
// order: priority DESC, created_at, id. A queued job is due by definition
// (promote and unblock wait for run_at), so run_at is not looked at.
func (m *model) claimable(queues, kinds []string) []lifecycle.Job {
	var out []lifecycle.Job
	for _, id := range m.ids {
		j := m.jobs[id]
		if j.State == lifecycle.Queued && slices.Contains(queues, j.Queue) &&
			(len(kinds) == 0 || slices.Contains(kinds, j.Kind)) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b lifecycle.Job) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// due returns, for a maintenance pass, the command it applies to each job
// due for it now (DESIGN.md: the scheduler, reaper, cancel finalizer and
// timeouts), in no particular order.
func (m *model) due(pass string) map[string]lifecycle.Command {
	out := map[string]lifecycle.Command{}
	for _, id := range m.ids {
		j := m.jobs[id]
		reached := func(t *time.Time) bool { return t != nil && !t.After(m.now) }
		var c *lifecycle.Command
		switch pass {
		case "promote":
			if (j.State == lifecycle.Scheduled || j.State == lifecycle.Retrying) && reached(&j.RunAt) {
				c = &lifecycle.Command{Op: lifecycle.OpPromote}
			}
		case "stall":
			if j.State.Leased() && reached(j.LeaseExpiresAt) {
				c = &lifecycle.Command{Op: lifecycle.OpStall}
				if j.State == lifecycle.CancelRequested {
					c.Op = lifecycle.OpForceCancel
				}
			}
		case "requeue":
			if j.State == lifecycle.Stalled {
				c = &lifecycle.Command{Op: lifecycle.OpRequeue}
			}
		case "force_cancel":
			if j.State == lifecycle.CancelRequested && reached(j.CancelDeadline) {
				c = &lifecycle.Command{Op: lifecycle.OpForceCancel}
			}
		case "time_out":
			switch {
			case !j.State.Terminal() && reached(j.Deadline):
				c = &lifecycle.Command{Op: lifecycle.OpTimeOut, Deadline: true}
			case j.State == lifecycle.Running && reached(j.TimeoutAt):
				c = &lifecycle.Command{Op: lifecycle.OpTimeOut}
			}
		}
		if c != nil {
			c.Actor, c.ActorID = lifecycle.ActorSystem, "stint"
			out[id] = *c
		}
	}
	return out
}
