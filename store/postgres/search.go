package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stint-dev/stint/store"
)

// searchTimeout bounds one search: a payload match reads every row the
// other filters leave.
const searchTimeout = "15s"

var searchDialect = store.SearchDialect{
	Param:       func(n int) string { return "$" + strconv.Itoa(n) },
	Time:        func(t time.Time) any { return t },
	States:      func(s []string) any { return s },
	StateIn:     func(p string) string { return "j.state = ANY(" + p + "::text[])" },
	PayloadPath: func(keys []string) any { return keys },
	Payload:     func(p string) string { return "(j.payload::jsonb #>> " + p + "::text[])" },
	Contains:    func(col, p string) string { return "strpos(lower(" + col + "), lower(" + p + ")) > 0" },
	TopicUnder: func(p string) string {
		return "(j.topic = " + p + " OR left(j.topic, length(" + p + ") + 1) = " + p + " || '.')"
	},
}

// JobSearch implements store.SearchTx.
func (t *tx) JobSearch(ctx context.Context, p *store.JobSearchParams) ([]store.Job, error) {
	where, args := store.SearchSQL(searchDialect, p)
	if _, err := t.exec(ctx, "SET LOCAL statement_timeout = '"+searchTimeout+"'"); err != nil {
		return nil, fmt.Errorf("postgres: search jobs: %w", err)
	}
	q := `SELECT ` + jobSelect + ` FROM jobs j WHERE ` + where + ` ORDER BY j.id DESC LIMIT ` + strconv.Itoa(p.Limit)
	jobs, err := t.jobs(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: search jobs: %w", err)
	}
	return jobs, nil
}

// JobSearchCount implements store.SearchTx.
func (t *tx) JobSearchCount(ctx context.Context, p *store.JobSearchParams, most int) (int, error) {
	where, args := store.SearchSQL(searchDialect, p)
	if _, err := t.exec(ctx, "SET LOCAL statement_timeout = '"+searchTimeout+"'"); err != nil {
		return 0, fmt.Errorf("postgres: count jobs: %w", err)
	}
	q := `SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE ` + where + ` LIMIT ` + strconv.Itoa(most+1) + `) c`
	var n int64
	if err := t.queryRow(ctx, q, args, &n); err != nil {
		return 0, fmt.Errorf("postgres: count jobs: %w", err)
	}
	return int(n), nil
}

// RunSearch implements store.RunSearchTx.
func (t *tx) RunSearch(ctx context.Context, p *store.RunSearchParams) ([]store.Run, error) {
	where, args := store.RunSearchSQL(searchDialect, p)
	q := `SELECT ` + runColumns + ` FROM runs r WHERE ` + where + ` ORDER BY r.id DESC LIMIT ` + strconv.Itoa(p.Limit)
	runs, err := runRows(ctx, t, q, args, scanRun)
	if err != nil {
		return nil, fmt.Errorf("postgres: search runs: %w", err)
	}
	return runs, nil
}
