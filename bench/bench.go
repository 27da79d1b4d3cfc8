package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// Defaults of a [Config].
const (
	DefaultJobs           = 100_000
	DefaultBatch          = 1000
	DefaultProducers      = 4
	DefaultLatencySamples = 1000
	DefaultCancelSamples  = 100
	// DefaultKind is the kind of the benchmark's no-op jobs.
	DefaultKind = "bench.noop"
)

// Patience bounds how long a phase may go without progress before Run
// gives up: a guard against a hang, not a measure.
var Patience = 2 * time.Minute

// Config configures a benchmark. Zero fields take the defaults named on each.
type Config struct {
	// Jobs is how many no-op jobs are enqueued and worked. Defaults to 100,000.
	Jobs int
	// Batch is how many jobs one EnqueueMany call creates (at most
	// store.MaxBatch). Defaults to 1000.
	Batch int
	// Producers is how many EnqueueMany calls run at once. Defaults to 4.
	Producers int
	// LatencySamples is how many jobs the pickup-latency phase enqueues, one
	// at a time, into the idle pool. Negative skips the phase. Defaults to 1000.
	LatencySamples int
	// CancelSamples is how many jobs the cancel-latency phase runs and
	// cancels, one at a time. Negative skips the phase. Defaults to 100.
	CancelSamples int
	// Kind is the kind of the no-op jobs. Defaults to "bench.noop".
	Kind string
	// Pool configures the worker pool; its zero value, the default
	// configuration, is what the benchmark is about. A nil Logger logs
	// warnings on stderr.
	Pool stint.Config
	// Progress, when set, is called about ten times a second while a phase
	// runs, and once at its end, from one goroutine.
	Progress func(Progress)
	// ServerCPU, when set, measures the database server's CPU over the
	// enqueue and work phases (see [PostgresCPU]).
	ServerCPU ServerCPU
}

