package bench

import (
	"context"
	"fmt"
	"time"
)

// work starts the pool on the enqueued jobs and times it until it has
// completed all of them.
func (r *runner) work(ctx context.Context) (Rate, error) {
	total := int64(r.cfg.Jobs)
	stop := r.progress("work", r.cfg.Jobs, func() int { return int(r.pool.Stats().Succeeded) })
	defer stop()

	cpu := r.markCPU(ctx)
	began := time.Now()
	if err := r.pool.Start(ctx); err != nil {
		return Rate{}, err
	}
	// A 2ms tick keeps the watch's own cost small against the pool's while
	// bounding the error of the phase's end.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := int64(0), began
	for {
		st := r.pool.Stats()
		if st.Succeeded >= total {
			break
		}
		now := time.Now()
		if st.Succeeded != last {
			last, lastChange = st.Succeeded, now
		} else if now.Sub(lastChange) > Patience {
			return Rate{}, fmt.Errorf("%w for %s: %d of %d jobs completed (%+v)", errStalled, Patience, st.Succeeded, total, st)
		}
		select {
		case <-ctx.Done():
			return Rate{}, ctx.Err()
		case <-tick.C:
		}
	}
	rt := rate(r.cfg.Jobs, time.Since(began))
	rt.CPU = r.cpuSince(ctx, cpu, r.cfg.Jobs)
	return rt, nil
}
