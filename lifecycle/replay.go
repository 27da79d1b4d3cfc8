package lifecycle

import "fmt"

// Replayed is what a job's event log says about it.
type Replayed struct {
	State   State
	Attempt int
	Rev     int64
}

// Replay walks a job's events in order from ∅ and returns the state, attempt
// and revision they lead to. It fails at the first event that the transition
// table does not explain, that does not start where the previous one ended,
// or that breaks the attempt or revision rules.
//
// Retention may delete old heartbeat events, so gaps in the revisions are
// accepted where only heartbeats can have been: the job held a lease, and the
// event after the gap starts in the same state with the same attempt.
func Replay(events []Event) (Replayed, error) {
	var r Replayed
	for i, e := range events {
		at := func(format string, args ...any) error {
			return fmt.Errorf("event %d (id %d, %s %s→%s, rev %d): %s", i+1, e.ID, e.Type, e.FromState, e.ToState, e.Rev, fmt.Sprintf(format, args...))
		}
		if e.FromState != r.State {
			return r, at("starts from %s but the job was %s", e.FromState, r.State)
		}
		if r.State.Terminal() {
			return r, at("follows the terminal state %s (LI-1)", r.State)
		}
		if _, ok := edgeForEvent(e); !ok {
			return r, at("no row of the transition table explains %s by %s", e.Op, e.Actor)
		}
		if e.Rev != r.Rev+1 && !heartbeatGap(r, e) {
			return r, at("rev must be %d", r.Rev+1)
		}
		want := r.Attempt
		if e.Type == EventClaimed {
			want++
		}
		if e.Attempt != want {
			return r, at("attempt must be %d (LI-2: only a claim adds one)", want)
		}
		r = Replayed{State: e.ToState, Attempt: e.Attempt, Rev: e.Rev}
	}
	return r, nil
}

// heartbeatGap reports whether the revisions missing before e can only have
// been heartbeats (self-loops of a leased state) that retention pruned.
func heartbeatGap(r Replayed, e Event) bool {
	return e.Rev > r.Rev+1 && r.State.Leased() && e.FromState == r.State && e.Attempt == r.Attempt
}
