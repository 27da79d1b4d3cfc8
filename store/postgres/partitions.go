package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The history is partitioned by time: job_events and run_events by the time
// of each event (column at), the outbox by the time a message was written
// (created_at, which its updates never change). Partitions are
// Options.EventPartition wide (default one day), aligned on the Unix epoch,
// and named TABLE_pYYYYMMDD_HHMM after their start (UTC). A DEFAULT
// partition, TABLE_default, catches rows whose partition was not made in
// time (and the rows an upgrade carried over).
//
// Partitions are made ahead of time, the current one and the next
// partitionsAhead, by EnsurePartitions: Open calls it, and so does the
// maintenance retention service on every pass, whether retention is on or
// off (store.EnsurePartitions).
//
// Retention never deletes history row by row. The rule: a partition is
// detached and dropped, whole, when its range ends before the retention
// cutoff and nothing live is in it (see historyTable.pinned):
//   - job_events: no job with an event in it still exists. Terminal jobs
//     past retention are deleted from jobs first (JobDeleteFinished, same
//     transaction); a job still alive (a long-running or a scheduled one)
//     keeps every partition holding one of its events.
//   - run_events: no run with an event in it still exists (runs past
//     retention go first, RunDeleteFinished).
//   - outbox: no message in it is pending, nor ended (was delivered or
//     dead-lettered) after the cutoff.
//
// Events are always read joined to their job or run (created before them),
// so the events of a deleted job or run are unreachable from the moment it
// goes, until their partition is dropped.

// historyTable is one time-partitioned table.
type historyTable struct {
	// name is the partitioned table; its partitions are name_p... and
	// name_default.
	name string
	// key is the partition key, a timestamptz column.
	key string
	// with is the storage parameters of each partition (a partitioned
	// parent holds none).
	with string
	// pinned is a query, on the partition %[1]s and the cutoff $1, that
	// says whether something live is in it.
	pinned string
}

// insertOnly are the storage parameters of a history table that is only
// ever inserted into: vacuum it for the visibility map (so index-only reads
// stay cheap) after 10% new rows, hardly ever for dead rows, which retention
// leaves none of.
const insertOnly = `autovacuum_vacuum_insert_scale_factor = 0.1, autovacuum_vacuum_scale_factor = 0.5`

// historyTables are the partitioned tables, in the order retention visits
// them. The settings match the DEFAULT partitions of migrations 0003 and
// 0007.
var historyTables = []historyTable{
	{
		name: "job_events", key: "at", with: insertOnly,
		pinned: `SELECT EXISTS (SELECT 1 FROM %[1]s e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at)`,
	},
	{
		name: "run_events", key: "at", with: insertOnly,
		pinned: `SELECT EXISTS (SELECT 1 FROM %[1]s e JOIN runs r ON r.id = e.run_id AND e.at >= r.created_at)`,
	},
	{
		// A message is updated while it is tried, then left alone.
		name: "outbox", key: "created_at",
		with: `autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.1`,
		pinned: `SELECT EXISTS (SELECT 1 FROM %[1]s WHERE state = 'pending'
    OR COALESCE(delivered_at, next_attempt_at) >= $1)`,
	},
}

// history returns the partitioned table name.
func history(name string) historyTable {
	for _, h := range historyTables {
		if h.name == name {
			return h
		}
	}
	panic("postgres: no history table " + name)
}

// partitionsAhead is how many partitions past the current one
// EnsurePartitions makes: a day's worth of slack at the default width, and
// more for narrower partitions.
const partitionsAhead = 2

// lockTimeout bounds how long a partition change waits for its locks
// (creating one locks the default partition; dropping one locks the parent
// for a moment). A busy table makes it give up and try at the next pass
// rather than queue every writer behind it.
const lockTimeout = "2s"

// partitionName is the name of table's partition starting at from.
func partitionName(table string, from time.Time) string {
	return table + "_p" + from.UTC().Format("20060102_1504")
}

// defaultName is the name of table's DEFAULT partition.
func defaultName(table string) string { return table + "_default" }

// EnsurePartitions makes the partitions of every history table (job_events,
// run_events, outbox) for the period holding now and the next ones (see
// partitionsAhead) where they are missing. A zero now means the database's
// clock. A period whose rows already sit in a table's default partition
// gets no partition of its own there (its rows stay in the default);
// changing the width leaves existing partitions alone and makes new ones
// only where they do not overlap.
func (d *Driver) EnsurePartitions(ctx context.Context, now time.Time) error {
	return pgx.BeginFunc(ctx, d.pool, func(ptx pgx.Tx) error {
		t := newTx(ptx.Conn(), "", d.opts, true)
		return t.ensurePartitions(ctx, now, t.partition)
	})
}

