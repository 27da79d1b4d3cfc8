package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The history of jobs (job_events) is partitioned by the time of each event
// (column at), in partitions of Options.EventPartition (default one day)
// aligned on the Unix epoch, named job_events_pYYYYMMDD_HHMM after their
// start (UTC). A DEFAULT partition, job_events_default, catches events whose
// partition was not made in time (and the events an upgrade from the
// layout before 0003 carried over).
//
// Partitions are made ahead of time, the current one and the next
// partitionsAhead, by EnsurePartitions: Open calls it, and so should a
// periodic maintenance pass (the retention pass does, through the store).
//
// Retention never deletes history row by row. The rule: a partition is
// detached and dropped, whole, when its range ends before the retention
// cutoff and no job with an event in it still exists. Terminal jobs past
// retention are deleted from jobs first (JobDeleteFinished, same
// transaction); a job still alive (a long-running or a scheduled one) keeps
// every partition holding one of its events. Events are always read joined
// to their job, so the events of a deleted job are unreachable from the
// moment the job goes, until their partition is dropped.

// partitionsAhead is how many partitions past the current one
// EnsurePartitions makes: a day's worth of slack at the default width, and
// more for narrower partitions.
const partitionsAhead = 2

// lockTimeout bounds how long a partition change waits for its locks
// (creating one locks the default partition; dropping one locks job_events
// for a moment). A busy table makes it give up and try at the next pass
// rather than queue every writer behind it.
const lockTimeout = "2s"

// partitionName is the name of the partition starting at from.
func partitionName(from time.Time) string {
	return "job_events_p" + from.UTC().Format("20060102_1504")
}

// EnsurePartitions makes the event partitions of the period holding now
// and of the next ones (see partitionsAhead) where they are missing. A zero
// now means the database's clock. A period whose events already sit in the
// default partition gets no partition of its own (its events stay in the
// default); changing the width leaves existing partitions alone and makes
// new ones only where they do not overlap.
func (d *Driver) EnsurePartitions(ctx context.Context, now time.Time) error {
	return pgx.BeginFunc(ctx, d.pool, func(ptx pgx.Tx) error {
		t := newTx(ptx.Conn(), "", d.opts, true)
		return t.ensurePartitions(ctx, now, t.partition)
	})
}

