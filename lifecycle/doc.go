// Package lifecycle is stint's job state machine: every state, operation and
// transition of the specification, the per-state invariants, the attempt and
// revision rules, the canonical event types, backoff and the error classes.
//
// It is pure: no I/O, no goroutines, and no clock. Time is a value the caller
// passes in. Every other package asks lifecycle whether a transition is
// allowed; nothing else decides it.
//
// The central function is [Apply]: given a job, a [Command] and the time, it
// returns the job after the command and the one [Event] that records it, or a
// typed error and no change. [New] does the same for enqueue, and [Replay]
// re-derives a job's state, attempt and revision from its events.
package lifecycle