// ensurePartitions is EnsurePartitions inside the transaction t.
func (t *tx) ensurePartitions(ctx context.Context, now time.Time, width time.Duration) error {
	if _, err := t.exec(ctx, qAdvisoryXactLock, migrateLockKey("partitions")); err != nil {
		return fmt.Errorf("postgres: lock the history partitions: %w", err)
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
	for _, h := range historyTables {
		for i := 0; i <= partitionsAhead; i++ {
			from := start.Add(time.Duration(i) * width)
			if err := t.ensurePartition(ctx, h, from, from.Add(width)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensurePartition makes h's partition of [from, to) unless it exists, its
// range already has rows in the default, or it overlaps a partition of
// another width.
func (t *tx) ensurePartition(ctx context.Context, h historyTable, from, to time.Time) error {
	name := partitionName(h.name, from)
	q := fmt.Sprintf(`SELECT to_regclass(quote_ident($1)) IS NOT NULL,
       EXISTS (SELECT 1 FROM %s WHERE %s >= $2 AND %s < $3)`,
		pgx.Identifier{defaultName(h.name)}.Sanitize(), h.key, h.key)
	var exists, crowded bool
	if err := t.queryRow(ctx, q, []any{name, from, to}, &exists, &crowded); err != nil {
		return fmt.Errorf("postgres: look for partition %s: %w", name, err)
	}
	if exists || crowded {
		return nil
	}
	if _, err := t.exec(ctx, "savepoint partition"); err != nil {
		return err
	}
	_, err := t.exec(ctx, createPartitionSQL(h, name, from, to))
	var pe *pgconn.PgError
	switch {
	case err == nil:
		_, err = t.exec(ctx, "release savepoint partition")
		return err
	case errors.As(err, &pe) && (pe.Code == codeInvalidObjectDefinition || pe.Code == codeLockNotAvailable):
		// It overlaps a partition of another width: leave it. Or the
		// default partition is busy: try at the next pass, while the
		// default catches the rows.
		_, err := t.exec(ctx, "rollback to savepoint partition")
		return err
	default:
		return fmt.Errorf("postgres: create partition %s: %w", name, err)
	}
}

// codeInvalidObjectDefinition is what CREATE TABLE ... PARTITION OF says
// when the new partition would overlap another.
const codeInvalidObjectDefinition = "42P17"

// createPartitionSQL creates h's partition name for [from, to).
func createPartitionSQL(h historyTable, name string, from, to time.Time) string {
	const layout = "2006-01-02 15:04:05.999999Z07:00"
	return fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s') WITH (%s)`,
		pgx.Identifier{name}.Sanitize(), h.name, from.UTC().Format(layout), to.UTC().Format(layout), h.with)
}

// qPartitions lists the partitions of a table ($1): name, whether it is
// the default, and the end of its range.
const qPartitions = `
SELECT c.relname, b.bound = 'DEFAULT',
       substring(b.bound FROM 'TO \(''([^'']+)''\)')::timestamptz
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) AS b
WHERE i.inhparent = $1::regclass
ORDER BY 3 NULLS LAST`

// dropPartitions detaches and drops h's partitions that ended before cutoff
// and hold nothing live (see the rule above), and returns how many rows
// went with them.
// Each goes in a savepoint: one it cannot lock in time is left for the next
// pass.
func (t *tx) dropPartitions(ctx context.Context, h historyTable, cutoff time.Time) (int, error) {
	type part struct {
		name  string
		dflt  bool
		upper *time.Time
	}
	parts, err := rows(ctx, t, qPartitions, []any{h.name}, func(r pgx.CollectableRow) (part, error) {
		var p part
		err := r.Scan(&p.name, &p.dflt, &p.upper)
		return p, err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: list partitions of %s: %w", h.name, err)
	}
	dropped := 0
	for _, p := range parts {
		if !p.dflt && (p.upper == nil || p.upper.After(cutoff)) {
			continue
		}
		id := pgx.Identifier{p.name}.Sanitize()
		q := fmt.Sprintf(h.pinned, id)
		if p.dflt {
			// The default has no range: every row in it must be old. An
			// empty one stays, rather than be dropped and made again.
			q += ` OR EXISTS (SELECT 1 FROM ` + id + ` WHERE ` + h.key + ` >= $1) OR NOT EXISTS (SELECT 1 FROM ` + id + `)`
		}
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{cutoff}
		}
		var pinned bool
		if err := t.queryRow(ctx, q, args, &pinned); err != nil {
			return dropped, fmt.Errorf("postgres: check partition %s: %w", p.name, err)
		}
		if pinned {
			continue
		}
		var n int
		if err := t.queryRow(ctx, `SELECT count(*) FROM `+id, nil, &n); err != nil {
			return dropped, fmt.Errorf("postgres: count partition %s: %w", p.name, err)
		}
		ok, err := t.dropPartition(ctx, h, p.name, p.dflt)
		if err != nil {
			return dropped, err
		}
		if ok {
			dropped += n
		}
	}
	return dropped, nil
}

// dropPartition detaches and drops one partition of h (and puts a fresh
// default back when it was the default), in a savepoint that a lock timeout
// rolls back; it reports whether the partition went.
func (t *tx) dropPartition(ctx context.Context, h historyTable, name string, dflt bool) (bool, error) {
	id := pgx.Identifier{name}.Sanitize()
	stmts := []string{
		"savepoint drop_partition",
		"SELECT set_config('lock_timeout', '" + lockTimeout + "', true)",
		"ALTER TABLE " + h.name + " DETACH PARTITION " + id,
		"DROP TABLE " + id,
	}
	if dflt {
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s DEFAULT WITH (%s)`, id, h.name, h.with),
			fmt.Sprintf(`CREATE INDEX %s ON %s (%s)`, pgx.Identifier{name + "_" + h.key + "_idx"}.Sanitize(), id, h.key))
	}
	for _, s := range stmts {
		if _, err := t.exec(ctx, s); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == codeLockNotAvailable {
				_, rerr := t.exec(ctx, "rollback to savepoint drop_partition")
				return false, rerr
			}
			return false, fmt.Errorf("postgres: drop partition %s: %w", name, err)
		}
	}
	_, err := t.exec(ctx, "release savepoint drop_partition")
	return err == nil, err
}

// codeLockNotAvailable is a lock_timeout that expired.
const codeLockNotAvailable = "55P03"
