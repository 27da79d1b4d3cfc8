package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The low-water probe: the safety net of the claims' marks (lowwater.go).
// Now and then it reads, without locking, the first queued job of every
// queue that has a mark and lowers the marks to it. It catches what no
// notice reached: a claimer of another process that locked jobs and rolled
// back, notifications lost or turned off (Options.DisableNotify), a
// process that does not listen. A job below a mark that nothing else
// reported waits at most one probe interval.
//
// The probe walks what the claims skip, dead entries and all, so while the
// xmin horizon is held it costs what a claim without a mark would; it runs
// at most every probeCostFactor times its last duration, and at least
// probeMinInterval apart, so it takes a twentieth of one connection at
// most.
const (
	probeMinInterval = time.Second
	probeCostFactor  = 20
)

// startProbe starts the probe loop once, at the driver's first claim.
func (d *Driver) startProbe() {
	d.probeOnce.Do(func() {
		if d.opts.noProbeLoop {
			close(d.probeDone)
			return
		}
		go d.probeLoop(d.probeCtx)
	})
}

// probeLoop probes until ctx ends, at an interval that follows its cost,
// and after each probe analyzes the tables whose statistics are stale
// (analyze.go).
func (d *Driver) probeLoop(ctx context.Context) {
	defer close(d.probeDone)
	wait := probeMinInterval
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		if err := d.probeLowWater(ctx); err != nil && ctx.Err() == nil {
			d.log.WarnContext(ctx, "postgres: the claim-mark probe failed; claims keep their marks until the next", "err", err)
		}
		wait = max(probeMinInterval, probeCostFactor*time.Since(start))
		if _, err := d.analyzeStale(ctx); err != nil && ctx.Err() == nil {
			d.log.WarnContext(ctx, "postgres: analyzing stale tables failed; the next probe tries again", "err", err)
		}
	}
}

// probeLowWater lowers the mark of every queue that has one to the queue's
// first queued job, as a snapshot taken now sees it.
func (d *Driver) probeLowWater(ctx context.Context) error {
	queues := d.lw.queues()
	if len(queues) == 0 {
		return nil
	}
	type head struct {
		queue string
		key   claimKey
	}
	var heads []head
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qClaimPlan); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, qLowWaterProbe, queues)
		if err != nil {
			return err
		}
		heads, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (head, error) {
			var h head
			err := r.Scan(&h.queue, &h.key.priority, &h.key.at)
			h.key.at = h.key.at.UTC()
			return h, err
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: probe the first queued jobs of %d queues: %w", len(queues), err)
	}
	// After the snapshot's transaction ended, like every lowering.
	for _, h := range heads {
		d.lw.lower(h.queue, h.key, false)
	}
	return nil
}
