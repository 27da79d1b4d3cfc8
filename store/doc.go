// Package store is stint's storage contract: the [Store] interface whose
// methods are the lifecycle operations, and the [Driver] interface a backend
// implements to provide it.
//
// [New] builds a Store on a Driver. It is the only place that turns a request
// into a transition: inside one database transaction it reads the job (locked
// on backends that lock rows), asks [lifecycle.Apply] whether the transition
// is allowed and what it produces, writes the new row with a compare-and-swap
// on its revision, and appends the event (and, for a terminal job, its
// provenance record). A backend (store/sqlite, store/postgres) is a thin
// translation of the Driver's verbs into SQL. store/storetest is the
// conformance suite every backend must pass.
//
// Optional capabilities (queue controls, schedules, tokens, debounce) are
// interfaces a Store may also have. Find them with [As], or the helpers built
// on it ([Queues], [Schedules], [TokensOf], [Debounce]): they look through
// every wrapper that has an Unwrap method, so wrapping a store for metrics
// or tracing never turns a capability off.
package store