// ensurePartitions is EnsurePartitions inside the transaction t.
func (t *tx) ensurePartitions(ctx context.Context, now time.Time, width time.Duration) error {
	if _, err := t.exec(ctx, qAdvisoryXactLock, migrateLockKey("partitions")); err != nil {
		return fmt.Errorf("postgres: lock the event partitions: %w", err)
	}
	if now.IsZero() {
		if err := t.queryRow(ctx, qNow, nil, &now); err != nil {
			return fmt.Errorf("postgres: read the clock: %w", err)
		}
	}
	if _, err := t.exec(ctx, qSetLockTimeout, lockTimeout); err != nil {
		return err
	}
	start := now.UTC().Truncate(width)
	for i := 0; i <= partitionsAhead; i++ {
		from := start.Add(time.Duration(i) * width)
		to := from.Add(width)
		name := partitionName(from)
		var exists, crowded bool
		if err := t.queryRow(ctx, qPartitionExists, []any{name, from, to}, &exists, &crowded); err != nil {
			return fmt.Errorf("postgres: look for event partition %s: %w", name, err)
		}
		if exists || crowded {
			continue
		}
		if _, err := t.exec(ctx, "savepoint partition"); err != nil {
			return err
		}
		_, err := t.exec(ctx, createPartitionSQL(name, from, to))
		var pe *pgconn.PgError
		switch {
		case err == nil:
		case errors.As(err, &pe) && (pe.Code == codeInvalidObjectDefinition || pe.Code == codeLockNotAvailable):
			// It overlaps a partition of another width: leave it. Or the
			// default partition is busy: try at the next pass, while the
			// default catches the events.
			if _, err := t.exec(ctx, "rollback to savepoint partition"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("postgres: create event partition %s: %w", name, err)
		}
	}
	return nil
}

// codeInvalidObjectDefinition is what CREATE TABLE ... PARTITION OF says
// when the new partition would overlap another.
const codeInvalidObjectDefinition = "42P17"

// createPartitionSQL creates the event partition name for [from, to), with
// the autovacuum settings of migrations/0003_layout.sql's default partition.
func createPartitionSQL(name string, from, to time.Time) string {
	const layout = "2006-01-02 15:04:05.999999Z07:00"
	return fmt.Sprintf(`CREATE TABLE %s PARTITION OF job_events FOR VALUES FROM ('%s') TO ('%s')
    WITH (autovacuum_vacuum_insert_scale_factor = 0.1, autovacuum_vacuum_scale_factor = 0.5)`,
		pgx.Identifier{name}.Sanitize(), from.UTC().Format(layout), to.UTC().Format(layout))
}

// dropEventPartitions detaches and drops the event partitions that ended
// before cutoff and hold no event of a job that still exists (see the rule
// above). Each goes in a savepoint: one it cannot lock in time is left for
// the next pass.
func (t *tx) dropEventPartitions(ctx context.Context, cutoff time.Time) error {
	type part struct {
		name  string
		dflt  bool
		upper *time.Time
	}
	parts, err := rows(ctx, t, qEventPartitions, nil, func(r pgx.CollectableRow) (part, error) {
		var p part
		err := r.Scan(&p.name, &p.dflt, &p.upper)
		return p, err
	})
	if err != nil {
		return fmt.Errorf("postgres: list event partitions: %w", err)
	}
	for _, p := range parts {
		if !p.dflt && (p.upper == nil || p.upper.After(cutoff)) {
			continue
		}
		id := pgx.Identifier{p.name}.Sanitize()
		var pinned bool
		q, args := `SELECT EXISTS (SELECT 1 FROM `+id+` e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at)`, []any(nil)
		if p.dflt {
			// The default has no range: every event in it must be old. An
			// empty one stays, rather than be dropped and made again.
			q, args = q+` OR EXISTS (SELECT 1 FROM `+id+` WHERE at >= $1) OR NOT EXISTS (SELECT 1 FROM `+id+`)`, []any{cutoff}
		}
		if err := t.queryRow(ctx, q, args, &pinned); err != nil {
			return fmt.Errorf("postgres: check event partition %s: %w", p.name, err)
		}
		if pinned {
			continue
		}
		if err := t.dropPartition(ctx, p.name, p.dflt); err != nil {
			return err
		}
	}
	return nil
}

// dropPartition detaches and drops one partition (and puts a fresh default
// back when it was the default), in a savepoint that a lock timeout rolls
// back.
func (t *tx) dropPartition(ctx context.Context, name string, dflt bool) error {
	id := pgx.Identifier{name}.Sanitize()
	stmts := []string{
		"savepoint drop_partition",
		"SELECT set_config('lock_timeout', '" + lockTimeout + "', true)",
		"ALTER TABLE job_events DETACH PARTITION " + id,
		"DROP TABLE " + id,
	}
	if dflt {
		stmts = append(stmts, `CREATE TABLE job_events_default PARTITION OF job_events DEFAULT
    WITH (autovacuum_vacuum_insert_scale_factor = 0.1, autovacuum_vacuum_scale_factor = 0.5)`,
			`CREATE INDEX job_events_default_at_idx ON job_events_default (at)`)
	}
	for _, s := range stmts {
		if _, err := t.exec(ctx, s); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == codeLockNotAvailable {
				_, rerr := t.exec(ctx, "rollback to savepoint drop_partition")
				return rerr
			}
			return fmt.Errorf("postgres: drop event partition %s: %w", name, err)
		}
	}
	_, err := t.exec(ctx, "release savepoint drop_partition")
	return err
}

// codeLockNotAvailable is a lock_timeout that expired.
const codeLockNotAvailable = "55P03"
