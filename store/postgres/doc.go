// Package postgres is the PostgreSQL backend of the stint store, for
// deployments where many stint processes and workers share one database.
//
// It implements [store.Driver] on a pgx v5 connection pool; [store.New] adds
// the lifecycle, and [OpenStore] does both. All tables live in one schema
// (Options.Schema, "stint" by default), created and migrated on Open from
// the SQL files embedded in this package, so several installations can
// share a database.
//
// Claims lock rows with FOR UPDATE SKIP LOCKED, so any number of claimers
// take disjoint jobs; batched writes are one statement each. Time comes from
// the database's now(), the one clock every node shares. Conflicts between
// transactions (serialization failures, deadlocks, a lost race on a dedupe
// key) and lost connections roll back and rerun the transaction, so callers
// never see them; a connection lost during COMMIT, whose outcome cannot be
// known, is reported as [ErrCommitUncertain] instead of being run twice.
//
// Committed enqueues send one NOTIFY per queue, which [Driver.Listen] turns
// into the store's wake-ups in every process. [EnqueueTx] enqueues inside a
// caller's own pgx transaction.
package postgres
