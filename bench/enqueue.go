package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
)

// enqueue creates cfg.Jobs jobs in batches of cfg.Batch, cfg.Producers
// batches at a time, and times it.
func (r *runner) enqueue(ctx context.Context) (Rate, error) {
	var next, done atomic.Int64
	total := int64(r.cfg.Jobs)
	stop := r.progress("enqueue", r.cfg.Jobs, func() int { return int(done.Load()) })
	defer stop()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	cpu := r.markCPU(ctx)
	began := time.Now()
	for range r.cfg.Producers {
		wg.Go(func() {
			specs := make([]stint.Spec, 0, r.cfg.Batch)
			for ctx.Err() == nil {
				end := next.Add(int64(r.cfg.Batch))
				n := min(int64(r.cfg.Batch), total-(end-int64(r.cfg.Batch)))
				if n <= 0 {
					return
				}
				specs = specs[:n]
				for i := range specs {
					specs[i] = stint.Spec{Kind: r.cfg.Kind}
				}
				if _, err := r.client.EnqueueMany(ctx, specs); err != nil {
					cancel(err)
					return
				}
				done.Add(n)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	if err := context.Cause(ctx); err != nil {
		return Rate{}, err
	}
	rt := rate(r.cfg.Jobs, elapsed)
	rt.CPU = r.cpuSince(ctx, cpu, r.cfg.Jobs)
	rt.Batch, rt.Producers = r.cfg.Batch, r.cfg.Producers
	return rt, nil
}