// Progress is where a running benchmark stands.
type Progress struct {
	// Phase is "enqueue", "work", "pickup", "cancel" or "check".
	Phase string
	Done  int
	Total int
	// Elapsed is the time since the phase began.
	Elapsed time.Duration
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Jobs == 0 {
		c.Jobs = DefaultJobs
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Producers == 0 {
		c.Producers = DefaultProducers
	}
	if c.LatencySamples == 0 {
		c.LatencySamples = DefaultLatencySamples
	}
	if c.LatencySamples < 0 {
		c.LatencySamples = 0
	}
	if c.CancelSamples == 0 {
		c.CancelSamples = DefaultCancelSamples
	}
	if c.CancelSamples < 0 {
		c.CancelSamples = 0
	}
	if c.Kind == "" {
		c.Kind = DefaultKind
	}
	if c.Pool.Logger == nil {
		c.Pool.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Jobs < 1:
		return fmt.Errorf("bench: Jobs is %d: use at least 1", c.Jobs)
	case c.Batch < 1 || c.Batch > store.MaxBatch:
		return fmt.Errorf("bench: Batch is %d: use 1 to %d", c.Batch, store.MaxBatch)
	case c.Producers < 1 || c.Producers > 256:
		return fmt.Errorf("bench: Producers is %d: use 1 to 256", c.Producers)
	}
	return nil
}

// Report is what a benchmark measured and checked.
type Report struct {
	Jobs int `json:"jobs"`
	// Pool is the worker pool's configuration, after defaults.
	Pool PoolInfo `json:"pool"`
	// Enqueue is the enqueue phase: Jobs no-op jobs in batches.
	Enqueue Rate `json:"enqueue"`
	// Work is the work phase: from the pool's start until it has completed
	// every job enqueued before.
	Work Rate `json:"work"`
	// Pickup is the time from Enqueue's return to the handler's start, for
	// jobs enqueued one at a time into the idle, running pool.
	Pickup Latency `json:"pickup"`
	// Cancel is the time from a soft Cancel's return to the running
	// handler's context ending, for jobs run one at a time.
	Cancel Latency `json:"cancel"`
	// Memory is the process's peak memory over the whole run.
	Memory Memory `json:"memory"`
	// Check says whether every job succeeded exactly once.
	Check Check `json:"check"`
}

// PoolInfo is the part of the pool's configuration that bounds throughput.
type PoolInfo struct {
	Queues        map[string]int `json:"queues"`
	FetchLimit    int            `json:"fetch_limit"`
	CompleteBatch int            `json:"complete_batch"`
	LeaseTTL      string         `json:"lease_ttl"`
	PollInterval  string         `json:"poll_interval"`
}

// Rate is a phase's throughput.
type Rate struct {
	Jobs      int     `json:"jobs"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"jobs_per_second"`
	// Batch and Producers describe the enqueue phase.
	Batch     int `json:"batch,omitempty"`
	Producers int `json:"producers,omitempty"`
	// CPU is the phase's CPU per job, client and server; nil where the
	// process's CPU cannot be read.
	CPU *CPU `json:"cpu,omitempty"`
	// Segments compares the first and last SegmentJobs jobs of a work
	// phase of at least twice as many (a burn-down); nil otherwise.
	Segments *Segments `json:"segments,omitempty"`
}

func rate(n int, d time.Duration) Rate {
	r := Rate{Jobs: n, Seconds: d.Seconds()}
	if d > 0 {
		r.PerSecond = float64(n) / d.Seconds()
	}
	return r
}

// Run runs the benchmark on s, which must hold no jobs of cfg.Kind: enqueue,
// work, pickup latency, then the check. It returns an error when a phase
// fails or stalls; a check that finds a job run twice or not at all is
// reported in Report.Check, not as an error.
func Run(ctx context.Context, s store.Store, cfg Config) (Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	mem := watchMemory()
	r := &runner{s: s, cfg: cfg, runs: make(map[string]int32, cfg.Jobs+cfg.LatencySamples),
		completedSignal: make(chan struct{}, 1), cancelOutcomes: make(chan stint.Outcome, 1)}
	user := r.cfg.Pool.OnOutcome
	r.cfg.Pool.OnOutcome = func(o stint.Outcome) {
		if user != nil {
			user(o)
		}
		r.outcome(o)
	}
	rep, err := r.run(ctx)
	rep.Memory = mem.stop()
	return rep, err
}

// runner is one benchmark run: the store, the pool and what the handler saw.
type runner struct {
	s      store.Store
	cfg    Config
	client *stint.Client
	pool   *stint.Pool

	mu      sync.Mutex
	runs    map[string]int32 // handler calls per job
	started chan startedJob  // during the pickup phase

	// cancelStarted and cancelEnded hear from the cancel phase's handler.
	cancelStarted, cancelEnded chan startedJob

	// completed counts the completions the store accepted, as the pool's
	// OnOutcome hears them; completedSignal wakes awaitCompletions.
	completed       atomic.Int64
	completedSignal chan struct{}
	// cancelOutcomes hears how the cancel phase's attempts ended.
	cancelOutcomes chan stint.Outcome
}

type startedJob struct {
	id string
	at time.Time
}

func (r *runner) run(ctx context.Context) (rep Report, err error) {
	rep.Jobs = r.cfg.Jobs
	if r.client, err = stint.NewClient(r.s, stint.ClientConfig{ActorID: "bench"}); err != nil {
		return rep, err
	}
	mux := stint.NewMux()
	mux.HandleFunc(r.cfg.Kind, r.handle)
	mux.HandleFunc(r.cancelKind(), r.handleCancel)
	if r.pool, err = stint.NewPool(r.s, mux, r.cfg.Pool); err != nil {
		return rep, err
	}
	rep.Pool = poolInfo(r.cfg.Pool)

	if rep.Enqueue, err = r.enqueue(ctx); err != nil {
		return rep, fmt.Errorf("bench: enqueue: %w", err)
	}
	rep.Work, err = r.work(ctx)
	if err == nil {
		rep.Pickup, err = r.pickup(ctx)
		if err != nil {
			err = fmt.Errorf("bench: pickup latency: %w", err)
		}
	}
	if err == nil {
		if rep.Cancel, err = r.cancelLatency(ctx); err != nil {
			err = fmt.Errorf("bench: cancel latency: %w", err)
		}
	} else {
		err = fmt.Errorf("bench: work: %w", err)
	}
	// Stop even after a failure: the handlers' jobs are released.
	if serr := r.pool.Stop(context.WithoutCancel(ctx)); err == nil && serr != nil {
		err = fmt.Errorf("bench: stop the pool: %w", serr)
	}
	if err != nil {
		return rep, err
	}
	if rep.Check, err = r.check(ctx); err != nil {
		return rep, fmt.Errorf("bench: check: %w", err)
	}
	return rep, nil
}

func poolInfo(c stint.Config) PoolInfo {
	c = c.WithDefaults()
	return PoolInfo{Queues: c.Queues, FetchLimit: c.FetchLimit, CompleteBatch: c.CompleteBatch,
		LeaseTTL: c.LeaseTTL.String(), PollInterval: c.PollInterval.String()}
}

// handle is the no-op handler: it only counts its calls, and during the
// pickup phase says when it started.
func (r *runner) handle(_ context.Context, j *stint.Job) error {
	now := time.Now()
	r.mu.Lock()
	r.runs[j.ID()]++
	started := r.started
	r.mu.Unlock()
	if started != nil {
		select {
		case started <- startedJob{id: j.ID(), at: now}:
		default: // nobody waits for it: the pickup phase gave up
		}
	}
	return nil
}

// outcome counts the completions the store accepted and wakes
// awaitCompletions, so the pickup phase waits for each completion without
// polling the pool.
func (r *runner) outcome(o stint.Outcome) {
	if o.Job.Kind == r.cancelKind() {
		select {
		case r.cancelOutcomes <- o:
		default: // the cancel phase gave up on it
		}
		return
	}
	if o.Op != "complete" || !o.Accepted() {
		return
	}
	r.completed.Add(1)
	select {
	case r.completedSignal <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// progress calls cfg.Progress every 100ms with done() until stop is
// called, and once more at the end.
func (r *runner) progress(phase string, total int, done func() int) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	began := time.Now()
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				r.cfg.Progress(Progress{Phase: phase, Done: done(), Total: total, Elapsed: time.Since(began)})
				return
			case <-tick.C:
				r.cfg.Progress(Progress{Phase: phase, Done: done(), Total: total, Elapsed: time.Since(began)})
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// errStalled says a phase made no progress for Patience.
var errStalled = errors.New("no progress")
