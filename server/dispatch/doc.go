// Package dispatch serves a server's waiting claims (long polls) from one
// place. Waiting claims of the same queues, kinds and topics stand in one
// line; a wake-up of one of their queues starts one claim, for the waiter
// at the head of the line, and more only while claims come back full, so a
// wake-up costs about one claim per waiter it can feed plus at most one that
// finds the queue drained, never one per waiter. A claim that came back
// short marks the line drained: waiters that arrive after it park without
// a query until a wake-up (or, in case a wake-up was lost, Config.Recheck).
//
// Each claim is made for one waiter, under that waiter's worker id, lease
// and request id, so the store records the true owner and a retried claim
// finds its jobs by its request id. Jobs leased for a waiter that went away
// meanwhile (its request cancelled) are released at once and requeued; a
// release is not a failed attempt, so it spends none of the job's retries.
//
// A parked waiter is a goroutine blocked on a channel: it has no timer of
// its own (one timer serves every deadline) and makes no database traffic.
// Several servers on one PostgreSQL each run a dispatcher; NOTIFY wakes all
// of them and SKIP LOCKED claims keep them from leasing a job twice.
package dispatch
