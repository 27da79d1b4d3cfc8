package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// codeUndefinedTable is PostgreSQL's undefined_table: a table named in a
// statement does not exist (any more).
const codeUndefinedTable = "42P01"

// Keeping the planner's statistics current.
//
// The hot statements are prepared once per connection, and PostgreSQL
// keeps a prepared statement's generic plan until a statistics or schema
// change invalidates it. A plan made while a table was small (a fresh
// database: the jobs table is empty when the first completion is planned)
// scans the whole table; once the table has grown, every completion batch
// reads every row (measured: a hash join over a sequential scan of jobs,
// 3-6 ms of PostgreSQL CPU per remote job). Autovacuum's ANALYZE would
// replace the plan after 50 + 10% of the rows changed, but only when
// autovacuum runs, and only on its schedule (a minute at best).
//
// So the driver analyzes its own tables when their size has moved: a table
// of its schema whose rows changed by more than analyzeBase + analyzeScale
// of its size since the last analyze (by anyone), as autovacuum's rule
// says, and whose live rows are now more than twice (or less than half)
// what the last analyze counted, or that was never analyzed, is analyzed,
// skipping a table another session is analyzing or vacuuming. A table that
// grows from empty is thus analyzed about log2(rows) times in all, and one
// whose size holds steady under churn (the jobs of a busy queue) not at
// all: the plans' shapes follow the sizes, and an ANALYZE of jobs (65
// columns) is costly; analyzed on autovacuum's rule alone it took about a
// fifth of the PostgreSQL CPU of `stint bench` (perf of the store's
// backends), and the driver's ANALYZE samples 3,000 rows (qAnalyzeTarget). The distributions
// within a steady table are left to autovacuum. The check runs beside
// the low-water probe (in processes that claim), about once a second; a
// table is analyzed again no sooner than analyzeCostFactor times its last
// analyze took, so that a busy table costs about one percent of one
// connection. A check that finds nothing stale doubles the wait for the
// next, up to analyzeMaxWait, so that an idle process checks rarely (the
// check reads the statistics of every table of the schema: about a
// millisecond of the server's CPU). Options.DisableAnalyze turns it off for
// those who manage statistics themselves.
// qAnalyzeTarget sets the statistics target of the driver's ANALYZE (its
// transaction only): a sample of 300 times it rows, histograms and common
// values of up to that many entries. The default (100) made one ANALYZE
// of 60,000 jobs a large share of the store's PostgreSQL CPU in a run of
// stint bench (perf of its backends); autovacuum keeps its own default.
const qAnalyzeTarget = `SET LOCAL default_statistics_target = 10`

const (
	analyzeBase       = 50
	analyzeScale      = 0.1
	analyzeCostFactor = 100
	analyzeMinGap     = time.Second
	analyzeMaxWait    = 30 * time.Second
)

// qStaleTables lists the tables of a schema whose statistics are stale by
// autovacuum's default rule and whose size moved by half or double since
// they were last analyzed (reltuples is -1 for a table never analyzed). It
// reads pg_class by schema, not pg_stat_user_tables, which computes the
// statistics of every table in the database before filtering.
const qStaleTables = `
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r'
  AND pg_stat_get_mod_since_analyze(c.oid) > $2 + $3 * greatest(c.reltuples, 0)
  AND (c.reltuples < 0 OR pg_stat_get_live_tuples(c.oid) > $2 + 2 * c.reltuples
       OR 2 * pg_stat_get_live_tuples(c.oid) < c.reltuples)
ORDER BY c.relname`

// analyzer remembers when each table may next be analyzed, and when to
// check next. It is used by the probe goroutine alone.
type analyzer struct {
	next  map[string]time.Time
	check time.Time     // the next check
	wait  time.Duration // since the last check that found something
}

// due reports whether a check is due now, and schedules the next one as if
// this one found nothing.
func (a *analyzer) due(now time.Time) bool {
	if now.Before(a.check) {
		return false
	}
	a.wait = min(max(2*a.wait, analyzeMinGap), analyzeMaxWait)
	a.check = now.Add(a.wait)
	return true
}

// found makes the next check come soon: a table that went stale once
// likely will again.
func (a *analyzer) found(now time.Time) {
	a.wait = analyzeMinGap
	a.check = now.Add(a.wait)
}

// analyzeStale analyzes the tables of the driver's schema whose statistics
// are stale and whose gap since their last analyze by this driver has
// passed. It returns the tables it analyzed.
func (d *Driver) analyzeStale(ctx context.Context) ([]string, error) {
	if d.opts.DisableAnalyze || !d.an.due(time.Now()) {
		return nil, nil
	}
	rows, err := d.pool.Query(ctx, qStaleTables, d.opts.Schema, analyzeBase, analyzeScale)
	if err != nil {
		return nil, err
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if d.an.next == nil {
		d.an.next = map[string]time.Time{}
	}
	var done []string
	for _, table := range stale {
		if time.Now().Before(d.an.next[table]) {
			continue
		}
		start := time.Now()
		// A small sample: the plans need the sizes and the rough shape of
		// the keys, not 30,000 rows of every one of 65 columns.
		err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, qAnalyzeTarget); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `ANALYZE (SKIP_LOCKED) `+pgx.Identifier{d.opts.Schema, table}.Sanitize())
			return err
		})
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == codeUndefinedTable {
			continue // a partition retention dropped since the list was read
		}
		if err != nil {
			return done, err
		}
		d.an.next[table] = time.Now().Add(max(analyzeMinGap, analyzeCostFactor*time.Since(start)))
		done = append(done, table)
	}
	if len(stale) > 0 {
		d.an.found(time.Now())
	}
	return done, nil
}
