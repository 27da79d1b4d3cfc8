// Package dispatch serves a server's waiting claims (long polls) from one
// place. Waiting claims of the same queues, kinds and topics stand in one
// line, first come first served. A wake-up of one of their queues starts a
// serve: one claim for the waiters at the head of the line, and more only
// while claims come back full, so a wake-up costs about one claim per batch
// of waiters it can feed plus at most one that finds the queue drained,
// never one per waiter. A claim that came back short marks the line
// drained: waiters that arrive after it park without a query until a
// wake-up (or, in case a wake-up was lost, Config.Recheck).
//
// With a store that leases for several owners at once
// (store.ClaimManyStore), one claim serves every waiter parked when it
// starts (up to Config.Group jobs), and the jobs it leased are dealt one at
// a time, in turn, to the waiters in the order they came; each job is
// leased under its waiter's own worker id, lease TTL and request id, so the
// store records the true owner and a retried claim finds its jobs by its
// request id. At most Config.Parallel claims of a line run at once, so under
// load claims carry more waiters rather than there being more claims.
// Without such a store each claim serves one waiter.
//
// Jobs leased for a waiter that went away meanwhile (its request
// cancelled) are released at once and requeued; a release is not a failed
// attempt, so it spends none of the job's retries.
//
// A parked waiter is a goroutine blocked on a channel: it has no timer of
// its own (one timer serves every deadline) and makes no database traffic.
// Several servers on one PostgreSQL each run a dispatcher; NOTIFY wakes all
// of them and SKIP LOCKED claims keep them from leasing a job twice.
package dispatch
