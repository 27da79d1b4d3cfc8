package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// historyTable is the table whose partitions the maintenance service
// creates ahead of time.
const historyTable = "job_events"

// qPartitions lists a partitioned table's partitions with their bounds, as
// pg_get_expr prints them: "FOR VALUES FROM ('…') TO ('…')" or "DEFAULT".
const qPartitions = `
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1
ORDER BY c.relname`

// rangeBound reads a range partition's bounds on a single time column.
var rangeBound = regexp.MustCompile(`^FOR VALUES FROM \('([^']+)'\) TO \('([^']+)'\)$`)

// partition is one range partition of the history table.
type partition struct {
	name     string
	from, to time.Time
}

// checkPartitions reports a history table without a partition for now or
// for what comes next, and rows in its DEFAULT partition.
func (d *pgDoctor) checkPartitions(ctx context.Context) error {
	var oid uint32
	var kind string
	err := d.conn.QueryRow(ctx, "SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)", d.qualified(historyTable)).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		d.rep.check(CheckPartitions, "skipped: no "+historyTable+" table")
		return nil
	}
	if err != nil {
		return err
	}
	if kind != "p" {
		d.rep.check(CheckPartitions, historyTable+" is not partitioned yet: this schema keeps history in one table, and retention deletes its rows")
		return nil
	}
	rows, err := d.conn.Query(ctx, qPartitions, oid)
	if err != nil {
		return err
	}
	var parts []partition
	var def, name, bound string
	_, err = pgx.ForEachRow(rows, []any{&name, &bound}, func() error {
		if bound == "DEFAULT" {
			def = name
			return nil
		}
		m := rangeBound.FindStringSubmatch(bound)
		if m == nil {
			return fmt.Errorf("partition %s: bounds %q are not a range of times: doctor cannot read them", name, bound)
		}
		from, ferr := parseBound(m[1])
		to, terr := parseBound(m[2])
		if ferr != nil || terr != nil {
			return fmt.Errorf("partition %s: bounds %q are not a range of times: doctor cannot read them", name, bound)
		}
		parts = append(parts, partition{name: name, from: from, to: to})
		return nil
	})
	if err != nil {
		return err
	}
	d.partitionsAhead(parts)
	return d.defaultRows(ctx, def)
}

// partitionsAhead wants a partition that takes rows now and
// opts.PartitionsAhead more beyond it.
func (d *pgDoctor) partitionsAhead(parts []partition) {
	var current *partition
	ahead := 0
	var last time.Time
	for i, p := range parts {
		if !p.from.After(d.now) && d.now.Before(p.to) {
			current = &parts[i]
		}
		if p.from.After(d.now) {
			ahead++
		}
		if p.to.After(last) {
			last = p.to
		}
	}
	summary := fmt.Sprintf("%d partitions of %s, %d beyond now", len(parts), historyTable, ahead)
	if !last.IsZero() {
		summary += ", the last ending " + last.UTC().Format(time.RFC3339)
	}
	fix := "the maintenance service's retention pass creates partitions ahead of time: check that a stint process with maintenance " +
		"(a worker pool or the server) is running and what it logs; it creates the missing ones on its next pass"
	var findings []Finding
	if current == nil {
		findings = append(findings, Finding{Subject: historyTable,
			Problem: fmt.Sprintf("no partition of %s covers now (%s): new events go to the DEFAULT partition, or fail without one",
				historyTable, d.now.UTC().Format(time.RFC3339)),
			Fix: fix})
	}
	if ahead < d.opts.PartitionsAhead {
		findings = append(findings, Finding{Subject: historyTable,
			Problem: fmt.Sprintf("%s has %d partitions beyond now, and %d are wanted: when the current one ends, events land in the DEFAULT partition",
				historyTable, ahead, d.opts.PartitionsAhead),
			Fix: fix})
	}
	d.rep.check(CheckPartitions, summary, findings...)
}

// defaultRows reports rows in the DEFAULT partition: they were written where
// no partition covered their time, and a partition overlapping them cannot
// be created until they move.
func (d *pgDoctor) defaultRows(ctx context.Context, def string) error {
	if def == "" {
		d.rep.check(CheckDefaultPartition, "no DEFAULT partition")
		return nil
	}
	const limit = 1_000_000 // counting more would only make doctor slow
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %d) t", d.qualified(def), limit)
	if err := d.conn.QueryRow(ctx, q).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		d.rep.check(CheckDefaultPartition, "the DEFAULT partition "+def+" is empty")
		return nil
	}
	count := fmt.Sprint(n)
	if n == limit {
		count = fmt.Sprintf("at least %d", n)
	}
	d.rep.check(CheckDefaultPartition, count+" rows in the DEFAULT partition "+def, Finding{Subject: def,
		Problem: fmt.Sprintf("%s rows of %s are in the DEFAULT partition %s: no partition covered their time when they were written, "+
			"retention cannot drop them with a partition, and a partition overlapping them cannot be created", count, historyTable, def),
		Fix: "let maintenance create the partitions ahead first (see the partitions check); then, in one transaction, detach " + def +
			", create the partitions covering its rows, INSERT INTO " + d.qualified(historyTable) + " SELECT * FROM the detached table, " +
			"empty it and attach it again as the DEFAULT"})
	return nil
}

// parseBound reads a timestamptz bound as PostgreSQL prints it in UTC.
func parseBound(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05-07", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", s)
}
