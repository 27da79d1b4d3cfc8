package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

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
// columns, a 30,000-row sample) costs tens of milliseconds of CPU; analyzed
// on autovacuum's rule alone it took about a fifth of the PostgreSQL CPU
// of `stint bench` (perf of the store's backends). The distributions
// within a steady table are left to autovacuum. The check runs beside
// the low-water probe (in processes that claim), about once a second; a
// table is analyzed again no sooner than analyzeCostFactor times its last
// analyze took, so that a busy table costs about one percent of one
// connection. Options.DisableAnalyze turns it off for those who manage
// statistics themselves.
const (
	analyzeBase       = 50
	analyzeScale      = 0.1
	analyzeCostFactor = 100
	analyzeMinGap     = time.Second
)

// qStaleTables lists the tables of a schema whose statistics are stale by
// autovacuum's default rule and whose size moved by half or double since
// they were last analyzed (reltuples is -1 for a table never analyzed).
const qStaleTables = `
SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.schemaname = $1 AND c.relkind = 'r'
  AND s.n_mod_since_analyze > $2 + $3 * greatest(c.reltuples, 0)
  AND (c.reltuples < 0 OR s.n_live_tup > $2 + 2 * c.reltuples OR 2 * s.n_live_tup < c.reltuples)
ORDER BY s.relname`

// analyzer remembers when each table may next be analyzed. It is used by
// the probe goroutine alone.
type analyzer struct {
	next map[string]time.Time
}

// analyzeStale analyzes the tables of the driver's schema whose statistics
// are stale and whose gap since their last analyze by this driver has
// passed. It returns the tables it analyzed.
func (d *Driver) analyzeStale(ctx context.Context) ([]string, error) {
	if d.opts.DisableAnalyze {
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
		if _, err := d.pool.Exec(ctx, `ANALYZE (SKIP_LOCKED) `+pgx.Identifier{d.opts.Schema, table}.Sanitize()); err != nil {
			return done, err
		}
		d.an.next[table] = time.Now().Add(max(analyzeMinGap, analyzeCostFactor*time.Since(start)))
		done = append(done, table)
	}
	return done, nil
}
