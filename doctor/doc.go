// Package doctor checks a stint deployment for what slows a job queue down
// over months rather than minutes, and says in plain words what is wrong
// and what to do:
//
//   - PostgreSQL: the oldest open transaction and its xmin age, replication
//     slots that hold the horizon or retain WAL, dead tuples of each stint
//     table, autovacuum lag, missing future partitions of the history tables
//     (job_events, run_events, outbox) and rows in their DEFAULT partitions,
//     and a schema older than the binary;
//   - SQLite: checkpoints starved by a long reader, the WAL file's size, and
//     a schema older than the binary.
//
// It opens the database without migrating it and changes nothing (on
// SQLite it runs a PASSIVE checkpoint, which SQLite itself runs after
// commits anyway).
//
//	rep, err := doctor.Postgres(ctx, url, "stint", doctor.Options{})
//	for _, f := range rep.Findings { fmt.Println(f.Problem, "→", f.Fix) }
package doctor
