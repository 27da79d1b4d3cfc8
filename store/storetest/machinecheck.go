package storetest

import (
	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// settle holds the store's answer to one request against the model's.
func (mc *machine) settle(t *rapid.T, what string, o outcome, got store.Job, err error) {
	mc.stats.count(what, err)
	if o.err != nil {
		want := kindOf(o.err)
		if want == nil {
			t.Fatalf("%s: the lifecycle failed with an untyped error: %v", what, o.err)
		}
		if p := rejectionProblem(err, want); p != "" {
			t.Fatalf("%s: %s (the model refuses: %v)", what, p, o.err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: the store refused (%v); the model accepts it", what, err)
	}
	if !sameJob(got, o.job) {
		t.Fatalf("%s returned %s\nmodel %s", what, asJSON(got), asJSON(o.job))
	}
	mc.m.commit(o)
}

// fenced is the fencing rule, checked independently of the lifecycle: an
// owner op the store accepted as a change presented the job's live lease,
// before it expired.
func (mc *machine) fenced(t *rapid.T, what string, before lifecycle.Job, lease string, o outcome) {
	if o.err != nil || len(o.evs) == 0 || o.evs[0].Actor != lifecycle.ActorOwner {
		return
	}
	if !before.State.Leased() || before.LeaseID != lease || before.LeaseExpiresAt == nil || !mc.m.now.Before(*before.LeaseExpiresAt) {
		t.Fatalf("%s with lease %q changed job %s, but its live lease was %q (expires %v, now %s)",
			what, lease, before.ID, before.LeaseID, before.LeaseExpiresAt, mc.m.now)
	}
}

// check runs after every step: the store agrees with the model on every
// job and its whole event log, and every invariant holds.
func (mc *machine) check(t *rapid.T) {
	live := map[[2]string]string{}
	for _, id := range mc.m.ids {
		row, err := mc.s.JobGet(mc.ctx, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		want := mc.m.jobs[id]
		if !sameJob(row, want) {
			t.Fatalf("job %s in the store:\n%s\nmodel:\n%s", id, asJSON(row), asJSON(want))
		}
		evs, err := mc.s.JobEvents(mc.ctx, id)
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		mc.checkEvents(t, id, evs)
		if err := lifecycle.Check(row); err != nil {
			t.Fatalf("%v", err)
		}
		if frozen, ok := mc.m.frozen[id]; ok && frozen != asJSON(row) {
			t.Fatalf("terminal job %s changed (LI-1):\nwas %s\nnow %s", id, frozen, asJSON(row))
		}
		s := snapshot{Job: row, Events: evs}
		if row.State.Terminal() {
			p, err := mc.s.JobProvenance(mc.ctx, id)
			if err != nil {
				t.Fatalf("provenance of terminal job %s: %v (LI-4)", id, err)
			}
			s.Prov = &p
		}
		checkJob(t, s)
		if row.DedupeKey != "" && !row.State.Terminal() {
			k := [2]string{row.Tenant, row.DedupeKey}
			if other, ok := live[k]; ok {
				t.Fatalf("jobs %s and %s are both live with key %v (LI-5)", other, id, k)
			}
			live[k] = id
		}
	}
}

// checkEvents compares a job's log with the model's, event by event
// (ignoring the ids the backend assigns, which must rise with rev).
func (mc *machine) checkEvents(t *rapid.T, id string, evs []store.Event) {
	want := mc.m.events[id]
	if len(evs) != len(want) {
		t.Fatalf("job %s has %d events, the model %d:\n%s", id, len(evs), len(want), asJSON(evs))
	}
	for i, ev := range evs {
		if i > 0 && ev.ID <= evs[i-1].ID {
			t.Fatalf("job %s: event ids %d then %d do not rise with rev", id, evs[i-1].ID, ev.ID)
		}
		ev.ID = 0
		if asJSON(ev) != asJSON(want[i]) {
			t.Fatalf("job %s event %d:\nstore %s\nmodel %s", id, i+1, asJSON(ev), asJSON(want[i]))
		}
	}
}

// verify runs at the end of each check: Verify finds nothing and counts
// exactly the model's jobs and events.
func (mc *machine) verify(t *rapid.T) {
	rep, err := mc.s.Verify(mc.ctx, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	events := 0
	for _, evs := range mc.m.events {
		events += len(evs)
	}
	if rep.Jobs != len(mc.m.ids) || rep.Events != events || len(rep.Findings) != 0 {
		t.Fatalf("verify: %d jobs %d events findings %v; the model has %d jobs %d events", rep.Jobs, rep.Events, rep.Findings, len(mc.m.ids), events)
	}
}
