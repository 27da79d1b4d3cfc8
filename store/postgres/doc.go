// Package postgres is the PostgreSQL backend of the stint store, for
// deployments where many stint processes and workers share one database.
// It needs PostgreSQL 13 or later.
//
// It implements [store.Driver] on a pgx v5 connection pool; [store.New] adds
// the lifecycle, and [OpenStore] does both. All tables live in one schema
// (Options.Schema, "stint" by default), created and migrated on Open from
// the SQL files embedded in this package, so several installations can
// share a database.
//
// Every field of a job has a typed column of its own (see
// migrations/0003_layout.sql); a transition writes only the columns a
// transition may change, and the event log (job_events) is lean typed rows,
// partitioned by time (see partitions.go for how partitions are made ahead
// and dropped whole by retention). A terminal job's provenance is its row.
//
// Claims lock rows with FOR UPDATE SKIP LOCKED, so any number of claimers
// take disjoint jobs; batched writes are one statement each, and a
// transaction sends them in as few round trips as it can: BEGIN, the first
// read and the clock in one, the writes and COMMIT in another (see tx).
// Time comes from the database's clock, the one every node shares.
//
// Transient failures never reach the caller: serialization failures,
// deadlocks, a lost race on a unique index between two enqueues of the same
// job, and lost connections roll the transaction back and run it again.
// When a connection breaks during COMMIT, the driver asks the server whether
// the transaction committed (pg_xact_status) instead of guessing; only when
// it cannot learn that does it return [ErrCommitUncertain].
//
// Committed enqueues send one NOTIFY per queue, which [Driver.Listen] turns
// into the store's wake-ups in every process. [EnqueueTx] enqueues inside a
// caller's own pgx transaction. Package pgtest gives tests a store on a
// fresh schema of a test database.
package postgres
