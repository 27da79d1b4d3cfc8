package stats

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Defaults of a [Config].
const (
	DefaultInterval = 15 * time.Second
	DefaultMaxRows  = 200_000
)

// CountedStates are the states a [Counter] counts: every state a job waits
// or runs in, and the dead-letter queue. Other finished jobs only grow;
// their rates are the counters of package metrics.
var CountedStates = []lifecycle.State{
	lifecycle.Blocked, lifecycle.Scheduled, lifecycle.Queued, lifecycle.Claimed, lifecycle.Running,
	lifecycle.CancelRequested, lifecycle.Stalled, lifecycle.Retrying, lifecycle.DeadLettered,
}

// Config configures a [Counter].
type Config struct {
	// Interval is how often the jobs are counted. Defaults to 15s.
	Interval time.Duration
	// MaxRows bounds the rows one count reads; beyond it the snapshot says
	// Truncated. Defaults to 200,000.
	MaxRows int
	// Clock times the counts. Defaults to the system clock.
	Clock clock.Clock
	// Logger receives failed counts. Defaults to slog.Default().
	Logger *slog.Logger
	// Ended, when set, returns how many attempts have ended in each queue
	// so far (metrics.Metrics.Ended): each count then also measures the
	// throughput since the previous one. Defaults to nil: no throughput.
	Ended func() map[string]int64
	// OnCount, when set, is called with each new snapshot, on the
	// counter's goroutine: keep it quick. Defaults to nil.
	OnCount func(Snapshot)
}

// Snapshot is one count of the jobs.
type Snapshot struct {
	// At is when the count was taken; zero before the first.
	At time.Time `json:"at"`
	// Queues holds the count of each queue by state (only states with jobs).
	Queues map[string]map[lifecycle.State]int `json:"queues"`
	// OldestDue is, per queue, when its longest-waiting queued job became due.
	OldestDue map[string]time.Time `json:"oldest_due,omitempty"`
	// Truncated is set when the count stopped at Config.MaxRows.
	Truncated bool `json:"truncated,omitempty"`
	// DeadByReason counts the dead letters of each queue by reason code
	// ("unknown" when none was given).
	DeadByReason map[string]map[string]int `json:"dead_by_reason,omitempty"`
	// Throughput is, per queue, the attempts that ended per second between
	// the previous count and this one (with Config.Ended only).
	Throughput map[string]float64 `json:"throughput,omitempty"`
	// Unserved counts the queued jobs of each (queue, kind) that no worker
	// seen within store.WorkerTTL handles: they wait, and are reported
	// (DESIGN §7). Nil when the store does not tell.
	Unserved []store.KindCount `json:"unserved,omitempty"`
}

// Counter counts the jobs of a store in the background.
type Counter struct {
	s    store.Store
	cfg  Config
	mu   sync.Mutex
	snap Snapshot
	// ended is Config.Ended at the last count.
	ended map[string]int64
	stop  context.CancelFunc
	done  chan struct{}
}

// NewCounter returns a counter of s's jobs; Start it.
func NewCounter(s store.Store, cfg Config) *Counter {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Counter{s: s, cfg: cfg}
}

// Start counts at once, then every Interval until Stop.
func (c *Counter) Start(ctx context.Context) error {
	if c.done != nil {
		return errors.New("stats: the counter was already started")
	}
	ctx, c.stop = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		for {
			if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("stats: counting the jobs failed; the last count is kept", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-c.cfg.Clock.After(c.cfg.Interval):
			}
		}
	}()
	return nil
}

// Stop ends the background counting and waits for it.
func (c *Counter) Stop() {
	if c.stop != nil {
		c.stop()
		<-c.done
	}
}

// Snapshot returns the latest count.
func (c *Counter) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// Refresh counts the jobs now and keeps the result as the snapshot.
func (c *Counter) Refresh(ctx context.Context) error {
	snap := Snapshot{Queues: map[string]map[lifecycle.State]int{}, OldestDue: map[string]time.Time{},
		DeadByReason: map[string]map[string]int{}}
	rows, after := 0, ""
	for {
		page, err := c.s.JobList(ctx, &store.JobListParams{States: CountedStates, AfterID: after, Limit: 10_000})
		if err != nil {
			return err
		}
		for _, j := range page {
			byState := snap.Queues[j.Queue]
			if byState == nil {
				byState = map[lifecycle.State]int{}
				snap.Queues[j.Queue] = byState
			}
			byState[j.State]++
			if j.State == lifecycle.DeadLettered {
				byReason := snap.DeadByReason[j.Queue]
				if byReason == nil {
					byReason = map[string]int{}
					snap.DeadByReason[j.Queue] = byReason
				}
				byReason[ReasonOf(j)]++
			}
			if j.State == lifecycle.Queued {
				if old, ok := snap.OldestDue[j.Queue]; !ok || j.RunAt.Before(old) {
					snap.OldestDue[j.Queue] = j.RunAt
				}
			}
		}
		rows += len(page)
		if len(page) < 10_000 {
			break
		}
		if rows >= c.cfg.MaxRows {
			snap.Truncated = true
			break
		}
		after = page[len(page)-1].ID
	}
	if u, ok := store.As[store.UnservedLister](c.s); ok {
		var err error
		if snap.Unserved, err = u.UnservedKinds(ctx); err != nil {
			return err
		}
	}
	snap.At = c.cfg.Clock.Now()
	if c.cfg.OnCount != nil {
		defer func() { c.cfg.OnCount(snap) }() // after the lock is released
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Ended != nil {
		ended := c.cfg.Ended()
		if secs := snap.At.Sub(c.snap.At).Seconds(); c.ended != nil && secs > 0 {
			snap.Throughput = map[string]float64{}
			for q, n := range ended {
				snap.Throughput[q] = float64(n-c.ended[q]) / secs
			}
		}
		c.ended = ended
	}
	c.snap = snap
	return nil
}

// ReasonOf is the reason code a dead letter is grouped under: its own, or
// "unknown".
func ReasonOf(j store.Job) string {
	if j.ReasonCode != "" {
		return j.ReasonCode
	}
	return "unknown"
}
