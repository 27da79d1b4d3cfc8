// Package cli is the stint command line: the cobra commands behind the one
// stint binary, kept out of package main so that tests can run them
// in-process.
//
// [Main] runs a command line and returns its exit code: 0 on success, 1 when
// the system failed (the database is unreachable, verify found problems) and
// 2 when the input was wrong (an unknown flag or flag value, malformed JSON,
// an unknown job id, a transition the lifecycle does not allow). A usage
// error prints one line on stderr and changes nothing.
//
// Each command lives in its own file and is registered in root.go. Commands
// reach the database only through app.openStore, which picks the backend
// from the global flags: PostgreSQL when --database-url (STINT_DATABASE_URL)
// is set, otherwise the embedded SQLite file named by --db (STINT_DB).
package cli
