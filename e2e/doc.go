// Package e2e holds stint's end-to-end tests: real worker pools and the real
// maintenance services on a real store, SQLite and PostgreSQL, driven through
// the failures a job system exists for (a worker that dies, cancels that are
// and are not acknowledged, timeouts, deadlines, budgets, exhausted retries
// and replays, a process killed with SIGKILL), each checked afterwards by
// `stint verify`.
//
// On SQLite one manual clock drives the store, the pools and the services,
// and the tests move it; on PostgreSQL the store's clock is the database's,
// so the tests use short leases and limits in real time and wait for
// conditions. No test sleeps or asserts a duration.
package e2e
