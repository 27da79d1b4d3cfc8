// Package sqlite is stint's embedded backend: a [store.Driver] on a single
// SQLite file through modernc.org/sqlite (pure Go, no cgo).
//
// The file runs in WAL mode with synchronous=FULL. Every job field lives in
// a typed column of its own (migration 0003); rows are scanned straight into
// lifecycle records. All writes go through one connection owned by a single
// writer goroutine, which commits concurrent transactions in groups: each
// in its own SAVEPOINT inside one BEGIN IMMEDIATE … COMMIT, so they share
// one fsync, and none is acknowledged before its commit. Reads use a
// separate pool and see consistent snapshots. SQLITE_BUSY from another
// process is waited out and retried, never returned. Migrations are embedded
// and applied on open (unless Options.NoMigrate).
package sqlite
