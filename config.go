package stint

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// Defaults of a [Config].
const (
	DefaultMaxWorkers    = 100
	DefaultLeaseTTL      = 60 * time.Second
	DefaultPollInterval  = time.Second
	DefaultFetchLimit    = 100
	DefaultCompleteBatch = 1000
	DefaultShutdownGrace = 10 * time.Second
	// MaxTopics is the most topic patterns a pool claims by (the server's
	// worker API takes as many in one claim).
	MaxTopics = 100
)

// Config configures a [Pool]. Zero fields take the defaults named on each.
//
// No setting puts a fixed pause between claims: a pool claims again at once
// while claims come back full, is woken by the store as soon as work is
// enqueued, and polls only as a fallback. The defaults do not cap throughput.
type Config struct {
	// Queues maps each queue the pool works to the most jobs of it that run
	// at once in this pool. Defaults to {"default": 100}.
	Queues map[string]int
	// Topics, when set, are topic patterns (such as "job.chat.*" or
	// "job.>"; see lifecycle.MatchTopic): the pool then claims only the
	// jobs of its queues whose topic matches one of them, and never a job
	// without a topic. The same filter a remote worker's claim takes.
	// Defaults to none: every job of the queues, whatever its topic.
	Topics []string
	// WorkerID names this pool as the owner of its leases and in events.
	// Unique per pool. Defaults to hostname-pid-random.
	WorkerID string
	// LeaseTTL is how long a claim lasts without a heartbeat; each running
	// job heartbeats every LeaseTTL/3, automatically. A worker that dies
	// loses its jobs to others after at most this long. Defaults to 60s.
	LeaseTTL time.Duration
	// PollInterval is how often an idle queue is polled for work when no
	// wake-up arrives (wake-ups are best effort). Defaults to 1s.
	PollInterval time.Duration
	// FetchLimit is the most jobs one claim takes (it takes at most the free
	// slots). Defaults to 100.
	FetchLimit int
	// CompleteBatch is the most completions written in one transaction.
	// Completions are written as soon as the writer is free, never held back
	// to fill a batch. Defaults to 1000.
	CompleteBatch int
	// ShutdownGrace is how long Stop lets running handlers finish before it
	// cancels them (with cause ErrShutdown) and releases their jobs.
	// Negative means no grace: cancel at once. Defaults to 10s.
	ShutdownGrace time.Duration
	// Backoff schedules the retries of failed attempts. Defaults to the
	// default backoff of the job's kind, then of its queue, kept in the
	// database (Client.LimitQueue, `stint queues limit --default-backoff-*`),
	// then lifecycle.DefaultBackoff (500ms doubling to 60s, with jitter).
	// Set here, or in KindDefaults and QueueDefaults, it is the pool's own
	// and wins over the database's.
	Backoff lifecycle.Backoff
	// KindDefaults and QueueDefaults set the lease TTL, timeout, backoff and
	// retry rules of the jobs of a kind, or of a queue: a job's own spec
	// comes first, then its kind's defaults, then its queue's, then the
	// fields above (see JobDefaults). Defaults to none.
	KindDefaults  map[string]JobDefaults
	QueueDefaults map[string]JobDefaults
	// StoreBackoff spaces the retries of a store call that failed (a claim
	// whose outcome is unknown, a completion batch that could not be
	// written): each failure is logged with the call and the delay.
	// Defaults to DefaultStoreBackoff (50ms doubling to 30s, with jitter).
	StoreBackoff lifecycle.Backoff
	// Clock times heartbeats, timeouts, deadlines and budgets; lease
	// validity is judged by the store's clock. Defaults to the system clock.
	Clock clock.Clock
	// Logger receives what the pool does wrong or notices (stale leases,
	// store errors). Defaults to slog.Default().
	Logger *slog.Logger
	// NoMaintenance tells the pool not to run the maintenance services
	// (scheduler, reaper, timeouts, cancel finalizer, retention), because
	// another process on the same database runs them. By default each pool
	// runs them and joins the leader election for them, so that exactly one
	// process at a time does the work: without them, retries and scheduled
	// jobs never become due. Defaults to false.
	NoMaintenance bool
	// Maintenance configures the maintenance services the pool runs; its
	// Logger and Clock default to the pool's. Defaults to nil: the
	// maintenance package's defaults.
	Maintenance *maintenance.Config
	// MaintenanceCheck is how often the pool looks for work that stays due
	// because no maintenance services run anywhere (retrying or scheduled
	// jobs past their run_at, stalled jobs, by more than this), and logs an
	// error when it finds some. Negative turns the check off; it is off on
	// a store maintained elsewhere (see MaintainedElsewhere). Defaults to 1m.
	MaintenanceCheck time.Duration
	// CarryCompletions sends a queue's finished completions with its
	// fetcher's next claim, in one call, on a store that can
	// (store.CompleteClaimStore: a pool over server/remote). It halves the
	// pool's requests per job, but on a quiet machine it cost the server
	// more CPU per job than separate CompleteMany and Claim calls (see
	// docs/remote.md), so it is off by default.
	CarryCompletions bool
	// OnOutcome, when set, is called once per attempt after the store
	// answered the pool's report of it (or after the pool learned that the
	// job was no longer its own), with what the store recorded: a handler
	// that returned nil for a job cancelled meanwhile is reported as
	// rejected, never as a success. It runs on the pool's goroutines: keep
	// it quick. Defaults to nil.
	OnOutcome func(Outcome)
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if len(c.Queues) == 0 {
		c.Queues = map[string]int{lifecycle.DefaultQueue: DefaultMaxWorkers}
	}
	if c.WorkerID == "" {
		c.WorkerID = defaultWorkerID()
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.FetchLimit == 0 {
		c.FetchLimit = DefaultFetchLimit
	}
	if c.CompleteBatch == 0 {
		c.CompleteBatch = DefaultCompleteBatch
	}
	if c.MaintenanceCheck == 0 {
		c.MaintenanceCheck = DefaultMaintenanceCheck
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.Backoff != (lifecycle.Backoff{}) {
		c.Backoff = c.Backoff.OrDefault()
	} // unset, each fail leaves the schedule to the store: see Config.Backoff
	if c.StoreBackoff == (lifecycle.Backoff{}) {
		c.StoreBackoff = DefaultStoreBackoff
	}
	c.StoreBackoff = c.StoreBackoff.OrDefault()
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	for q, n := range c.Queues {
		if q == "" {
			return fmt.Errorf("stint: Config.Queues has an empty queue name")
		}
		if err := lifecycle.CheckName("queue", q); err != nil {
			return fmt.Errorf("stint: Config.Queues: %w", err)
		}
		if n < 1 || n > store.MaxBatch {
			return fmt.Errorf("stint: Config.Queues[%q] is %d: give each queue 1 to %d workers", q, n, store.MaxBatch)
		}
	}
	if len(c.Topics) > MaxTopics {
		return fmt.Errorf("stint: Config.Topics has %d patterns: give at most %d", len(c.Topics), MaxTopics)
	}
	for _, t := range c.Topics {
		if err := lifecycle.CheckTopicPattern(t); err != nil {
			return fmt.Errorf("stint: Config.Topics: %w", err)
		}
	}
	switch {
	case c.LeaseTTL < 0:
		return fmt.Errorf("stint: Config.LeaseTTL is %s: use a positive duration (default %s)", c.LeaseTTL, DefaultLeaseTTL)
	case c.PollInterval < 0:
		return fmt.Errorf("stint: Config.PollInterval is %s: use a positive duration (default %s)", c.PollInterval, DefaultPollInterval)
	case c.FetchLimit < 1 || c.FetchLimit > store.MaxBatch:
		return fmt.Errorf("stint: Config.FetchLimit is %d: use 1 to %d (default %d)", c.FetchLimit, store.MaxBatch, DefaultFetchLimit)
	case c.CompleteBatch < 1 || c.CompleteBatch > store.MaxBatch:
		return fmt.Errorf("stint: Config.CompleteBatch is %d: use 1 to %d (default %d)", c.CompleteBatch, store.MaxBatch, DefaultCompleteBatch)
	}
	if err := validateDefaults("Config.KindDefaults", c.KindDefaults); err != nil {
		return err
	}
	return validateDefaults("Config.QueueDefaults", c.QueueDefaults)
}

// defaultWorkerID is hostname-pid-random: readable in events, unique per pool.
func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
