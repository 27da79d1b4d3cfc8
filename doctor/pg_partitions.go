package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// historyTables are the tables whose partitions the maintenance service
// creates ahead of time: the job and run event logs and the outbox (whose
// partitions came with migration 0007; an older schema lacks them).
var historyTables = []string{"job_events", "run_events", "outbox"}

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
// for what comes next, and rows in its DEFAULT partition: one check of each
// kind over every history table.
func (d *pgDoctor) checkPartitions(ctx context.Context) error {
	var summaries, defSummaries []string
	var findings, defFindings []Finding
	for _, table := range historyTables {
		summary, f, def, err := d.tablePartitions(ctx, table)
		if err != nil {
			return err
		}
		summaries, findings = append(summaries, summary), append(findings, f...)
		if def == nil {
			continue
		}
		defSummaries, defFindings = append(defSummaries, def.summary), append(defFindings, def.findings...)
	}
	d.rep.check(CheckPartitions, strings.Join(summaries, "; "), findings...)
	if len(defSummaries) == 0 {
		d.rep.check(CheckDefaultPartition, "skipped: no partitioned history table")
		return nil
	}
	d.rep.check(CheckDefaultPartition, strings.Join(defSummaries, "; "), defFindings...)
	return nil
}

// tablePartitions reads one history table's partitions; def is nil unless
// the table is partitioned.
func (d *pgDoctor) tablePartitions(ctx context.Context, table string) (summary string, findings []Finding, def *checked, err error) {
	var oid uint32
	var kind string
	err = d.conn.QueryRow(ctx, "SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)", d.qualified(table)).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return "no " + table + " table", nil, nil, nil
	}
	if err != nil {
		return "", nil, nil, err
	}
	if kind != "p" {
		return table + " is not partitioned yet: this schema keeps it in one table, and retention deletes its rows (stint migrate partitions it)", nil, nil, nil
	}
	rows, err := d.conn.Query(ctx, qPartitions, oid)
	if err != nil {
		return "", nil, nil, err
	}
	var parts []partition
	var defName, name, bound string
	_, err = pgx.ForEachRow(rows, []any{&name, &bound}, func() error {
		if bound == "DEFAULT" {
			defName = name
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
		return "", nil, nil, err
	}
	summary, findings = d.partitionsAhead(table, parts)
	def, err = d.defaultRows(ctx, table, defName)
	return summary, findings, def, err
}

// checked is what one table contributes to a check.
type checked struct {
	summary  string
	findings []Finding
}

// partitionsAhead wants a partition that takes rows now and
// opts.PartitionsAhead more beyond it.
func (d *pgDoctor) partitionsAhead(historyTable string, parts []partition) (string, []Finding) {
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
	return summary, findings
}

// defaultRows reports rows in the DEFAULT partition: they were written where
// no partition covered their time, and a partition overlapping them cannot
// be created until they move.
func (d *pgDoctor) defaultRows(ctx context.Context, historyTable, def string) (*checked, error) {
	if def == "" {
		return &checked{summary: "no DEFAULT partition of " + historyTable}, nil
	}
	const limit = 1_000_000 // counting more would only make doctor slow
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %d) t", d.qualified(def), limit)
	if err := d.conn.QueryRow(ctx, q).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return &checked{summary: "the DEFAULT partition " + def + " is empty"}, nil
	}
	count := fmt.Sprint(n)
	if n == limit {
		count = fmt.Sprintf("at least %d", n)
	}
	return &checked{summary: count + " rows in the DEFAULT partition " + def, findings: []Finding{{Subject: def,
		Problem: fmt.Sprintf("%s rows of %s are in the DEFAULT partition %s: no partition covered their time when they were written, "+
			"retention cannot drop them with a partition, and a partition overlapping them cannot be created", count, historyTable, def),
		Fix: "let maintenance create the partitions ahead first (see the partitions check); then, in one transaction, detach " + def +
			", create the partitions covering its rows, INSERT INTO " + d.qualified(historyTable) + " SELECT * FROM the detached table, " +
			"empty it and attach it again as the DEFAULT"}}}, nil
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
