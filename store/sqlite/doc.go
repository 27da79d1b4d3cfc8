// Package sqlite is stint's embedded backend: a [store.Driver] on a single
// SQLite file through modernc.org/sqlite (pure Go, no cgo).
//
// The file runs in WAL mode with synchronous=FULL. All writes go through one
// connection (SQLite has one writer anyway) in BEGIN IMMEDIATE transactions;
// reads use a separate pool and see consistent snapshots. SQLITE_BUSY from
// another process is waited out and retried, never returned. Migrations are
// embedded and applied on open.
package sqlite
