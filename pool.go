package stint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// Pool runs jobs from a store with the handlers of a [Mux]: it claims jobs
// of the registered kinds from its queues (up to each queue's worker limit),
// runs each attempt in its own goroutine with a context cancelled on cancel
// requests, lease loss, timeouts, deadlines and budgets, heartbeats every
// running job, writes completions in batches, and on Stop releases what it
// could not finish so another pool picks it up at once.
type Pool struct {
	store store.Store
	mux   *Mux
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	mu      sync.Mutex
	state   poolState
	active  map[*attempt]struct{}
	byJob   map[string]*attempt // the running attempts by job id, for lease notices
	base    context.Context     // handlers' parent: the Start ctx's values, never cancelled
	stopped chan struct{}       // closed when Stop finished
	stopErr error

	fetchStop  context.CancelFunc
	fetchDone  sync.WaitGroup
	runs       sync.WaitGroup
	background chan struct{} // closed to stop the heartbeater and the wake dispatcher
	bgDone     sync.WaitGroup
	comp       *completer
	maint      *maintenance.Maintainer // nil with Config.NoMaintenance
	unsub      func()
	unsubLease func()

	stats counters
}

type poolState int

const (
	poolNew poolState = iota
	poolRunning
	poolStopping
)

// NewPool returns a pool that works jobs from s with mux's handlers. It
// checks cfg (after [Config.WithDefaults]) and returns an error saying what
// is wrong with it.
func NewPool(s store.Store, mux *Mux, cfg Config) (*Pool, error) {
	if s == nil {
		return nil, errors.New("stint: NewPool needs a store")
	}
	if mux == nil {
		return nil, errors.New("stint: NewPool needs a Mux with the handlers to run")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Queues = maps.Clone(cfg.Queues)
	cfg.Topics = slices.Clone(cfg.Topics)
	maint, err := newMaintainer(s, cfg)
	if err != nil {
		return nil, err
	}
	return &Pool{
		store: s, mux: mux, cfg: cfg, clock: cfg.Clock, maint: maint,
		log:     cfg.Logger.With("worker", cfg.WorkerID),
		active:  map[*attempt]struct{}{},
		byJob:   map[string]*attempt{},
		stopped: make(chan struct{}),
	}, nil
}

// WorkerID returns the id this pool claims jobs under.
func (p *Pool) WorkerID() string { return p.cfg.WorkerID }

// Start begins claiming and running jobs, and returns at once. ctx's values
// reach every handler's context; cancelling ctx stops the pool as Stop does.
// A pool starts once; its Mux needs at least one handler.
func (p *Pool) Start(ctx context.Context) error {
	if len(p.mux.kindList()) == 0 {
		return errors.New("stint: the pool's Mux has no handlers: register one with Mux.Handle before Start")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != poolNew {
		return errors.New("stint: the pool was already started; make a new one")
	}
	p.base = context.WithoutCancel(ctx)
	if p.maint != nil {
		// The services stop with the pool (Stop), not when ctx ends first.
		if err := p.maint.Start(p.base); err != nil {
			return fmt.Errorf("stint: start the maintenance services: %w", err)
		}
	}
	p.state = poolRunning
	p.comp = newCompleter(p)
	p.background = make(chan struct{})

	wake, unsub := p.store.Wakeups()
	p.unsub = unsub
	notices, unsubLease := p.store.LeaseNotices()
	p.unsubLease = unsubLease
	fetchCtx, stop := context.WithCancel(p.base)
	p.fetchStop = stop
	fetchers := map[string]*fetcher{}
	for _, q := range slices.Sorted(maps.Keys(p.cfg.Queues)) {
		f := newFetcher(p, q, p.cfg.Queues[q])
		fetchers[q] = f
		p.fetchDone.Add(1)
		go f.loop(fetchCtx)
	}
	p.bgDone.Add(3)
	go p.dispatchWakeups(wake, fetchers)
	go p.dispatchLeaseNotices(notices)
	go p.heartbeatLoop()
	if m, ok := store.As[MaintainedElsewhere](p.store); p.cfg.MaintenanceCheck > 0 && !(ok && m.MaintainedElsewhere()) {
		p.bgDone.Add(1)
		go p.watchMaintenance()
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Stop(context.Background())
		case <-p.stopped:
		}
	}()
	return nil
}

// dispatchWakeups passes the store's wake-ups to the fetcher of each queue.
func (p *Pool) dispatchWakeups(wake <-chan string, fetchers map[string]*fetcher) {
	defer p.bgDone.Done()
	for {
		select {
		case <-p.background:
			return
		case q := <-wake:
			if f, ok := fetchers[q]; ok {
				f.wake()
			}
		}
	}
}

// track and untrack keep the set of running attempts, which the heartbeater
// beats and Stop cancels and releases.
func (p *Pool) track(a *attempt) {
	p.mu.Lock()
	p.active[a] = struct{}{}
	p.byJob[a.job.rec.ID] = a
	p.mu.Unlock()
}

func (p *Pool) untrack(a *attempt) {
	p.mu.Lock()
	delete(p.active, a)
	if p.byJob[a.job.rec.ID] == a {
		delete(p.byJob, a.job.rec.ID)
	}
	p.mu.Unlock()
}

func (p *Pool) running() []*attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Collect(maps.Keys(p.active))
}

// PoolStats counts what a pool has done since it started.
type PoolStats struct {
	// Claimed is the number of attempts claimed.
	Claimed int64
	// Running is the number of handlers running now.
	Running int64
	// Succeeded is the number of completions the store accepted.
	Succeeded int64
	// Failed is the number of attempts reported failed (retried or not).
	Failed int64
	// Stale is the number of reports the store rejected because the job was
	// no longer this pool's (lease expired, revoked or superseded), plus the
	// attempts that learned of it first and reported nothing.
	Stale int64
}

type counters struct {
	claimed, running, succeeded, failed, stale atomic.Int64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{
		Claimed: p.stats.claimed.Load(), Running: p.stats.running.Load(),
		Succeeded: p.stats.succeeded.Load(), Failed: p.stats.failed.Load(), Stale: p.stats.stale.Load(),
	}
}

// String names the pool by its worker id.
func (p *Pool) String() string { return fmt.Sprintf("stint.Pool(%s)", p.cfg.WorkerID) }
