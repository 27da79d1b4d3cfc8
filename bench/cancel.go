package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
)

// cancelKind is the kind of the cancel phase's jobs: their handler waits
// for its context to end. A kind of its own keeps them out of the check's
// count of the no-op jobs.
func (r *runner) cancelKind() string { return r.cfg.Kind + ".cancel" }

// handleCancel says when it started, waits for its context to end, says
// when it saw that, and returns the cause (acknowledging the cancel).
func (r *runner) handleCancel(ctx context.Context, j *stint.Job) error {
	r.mu.Lock()
	started, ended := r.cancelStarted, r.cancelEnded
	r.mu.Unlock()
	started <- startedJob{id: j.ID(), at: time.Now()}
	<-ctx.Done()
	ended <- startedJob{id: j.ID(), at: time.Now()}
	return context.Cause(ctx)
}

// awaitCancelled waits until the store has ended job id: the pool's
// outcome of its attempt, once the store accepted it, says so without
// polling; any other outcome falls back to Client.Wait.
func (r *runner) awaitCancelled(ctx context.Context, id string) error {
	timeout := time.NewTimer(Patience)
	defer timeout.Stop()
	for {
		select {
		case o := <-r.cancelOutcomes:
			if o.Job.ID != id {
				continue
			}
			if o.Accepted() && o.Job.State.Terminal() {
				return nil
			}
			waitCtx, cancel := context.WithTimeout(ctx, Patience)
			defer cancel()
			_, err := r.client.Wait(waitCtx, id)
			return err
		case <-timeout.C:
			return fmt.Errorf("%w for %s: cancelled job %s did not end", errStalled, Patience, id)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cancelLatency runs cfg.CancelSamples jobs one at a time into the idle
// pool; once each one's handler runs, it cancels it (soft) and measures the
// time from Cancel's return to the handler's context ending, which the
// store's lease notice brings about (heartbeats are only the fallback). It
// then waits for the job to be cancelled, so each sample starts idle. The
// events of these jobs are counted apart, for the check.
func (r *runner) cancelLatency(ctx context.Context) (Latency, error) {
	n := r.cfg.CancelSamples
	if n == 0 {
		return Latency{}, nil
	}
	started, ended := make(chan startedJob, 1), make(chan startedJob, 1)
	r.mu.Lock()
	r.cancelStarted, r.cancelEnded = started, ended
	r.mu.Unlock()

	var done atomic.Int64
	stop := r.progress("cancel", n, func() int { return int(done.Load()) })
	defer stop()
	cpu := r.markCPU(ctx)
	lat := make([]time.Duration, 0, n)
	early := 0
	for range n {
		res, err := r.client.Enqueue(ctx, stint.Spec{Kind: r.cancelKind()})
		if err != nil {
			return Latency{}, err
		}
		id := res.Job.ID
		if _, err := r.awaitStart(ctx, started, id); err != nil {
			return Latency{}, err
		}
		if _, err := r.client.Cancel(ctx, id, stint.CancelSoft, "bench: cancel latency"); err != nil {
			return Latency{}, err
		}
		returned := time.Now()
		e, err := r.awaitStart(ctx, ended, id)
		if err != nil {
			return Latency{}, err
		}
		d := e.at.Sub(returned)
		if d < 0 {
			d, early = 0, early+1
		}
		lat = append(lat, d)
		if err := r.awaitCancelled(ctx, id); err != nil {
			return Latency{}, err
		}
		done.Add(1)
	}
	slices.Sort(lat)
	return Latency{
		Samples: n, P50MS: ms(quantile(lat, 0.50)), P95MS: ms(quantile(lat, 0.95)),
		P99MS: ms(quantile(lat, 0.99)), MaxMS: ms(lat[len(lat)-1]), Early: early,
		CPU: r.cpuSince(ctx, cpu, n),
	}, nil
}
