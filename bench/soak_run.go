package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// soaker is one soak run: the load, the pool and what the handler saw.
type soaker struct {
	s      store.Store
	cfg    SoakConfig
	client *stint.Client
	pool   *stint.Pool
	began  time.Time

	enqueued atomic.Int64
	returned sync.Map // job id → time its EnqueueMany returned

	mu     sync.Mutex
	pickup []time.Duration // of the jobs started in the current interval
}

func (r *soaker) run(ctx context.Context) (rep SoakReport, err error) {
	cfg := r.cfg
	rep = SoakReport{Rate: cfg.Rate, Duration: cfg.Duration.String(), Interval: cfg.Interval.String(), Pool: poolInfo(cfg.Pool)}
	if r.client, err = stint.NewClient(r.s, stint.ClientConfig{ActorID: "bench-soak"}); err != nil {
		return rep, err
	}
	mux := stint.NewMux()
	mux.HandleFunc(cfg.Kind, r.handle)
	if r.pool, err = stint.NewPool(r.s, mux, cfg.Pool); err != nil {
		return rep, err
	}
	if err := r.pool.Start(ctx); err != nil {
		return rep, fmt.Errorf("bench: soak: start the pool: %w", err)
	}
	defer func() {
		if serr := r.pool.Stop(context.WithoutCancel(ctx)); err == nil && serr != nil {
			err = fmt.Errorf("bench: soak: stop the pool: %w", serr)
		}
	}()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.began = time.Now()
	third := cfg.Duration / 3
	rep.HeldFrom, rep.HeldUntil = third.Seconds(), (2 * third).Seconds()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.offer(ctx); err != nil {
			cancel(fmt.Errorf("bench: soak: enqueue: %w", err))
		}
	})
	wg.Go(func() {
		if err := r.hold(ctx, third, 2*third); err != nil {
			cancel(fmt.Errorf("bench: soak: hold the horizon: %w", err))
		}
	})
	rep.Intervals, err = r.sample(ctx)
	cancel(err)
	wg.Wait()
	if cause := context.Cause(ctx); err == nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	rep.Summary = summarize(rep)
	return rep, err
}

// offer enqueues at cfg.Rate until cfg.Duration has passed: every tick it
// enqueues what the rate owes by then, so a slow call is caught up on.
func (r *soaker) offer(ctx context.Context) error {
	const tick = 20 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	var sent int64
	specs := make([]stint.Spec, 0, store.MaxBatch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		elapsed := min(time.Since(r.began), r.cfg.Duration)
		owed := int64(elapsed.Seconds()*float64(r.cfg.Rate)) - sent
		for owed > 0 {
			n := min(owed, int64(store.MaxBatch))
			specs = specs[:n]
			for i := range specs {
				specs[i] = stint.Spec{Kind: r.cfg.Kind}
			}
			res, err := r.client.EnqueueMany(ctx, specs)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			now := time.Now()
			for _, e := range res {
				r.returned.Store(e.Job.ID, now)
			}
			sent += n
			owed -= n
			r.enqueued.Add(n)
		}
		if elapsed >= r.cfg.Duration {
			return nil
		}
	}
}

// hold opens the observer's long transaction at from and ends it at until
// (offsets from the start).
func (r *soaker) hold(ctx context.Context, from, until time.Duration) error {
	if !r.waitUntil(ctx, from) {
		return nil
	}
	release, err := r.cfg.Observer.Hold(ctx)
	if err != nil {
		return err
	}
	r.waitUntil(ctx, until)
	return release()
}

// waitUntil waits until offset d from the start, and says whether it got
// there before ctx ended.
func (r *soaker) waitUntil(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Until(r.began.Add(d)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// handle is the no-op handler: it takes its pickup latency.
func (r *soaker) handle(_ context.Context, j *stint.Job) error {
	now := time.Now()
	var d time.Duration
	if at, ok := r.returned.LoadAndDelete(j.ID()); ok {
		d = max(0, now.Sub(at.(time.Time)))
	} // else the claim raced EnqueueMany's reply: it counts as 0
	r.mu.Lock()
	r.pickup = append(r.pickup, d)
	r.mu.Unlock()
	return nil
}

// sample closes an interval every cfg.Interval until cfg.Duration.
func (r *soaker) sample(ctx context.Context) ([]SoakInterval, error) {
	var out []SoakInterval
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	third := (r.cfg.Duration / 3).Seconds()
	lastDone, lastEnq, lastEnd := int64(0), int64(0), 0.0
	for lastEnd < r.cfg.Duration.Seconds()-1e-3 {
		select {
		case <-ctx.Done():
			return out, nil
		case <-t.C:
		}
		end := time.Since(r.began).Seconds()
		done, enq := r.pool.Stats().Succeeded, r.enqueued.Load()
		r.mu.Lock()
		lat := r.pickup
		r.pickup = nil
		r.mu.Unlock()
		st, err := r.cfg.Observer.Storage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return out, nil
			}
			return out, fmt.Errorf("bench: soak: read the storage figures: %w", err)
		}
		iv := SoakInterval{Start: lastEnd, End: end, Held: lastEnd < 2*third && end > third,
			Enqueued: int(enq - lastEnq), Done: int(done - lastDone), Storage: st}
		iv.PerSec = float64(iv.Done) / (end - lastEnd)
		if len(lat) > 0 {
			slices.Sort(lat)
			iv.PickupP50MS, iv.PickupP99MS = ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99))
		}
		out = append(out, iv)
		if r.cfg.Progress != nil {
			r.cfg.Progress(iv)
		}
		lastDone, lastEnq, lastEnd = done, enq, end
	}
	return out, nil
}
