package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// qSnapshots lists the sessions of this database that hold a snapshot (a
// backend_xmin), oldest first: each holds back what vacuum may remove.
const qSnapshots = `
SELECT pid, coalesce(usename, ''), coalesce(application_name, ''), coalesce(state, ''),
       coalesce(extract(epoch FROM $1::timestamptz - xact_start), 0)::float8,
       age(backend_xmin)::bigint, left(coalesce(query, ''), 100)
FROM pg_stat_activity
WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
  AND (datname = current_database() OR datname IS NULL)
ORDER BY age(backend_xmin) DESC`

// qPrepared lists this database's prepared transactions, which hold the
// horizon as an open transaction does, with no session to end.
const qPrepared = `
SELECT gid, extract(epoch FROM $1::timestamptz - prepared)::float8, age(transaction)::bigint
FROM pg_prepared_xacts WHERE database = current_database() ORDER BY prepared`

// checkTransactions reports sessions and prepared transactions that have
// held a snapshot too long.
func (d *pgDoctor) checkTransactions(ctx context.Context) error {
	var findings []Finding
	summary := "no open transaction holds a snapshot"
	first := true
	rows, err := d.conn.Query(ctx, qSnapshots, d.now)
	if err != nil {
		return err
	}
	var pid int32
	var user, app, state, query string
	var secs float64
	var age int64
	_, err = pgx.ForEachRow(rows, []any{&pid, &user, &app, &state, &secs, &age, &query}, func() error {
		held := time.Duration(secs * float64(time.Second))
		open := held.Round(time.Second)
		if first {
			summary = fmt.Sprintf("oldest snapshot: pid %d (%s), open %s, xmin age %d", pid, state, open, age)
			first = false
		}
		if held < d.opts.TransactionAge && age < d.opts.XminAge {
			return nil
		}
		findings = append(findings, Finding{
			Subject: fmt.Sprintf("pid %d", pid),
			Problem: fmt.Sprintf("session pid %d (user %q, application %q, %s) has held a snapshot for %s (xmin age %d): "+
				"vacuum cannot remove any row that died since, so stint's tables bloat and its queries slow down; its query: %q",
				pid, user, app, state, open, age, query),
			Fix: fmt.Sprintf("end that transaction in the application (commit or roll back; %q means a client forgot to); "+
				"if it must go now: SELECT pg_terminate_backend(%d); to prevent it: set idle_in_transaction_session_timeout, "+
				"and run long reports on a replica without hot_standby_feedback", "idle in transaction", pid),
		})
		return nil
	})
	if err != nil {
		return err
	}
	rows, err = d.conn.Query(ctx, qPrepared, d.now)
	if err != nil {
		return err
	}
	var gid string
	_, err = pgx.ForEachRow(rows, []any{&gid, &secs, &age}, func() error {
		held := time.Duration(secs * float64(time.Second))
		open := held.Round(time.Second)
		if held < d.opts.TransactionAge && age < d.opts.XminAge {
			return nil
		}
		findings = append(findings, Finding{
			Subject: "prepared transaction " + gid,
			Problem: fmt.Sprintf("prepared transaction %q has been open %s (xmin age %d): it holds the horizon like an open session, with no session to end", gid, open, age),
			Fix:     fmt.Sprintf("have its transaction manager finish it, or: COMMIT PREPARED '%s' / ROLLBACK PREPARED '%s'", gid, gid),
		})
		return nil
	})
	if err != nil {
		return err
	}
	d.rep.check(CheckTransactions, summary, findings...)
	return nil
}

// qSlots lists the replication slots with what each holds: a data xmin
// (physical slots fed back by a standby), a catalog xmin (logical slots), and
// WAL since its restart_lsn.
const qSlots = `
SELECT slot_name, slot_type, active,
       xmin IS NOT NULL, coalesce(age(xmin), 0)::bigint,
       catalog_xmin IS NOT NULL, coalesce(age(catalog_xmin), 0)::bigint,
       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint
FROM pg_replication_slots ORDER BY slot_name`

// checkSlots reports replication slots that hold the horizon or retain WAL.
func (d *pgDoctor) checkSlots(ctx context.Context) error {
	var inRecovery bool
	if err := d.conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		return err
	}
	if inRecovery {
		d.rep.check(CheckSlots, "skipped: this server is a standby (check the primary)")
		return nil
	}
	rows, err := d.conn.Query(ctx, qSlots)
	if err != nil {
		return err
	}
	var findings []Finding
	var name, kind string
	var active, hasXmin, hasCatalog bool
	var xminAge, catalogAge, walBytes int64
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&name, &kind, &active, &hasXmin, &xminAge, &hasCatalog, &catalogAge, &walBytes}, func() error {
		n++
		drop := fmt.Sprintf("if nothing reads it any more, drop it: SELECT pg_drop_replication_slot('%s')", name)
		idle := "in use"
		if !active {
			idle = "NOT in use"
		}
		if hasXmin && (!active || xminAge >= d.opts.XminAge) {
			findings = append(findings, Finding{Subject: "slot " + name,
				Problem: fmt.Sprintf("replication slot %s (%s, %s) holds the xmin horizon (age %d): vacuum cannot remove dead rows anywhere in the cluster", name, kind, idle, xminAge),
				Fix:     drop + "; otherwise end the long queries on its standby, or turn hot_standby_feedback off there"})
		}
		if hasCatalog && (!active || catalogAge >= d.opts.XminAge) {
			findings = append(findings, Finding{Subject: "slot " + name,
				Problem: fmt.Sprintf("logical replication slot %s (%s) holds the catalog xmin (age %d): the system catalogs bloat and it keeps WAL", name, idle, catalogAge),
				Fix:     drop + "; otherwise make its consumer keep up"})
		}
		if !active && !hasXmin && !hasCatalog && walBytes > 0 {
			findings = append(findings, Finding{Subject: "slot " + name,
				Problem: fmt.Sprintf("replication slot %s (%s) is not in use and retains %s of WAL (it holds restart_lsn, not xmin: it fills the disk, it does not stop vacuum)", name, kind, mib(walBytes)),
				Fix:     drop + "; cap what any slot may keep with max_slot_wal_keep_size"})
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.rep.check(CheckSlots, fmt.Sprintf("%d replication slots", n), findings...)
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
