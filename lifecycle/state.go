package lifecycle

import "fmt"

// State is the lifecycle state of a job.
type State string

// Non-terminal states.
const (
	// Blocked jobs are part of a run and wait for the jobs they depend on.
	Blocked State = "blocked"
	// Scheduled jobs are accepted; their first attempt is not due yet.
	Scheduled State = "scheduled"
	// Queued jobs are eligible to be claimed now.
	Queued State = "queued"
	// Claimed jobs are leased to one worker that has not started them.
	Claimed State = "claimed"
	// Running jobs were started by their owner, who heartbeats while working.
	Running State = "running"
	// CancelRequested jobs were asked to stop while leased; the owner keeps
	// the lease until it acknowledges or the cancel deadline passes.
	CancelRequested State = "cancel_requested"
	// Stalled jobs lost their lease; they wait to be requeued or dead-lettered.
	Stalled State = "stalled"
	// Retrying jobs failed with a retryable error; the next attempt is due at run_at.
	Retrying State = "retrying"
)

// Terminal states. No field of a terminal job ever changes (LI-1).
const (
	Succeeded    State = "succeeded"
	Failed       State = "failed"
	Cancelled    State = "cancelled"
	TimedOut     State = "timed_out"
	Halted       State = "halted"
	DeadLettered State = "dead_lettered"
	Denied       State = "denied"
)

// States lists every state, non-terminal first, in a stable order.
var States = []State{
	Blocked, Scheduled, Queued, Claimed, Running, CancelRequested, Stalled, Retrying,
	Succeeded, Failed, Cancelled, TimedOut, Halted, DeadLettered, Denied,
}

// Terminal reports whether s is a terminal state.
func (s State) Terminal() bool {
	switch s {
	case Succeeded, Failed, Cancelled, TimedOut, Halted, DeadLettered, Denied:
		return true
	}
	return false
}

// Leased reports whether a job in state s holds an owner and a lease.
func (s State) Leased() bool {
	return s == Claimed || s == Running || s == CancelRequested
}

// Valid reports whether s is one of [States].
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// ParseState returns the state named by s, or a validation error that lists
// the valid names.
func ParseState(s string) (State, error) {
	if st := State(s); st.Valid() {
		return st, nil
	}
	return "", Validationf("unknown state %q: expected one of %v", s, States)
}

// String returns the state's name, or "∅" for the empty state before enqueue.
func (s State) String() string {
	if s == "" {
		return "∅"
	}
	return string(s)
}

var _ fmt.Stringer = State("")
