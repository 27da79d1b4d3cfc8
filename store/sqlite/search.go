package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stint-dev/stint/store"
)

// searchDialect spells a search for SQLite. A payload scalar reads as
// PostgreSQL's #>> writes it: true and false as words, numbers and
// strings as their text.
var searchDialect = store.SearchDialect{
	Param:   func(n int) string { return "?" + strconv.Itoa(n) },
	Time:    func(t time.Time) any { return micros(t) },
	States:  func(s []string) any { return jsonList(s) },
	StateIn: func(p string) string { return "j.state IN (SELECT value FROM json_each(" + p + "))" },
	PayloadPath: func(keys []string) any {
		var b strings.Builder
		b.WriteString("$")
		for _, k := range keys {
			b.WriteString(`."` + k + `"`) // keys are validated: no quote in them
		}
		return b.String()
	},
	Payload: func(p string) string {
		return "(CASE json_type(j.payload, " + p + ") WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' " +
			"ELSE CAST(json_extract(j.payload, " + p + ") AS TEXT) END)"
	},
	Contains: func(col, p string) string { return "instr(lower(" + col + "), lower(" + p + ")) > 0" },
	TopicUnder: func(p string) string {
		return "(j.topic = " + p + " OR substr(j.topic, 1, length(" + p + ") + 1) = " + p + " || '.')"
	},
}

// JobSearch implements store.SearchTx.
func (t *txn) JobSearch(ctx context.Context, p *store.JobSearchParams) ([]store.Job, error) {
	where, args := store.SearchSQL(searchDialect, p)
	q := `SELECT ` + jobColumns + ` FROM jobs j WHERE ` + where + ` ORDER BY j.id DESC LIMIT ` + strconv.Itoa(p.Limit)
	jobs, err := rowsOf(newJobScanner().scan)(t.query(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("sqlite: search jobs: %w", err)
	}
	return jobs, nil
}

// JobSearchCount implements store.SearchTx.
func (t *txn) JobSearchCount(ctx context.Context, p *store.JobSearchParams, most int) (int, error) {
	where, args := store.SearchSQL(searchDialect, p)
	q := `SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE ` + where + ` LIMIT ` + strconv.Itoa(most+1) + `) c`
	var n int
	if err := t.q.QueryRowContext(t.stmtCtx(ctx), q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count jobs: %w", err)
	}
	return n, nil
}

// RunSearch implements store.RunSearchTx.
func (t *txn) RunSearch(ctx context.Context, p *store.RunSearchParams) ([]store.Run, error) {
	where, args := store.RunSearchSQL(searchDialect, p)
	q := `SELECT ` + runColumns + ` FROM runs r WHERE ` + where + ` ORDER BY r.id DESC LIMIT ` + strconv.Itoa(p.Limit)
	runs, err := rowsOf(scanRun)(t.query(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("sqlite: search runs: %w", err)
	}
	return runs, nil
}
