package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// opActor is one (op, actor) pair the table knows.
type opActor struct {
	Op    lifecycle.Op
	Actor lifecycle.Actor
}

// tablePairs lists every (op, actor) pair of lifecycle.Table but enqueue.
func tablePairs() []opActor {
	var out []opActor
	for _, e := range lifecycle.Table {
		for _, a := range e.Actors {
			p := opActor{e.Op, a}
			if e.Op != lifecycle.OpEnqueue && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// hasRow reports whether the table lets actor perform op from state.
func hasRow(op lifecycle.Op, actor lifecycle.Actor, from lifecycle.State) bool {
	for _, e := range lifecycle.Table {
		if e.Op == op && e.From == from && slices.Contains(e.Actors, actor) {
			return true
		}
	}
	return false
}

// outsideWant is what the store must answer to op by actor from a state the
// table has no row for. It is derived from DESIGN.md section 1, not from the
// lifecycle code: an owner op without the live lease is stale; a request
// whose result already holds (a soft cancel of a job already cancelled or
// being cancelled, a hard cancel of a cancelled job, a start of a job its
// owner already started) is a no-op (nil); anything else is an invalid
// transition.
func outsideWant(op lifecycle.Op, actor lifecycle.Actor, from lifecycle.State) error {
	switch {
	case actor == lifecycle.ActorOwner && op != lifecycle.OpClaim && !from.Leased():
		return store.ErrStaleLease
	case op == lifecycle.OpCancel && (from == lifecycle.Cancelled || from == lifecycle.CancelRequested),
		op == lifecycle.OpCancelHard && from == lifecycle.Cancelled,
		op == lifecycle.OpStart && from == lifecycle.Running:
		return nil
	}
	return store.ErrInvalidTransition
}

// testOutsideTable sends, from every state, every (op, actor) pair the
// table has no row for, and checks the typed error (or idempotent no-op)
// and that nothing changed. Owners present the job's live lease when it has
// one, so the op itself is what is refused; otherwise a lease never granted.
func testOutsideTable(t *testing.T, newStore func(*testing.T) store.Store) {
	for _, from := range lifecycle.States {
		t.Run(string(from), func(t *testing.T) {
			t.Parallel()
			for _, p := range tablePairs() {
				if hasRow(p.Op, p.Actor, from) {
					continue
				}
				t.Run(fmt.Sprintf("%s_by_%s", p.Op, p.Actor), func(t *testing.T) {
					t.Parallel()
					h := newHarness(t, newStore)
					f := h.build(from)
					if !from.Leased() {
						f.Lease = "lease-never-granted"
					}
					before := h.snap(f.ID)
					cmd := as(p.Op, p.Actor)(f)
					cmd.Deadline = p.Op == lifecycle.OpTimeOut
					got, err := h.s.JobApply(h.ctx, &store.JobApplyParams{JobID: f.ID, Command: cmd, Now: h.tick()})
					want := outsideWant(p.Op, p.Actor, from)
					if want == nil {
						if err != nil {
							t.Fatalf("a repeat whose result already holds must be a no-op; got %v", err)
						}
						if !sameJob(got, before.Job) {
							t.Errorf("a no-op returned %s, want the record unchanged %s", asJSON(got), asJSON(before.Job))
						}
					} else {
						rejected(t, err, want)
					}
					h.unchanged(before)
				})
			}
		})
	}
}
