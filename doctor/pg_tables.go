package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// qTables reads each stint table's row counts, size, last vacuum and
// storage options, from the statistics functions (pg_stat_user_tables would
// compute its row for every table of the database first).
const qTables = `
SELECT c.relname, pg_stat_get_live_tuples(c.oid), pg_stat_get_dead_tuples(c.oid), greatest(c.reltuples, 0)::float8,
       pg_total_relation_size(c.oid),
       greatest(pg_stat_get_last_autovacuum_time(c.oid), pg_stat_get_last_vacuum_time(c.oid)),
       coalesce(c.reloptions, '{}')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'r'
ORDER BY c.relname`

// table is one stint table's statistics.
type table struct {
	name       string
	live, dead int64
	reltuples  float64
	bytes      int64
	vacuumed   *time.Time
	options    []string
}

// checkTables reports bloated tables (dead tuples) and tables autovacuum
// does not keep up with.
func (d *pgDoctor) checkTables(ctx context.Context) error {
	rows, err := d.conn.Query(ctx, qTables, d.schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (table, error) {
		var t table
		err := row.Scan(&t.name, &t.live, &t.dead, &t.reltuples, &t.bytes, &t.vacuumed, &t.options)
		return t, err
	})
	if err != nil {
		return err
	}
	d.checkDead(tables)
	return d.checkAutovacuum(ctx, tables)
}

func (d *pgDoctor) checkDead(tables []table) {
	var findings []Finding
	var dead, bytes int64
	for _, t := range tables {
		dead += t.dead
		bytes += t.bytes
		ratio := float64(t.dead) / float64(max(1, t.live+t.dead))
		if t.dead <= d.opts.DeadTuples || ratio <= d.opts.DeadRatio {
			continue
		}
		findings = append(findings, Finding{Subject: t.name,
			Problem: fmt.Sprintf("table %s has %d dead tuples, %.0f%% of its rows (%s with its indexes): claims and scans read past them",
				t.name, t.dead, 100*ratio, mib(t.bytes)),
			Fix: "first end what holds the horizon (see the transactions and replication slots checks) or let autovacuum catch up; " +
				"then VACUUM (VERBOSE) " + d.qualified(t.name) + " reports what it could remove. Space already bloated comes back only " +
				"with pg_repack or VACUUM FULL (which locks the table)"})
	}
	d.rep.check(CheckDeadTuples, fmt.Sprintf("%d tables, %d dead tuples, %s", len(tables), dead, mib(bytes)), findings...)
}

// qAutovacuumSettings are the server's autovacuum settings.
const qAutovacuumSettings = `
SELECT current_setting('autovacuum') = 'on', current_setting('track_counts') = 'on',
       current_setting('autovacuum_vacuum_threshold')::float8, current_setting('autovacuum_vacuum_scale_factor')::float8`

func (d *pgDoctor) checkAutovacuum(ctx context.Context, tables []table) error {
	var on, counts bool
	var threshold, scale float64
	if err := d.conn.QueryRow(ctx, qAutovacuumSettings).Scan(&on, &counts, &threshold, &scale); err != nil {
		return err
	}
	var findings []Finding
	if !on || !counts {
		findings = append(findings, Finding{Subject: "server",
			Problem: "autovacuum is off on this server (autovacuum or track_counts): nothing removes dead rows, and stint's tables grow without bound",
			Fix:     "set autovacuum = on and track_counts = on in postgresql.conf and reload (SELECT pg_reload_conf())"})
	}
	due := 0
	for _, t := range tables {
		opts := reloptions(t.options)
		if opts["autovacuum_enabled"] == "false" || opts["autovacuum_enabled"] == "off" {
			findings = append(findings, Finding{Subject: t.name,
				Problem: fmt.Sprintf("autovacuum is disabled on table %s (autovacuum_enabled=false)", t.name),
				Fix:     "ALTER TABLE " + d.qualified(t.name) + " RESET (autovacuum_enabled)"})
			continue
		}
		limit := floatOr(opts["autovacuum_vacuum_threshold"], threshold) + floatOr(opts["autovacuum_vacuum_scale_factor"], scale)*t.reltuples
		if float64(t.dead) <= limit {
			continue
		}
		due++
		if t.vacuumed != nil && d.now.Sub(*t.vacuumed) < d.opts.AutovacuumLag {
			continue
		}
		last := "never vacuumed"
		if t.vacuumed != nil {
			last = "last vacuumed " + d.now.Sub(*t.vacuumed).Round(time.Second).String() + " ago"
		}
		findings = append(findings, Finding{Subject: t.name,
			Problem: fmt.Sprintf("table %s has %d dead tuples, past its autovacuum threshold of %.0f, and was %s: autovacuum does not keep up",
				t.name, t.dead, limit, last),
			Fix: "check that autovacuum workers are free (autovacuum_max_workers; long vacuums of other tables take them) and not throttled " +
				"(autovacuum_vacuum_cost_limit); the stint migrations set per-table autovacuum settings: see docs/operations.md"})
	}
	summary := "autovacuum on"
	if !on || !counts {
		summary = "autovacuum OFF"
	}
	d.rep.check(CheckAutovacuum, fmt.Sprintf("%s; %d tables past their vacuum threshold", summary, due), findings...)
	return nil
}

// reloptions reads pg_class.reloptions ("name=value") into a map.
func reloptions(opts []string) map[string]string {
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		m[k] = strings.ToLower(v)
	}
	return m
}

func floatOr(s string, def float64) float64 {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return def
}
