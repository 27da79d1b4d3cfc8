package postgres

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// WithoutProbeLoop returns opts whose driver never probes its claim marks
// by itself: the test calls ProbeLowWater.
func WithoutProbeLoop(opts Options) Options {
	opts.noProbeLoop = true
	return opts
}

// WithListenHook returns opts whose listener tells hook "listen" once it
// listens, and each notification's payload once handled.
func WithListenHook(opts Options, hook func(event string)) Options {
	opts.onListen = hook
	return opts
}

// ProbeLowWater runs one pass of the claim-mark probe.
func (d *Driver) ProbeLowWater(ctx context.Context) error { return d.probeLowWater(ctx) }

// ClaimMark returns the mark of an unfiltered claim of queue.
func (d *Driver) ClaimMark(queue string) (priority int, at time.Time, ok bool) {
	k, ok := d.lw.mark(queue, nil, nil)
	return k.priority, k.at, ok
}

// ExplainClaim returns EXPLAIN (ANALYZE, BUFFERS) of an unfiltered claim of
// one job of queue, seeking to the driver's mark when useMark is set and
// from the head of the queue otherwise. It locks nothing for long: its
// transaction rolls back.
func (d *Driver) ExplainClaim(ctx context.Context, queue string, useMark bool) (string, error) {
	p, at, id := int32(math.MinInt32), time.Unix(0, 0).UTC(), ""
	if k, ok := d.lw.mark(queue, nil, nil); ok && useMark {
		p, at, id = int32(-k.priority), k.at, k.id
	}
	var lines []string
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qClaimPlan); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+qJobClaimable,
			[]string{queue}, []string(nil), 1, []string(nil), []int32{p}, []time.Time{at}, []string{id})
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return errRollback
	})
	if err != errRollback {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

var errRollback = &rollbackError{}

type rollbackError struct{}

func (*rollbackError) Error() string { return "rollback" }

// AnalyzeStale runs one pass of the statistics check (analyze.go) now,
// whenever the last was.
func (d *Driver) AnalyzeStale(ctx context.Context) ([]string, error) {
	d.an.check = time.Time{}
	return d.analyzeStale(ctx)
}
