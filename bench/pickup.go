package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
)

// Latency summarizes the pickup latencies: enqueue returned → handler
// started.
type Latency struct {
	Samples int     `json:"samples"`
	P50MS   float64 `json:"p50_ms"`
	P95MS   float64 `json:"p95_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
	// Early counts the handlers that started before Enqueue returned (the
	// claim raced the reply); they count as 0.
	Early int `json:"early"`
	// CPU is the phase's CPU per sample (each a job enqueued, claimed and
	// ended on its own), client and server; nil where it cannot be read.
	CPU *CPU `json:"cpu,omitempty"`
}

// pickup enqueues cfg.LatencySamples jobs one at a time into the idle pool.
// For each it takes the time when Enqueue returns, waits for the handler to
// start (the handler takes its own time first thing), then for the
// completion to be written, so that each sample starts from an idle pool
// and an idle database.
func (r *runner) pickup(ctx context.Context) (Latency, error) {
	n := r.cfg.LatencySamples
	if n == 0 {
		return Latency{}, nil
	}
	started := make(chan startedJob, 16)
	r.mu.Lock()
	r.started = started
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.started = nil
		r.mu.Unlock()
	}()

	var done atomic.Int64
	stop := r.progress("pickup", n, func() int { return int(done.Load()) })
	defer stop()
	cpu := r.markCPU(ctx)
	lat := make([]time.Duration, 0, n)
	early := 0
	succeeded := r.completed.Load()
	for range n {
		res, err := r.client.Enqueue(ctx, stint.Spec{Kind: r.cfg.Kind})
		returned := time.Now()
		if err != nil {
			return Latency{}, err
		}
		s, err := r.awaitStart(ctx, started, res.Job.ID)
		if err != nil {
			return Latency{}, err
		}
		d := s.at.Sub(returned)
		if d < 0 {
			d, early = 0, early+1
		}
		lat = append(lat, d)
		succeeded++
		if err := r.awaitCompletions(ctx, succeeded); err != nil {
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

func (r *runner) awaitStart(ctx context.Context, started <-chan startedJob, id string) (startedJob, error) {
	timeout := time.NewTimer(Patience)
	defer timeout.Stop()
	for {
		select {
		case s := <-started:
			if s.id == id {
				return s, nil
			}
		case <-timeout.C:
			return startedJob{}, fmt.Errorf("%w for %s: job %s was not picked up", errStalled, Patience, id)
		case <-ctx.Done():
			return startedJob{}, ctx.Err()
		}
	}
}

// awaitCompletions waits until the store has accepted n completions in all
// (counted by outcome), asleep between them.
func (r *runner) awaitCompletions(ctx context.Context, n int64) error {
	timeout := time.NewTimer(Patience)
	defer timeout.Stop()
	for r.completed.Load() < n {
		select {
		case <-r.completedSignal:
		case <-timeout.C:
			return fmt.Errorf("%w for %s: %d of %d completions written", errStalled, Patience, r.completed.Load(), n)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// quantile returns the q-quantile of sorted by the nearest-rank method.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
