package lifecycle

import "slices"

// Edge is one row of the transition table: op, performed by one of Actors,
// moves a job from From to To and is recorded as an event of type Event.
type Edge struct {
	Op     Op
	Actors []Actor
	From   State // "" is ∅, before enqueue
	To     State
	Event  EventType
}

var (
	owner        = []Actor{ActorOwner}
	client       = []Actor{ActorClient}
	system       = []Actor{ActorSystem}
	ownerSystem  = []Actor{ActorOwner, ActorSystem}
	clientSystem = []Actor{ActorClient, ActorSystem}
)

// nonTerminal lists the states a hard cancel or a deadline may leave.
var nonTerminal = []State{Blocked, Scheduled, Queued, Claimed, Running, CancelRequested, Stalled, Retrying}

// Table is the complete transition table of DESIGN.md section 1: nothing else
// is allowed. [Apply] decides with it and [Replay] checks events against it.
var Table = buildTable()

func buildTable() []Edge {
	var t []Edge
	add := func(op Op, actors []Actor, froms []State, to State, ev EventType) {
		for _, f := range froms {
			t = append(t, Edge{Op: op, Actors: actors, From: f, To: to, Event: ev})
		}
	}
	none := []State{""}
	add(OpEnqueue, client, none, Queued, EventEnqueued)
	add(OpEnqueue, client, none, Scheduled, EventEnqueued)
	add(OpEnqueue, client, none, Blocked, EventEnqueued)
	add(OpEnqueue, client, none, Denied, EventDenied)
	add(OpPromote, system, []State{Scheduled, Retrying}, Queued, EventPromoted)
	add(OpUnblock, system, []State{Blocked}, Queued, EventUnblocked)
	add(OpClaim, owner, []State{Queued}, Claimed, EventClaimed)
	add(OpStart, owner, []State{Claimed}, Running, EventStarted)
	for _, s := range []State{Claimed, Running, CancelRequested} {
		add(OpHeartbeat, owner, []State{s}, s, EventHeartbeat)
	}
	add(OpCheckpoint, owner, []State{Running}, Running, EventCheckpointed)
	add(OpComplete, owner, []State{Running, CancelRequested}, Succeeded, EventSucceeded)
	// A failure after a cancel request is final: it is never retried.
	add(OpFail, owner, []State{Running}, Retrying, EventRetryScheduled)
	add(OpFail, owner, []State{Running, CancelRequested}, Failed, EventFailed)
	add(OpFail, owner, []State{Running}, DeadLettered, EventDeadLettered)
	add(OpFail, owner, []State{Running}, TimedOut, EventTimedOut)
	add(OpHalt, ownerSystem, []State{Running}, Halted, EventHalted)
	add(OpStall, ownerSystem, []State{Claimed, Running}, Stalled, EventStalled)
	add(OpRequeue, system, []State{Stalled}, Queued, EventRequeued)
	add(OpRequeue, system, []State{Stalled}, DeadLettered, EventDeadLettered)
	add(OpDeadLetter, system, []State{Queued, Claimed, Running, Stalled}, DeadLettered, EventDeadLettered)
	add(OpDeadLetter, owner, []State{Claimed, Running}, DeadLettered, EventDeadLettered)
	add(OpCancel, client, []State{Blocked, Scheduled, Queued, Retrying, Stalled}, Cancelled, EventCancelled)
	add(OpCancel, client, []State{Claimed, Running}, CancelRequested, EventCancelRequested)
	add(OpCancelHard, client, nonTerminal, Cancelled, EventCancelled)
	add(OpAckCancel, owner, []State{CancelRequested}, Cancelled, EventCancelled)
	add(OpForceCancel, system, []State{CancelRequested}, Cancelled, EventCancelled)
	add(OpTimeOut, system, []State{Running}, Retrying, EventRetryScheduled)
	add(OpTimeOut, system, nonTerminal, TimedOut, EventTimedOut)
	// Durable steps (steps.go): a step record is a self-loop of a running
	// job, like a checkpoint; a suspend gives the lease back without ending
	// the attempt in failure; a wake promotes a suspended job early.
	add(OpStep, owner, []State{Running}, Running, EventStepRecorded)
	add(OpSuspend, owner, []State{Running}, Scheduled, EventSuspended)
	add(OpWake, clientSystem, []State{Scheduled}, Queued, EventWoken)
	return t
}

// Allowed reports whether the table has a row for op by actor from → to.
func Allowed(op Op, actor Actor, from, to State) bool {
	_, ok := findEdge(op, actor, from, to)
	return ok
}

func findEdge(op Op, actor Actor, from, to State) (Edge, bool) {
	for _, e := range Table {
		if e.Op == op && e.From == from && e.To == to && slices.Contains(e.Actors, actor) {
			return e, true
		}
	}
	return Edge{}, false
}

// sources reports whether op by actor has any row leaving from.
func sources(op Op, actor Actor, from State) bool {
	for _, e := range Table {
		if e.Op == op && e.From == from && slices.Contains(e.Actors, actor) {
			return true
		}
	}
	return false
}

// targets lists the states op can reach, from any state.
func targets(op Op) []State {
	var out []State
	for _, e := range Table {
		if e.Op == op && !slices.Contains(out, e.To) {
			out = append(out, e.To)
		}
	}
	return out
}

// edgeForEvent finds the row that explains an event: its op by its actor,
// from → to, recorded as its type.
func edgeForEvent(ev Event) (Edge, bool) {
	e, ok := findEdge(ev.Op, ev.Actor, ev.FromState, ev.ToState)
	return e, ok && e.Event == ev.Type
}
