package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

// Defaults of a [SoakConfig].
const (
	DefaultSoakRate     = 2000
	DefaultSoakDuration = 3 * time.Minute
	DefaultSoakInterval = 5 * time.Second
)

// SoakConfig configures a soak: a fixed offered load worked by a pool in its
// default configuration, with the database's horizon held through the
// middle third of the run.
type SoakConfig struct {
	// Rate is the offered load in jobs enqueued per second. Defaults to 2000.
	Rate int
	// Duration is how long jobs are offered. Defaults to 3 minutes.
	Duration time.Duration
	// Interval is the length of one reported sample. Defaults to 5 seconds.
	Interval time.Duration
	// Kind is the kind of the no-op jobs. Defaults to "bench.noop".
	Kind string
	// Pool configures the worker pool; its zero value, the default
	// configuration, is what the soak is about. A nil Logger logs warnings
	// on stderr.
	Pool stint.Config
	// Observer holds the horizon and reads the storage figures of the
	// store's database. Required: [PostgresObserver] or [SQLiteObserver].
	Observer Observer
	// Progress, when set, is called with each interval as it closes.
	Progress func(SoakInterval)
}

// WithDefaults returns c with every unset field given its default.
func (c SoakConfig) WithDefaults() SoakConfig {
	if c.Rate == 0 {
		c.Rate = DefaultSoakRate
	}
	if c.Duration == 0 {
		c.Duration = DefaultSoakDuration
	}
	if c.Interval == 0 {
		c.Interval = DefaultSoakInterval
	}
	if c.Kind == "" {
		c.Kind = DefaultKind
	}
	if c.Pool.Logger == nil {
		c.Pool.Logger = slog.Default()
	}
	return c
}

func (c SoakConfig) validate() error {
	switch {
	case c.Rate < 1 || c.Rate > 1_000_000:
		return fmt.Errorf("bench: soak Rate is %d jobs/s: use 1 to 1,000,000", c.Rate)
	case c.Interval < 10*time.Millisecond:
		return fmt.Errorf("bench: soak Interval is %s: use at least 10ms", c.Interval)
	case c.Duration < 3*c.Interval:
		return fmt.Errorf("bench: soak Duration is %s: use at least three intervals (%s), one per third", c.Duration, 3*c.Interval)
	case c.Observer == nil:
		return fmt.Errorf("bench: soak needs an Observer: bench.PostgresObserver or bench.SQLiteObserver on the store's database")
	}
	return nil
}

// Observer is what a soak needs from the database beside the store: a
// reader on another connection that holds the horizon (the oldest snapshot
// vacuum or a checkpoint must respect), and the storage figures.
type Observer interface {
	// Hold opens the long read transaction and returns the function that
	// ends it.
	Hold(ctx context.Context) (release func() error, err error)
	// Storage reads the current storage figures.
	Storage(ctx context.Context) (Storage, error)
	// Close closes the observer's connections.
	Close() error
}

// Storage is the database's storage at one moment.
type Storage struct {
	// Relations are PostgreSQL's stint tables and indexes.
	Relations []Relation `json:"relations,omitempty"`
	// WALBytes is the SQLite WAL file's size.
	WALBytes int64 `json:"wal_bytes,omitempty"`
	// DBBytes is the SQLite database file's size.
	DBBytes int64 `json:"db_bytes,omitempty"`
}

// Relation is one PostgreSQL table or index.
type Relation struct {
	Name string `json:"name"`
	// Partitioned names the partitioned table of a partition.
	Partitioned string `json:"partition_of,omitempty"`
	// Kind is "table" or "index".
	Kind string `json:"kind"`
	// DeadTuples and LiveTuples are pg_stat_user_tables' estimates (tables only).
	DeadTuples int64 `json:"dead_tuples,omitempty"`
	LiveTuples int64 `json:"live_tuples,omitempty"`
	// Bytes is pg_relation_size: the main fork alone.
	Bytes int64 `json:"bytes"`
	// TotalBytes is pg_total_relation_size (tables: with their indexes and TOAST).
	TotalBytes int64 `json:"total_bytes"`
}

// Table is the table r belongs to: its partitioned table, or itself.
func (r Relation) Table() string {
	if r.Partitioned != "" {
		return r.Partitioned
	}
	return r.Name
}

// DeadTuples sums the dead tuples of every table.
func (s Storage) DeadTuples() int64 {
	var n int64
	for _, r := range s.Relations {
		n += r.DeadTuples
	}
	return n
}

// Bytes is the size on disk: every table's total size on PostgreSQL, the
// database and WAL files on SQLite.
func (s Storage) Bytes() int64 {
	n := s.DBBytes + s.WALBytes
	for _, r := range s.Relations {
		if r.Kind == "table" {
			n += r.TotalBytes
		}
	}
	return n
}

// SoakInterval is one sample of a soak.
type SoakInterval struct {
	// Start and End are offsets from the run's start, in seconds.
	Start float64 `json:"start_s"`
	End   float64 `json:"end_s"`
	// Held says the horizon was held during some of the interval.
	Held     bool    `json:"held"`
	Enqueued int     `json:"enqueued"`
	Done     int     `json:"done"`
	PerSec   float64 `json:"jobs_per_second"`
	// Pickup is enqueue returned → handler started, for the jobs that
	// started in the interval.
	PickupP50MS float64 `json:"pickup_p50_ms"`
	PickupP99MS float64 `json:"pickup_p99_ms"`
	Storage     Storage `json:"storage"`
}

// SoakReport is what a soak measured, and how it compares with the targets.
type SoakReport struct {
	Rate      int            `json:"rate"`
	Duration  string         `json:"duration"`
	Interval  string         `json:"interval"`
	Pool      PoolInfo       `json:"pool"`
	HeldFrom  float64        `json:"held_from_s"`
	HeldUntil float64        `json:"held_until_s"`
	Intervals []SoakInterval `json:"intervals"`
	Summary   SoakSummary    `json:"summary"`
}

// SoakSummary compares the thirds of a run: the targets are, while the
// horizon is held, throughput at least 80% of the first third's and pickup
// p99 under 50 ms; within 60 s after the release, throughput at least 95%.
type SoakSummary struct {
	FirstPerSec float64 `json:"first_third_jobs_per_second"`
	HeldPerSec  float64 `json:"held_jobs_per_second"`
	// HeldRatio is HeldPerSec / FirstPerSec.
	HeldRatio float64 `json:"held_ratio"`
	// HeldP99MS is the worst interval's pickup p99 while held.
	HeldP99MS float64 `json:"held_pickup_p99_ms"`
	// AfterPerSec covers the intervals that begin after the release and end
	// within 60 s of it (the whole last third when it is shorter).
	AfterPerSec float64 `json:"after_jobs_per_second"`
	AfterRatio  float64 `json:"after_ratio"`
	// DeadTuples and Bytes are the first and the largest of the run.
	DeadTuplesFirst int64 `json:"dead_tuples_first"`
	DeadTuplesMax   int64 `json:"dead_tuples_max"`
	BytesFirst      int64 `json:"bytes_first"`
	BytesMax        int64 `json:"bytes_max"`
	HeldMet         bool  `json:"held_target_met"`
	AfterMet        bool  `json:"after_target_met"`
	// Backlog is how many offered jobs were not done when the load stopped.
	Backlog int `json:"backlog"`
}

// Soak targets, as ratios against the run's first third.
const (
	soakHeldRatio  = 0.80
	soakHeldP99MS  = 50
	soakAfterRatio = 0.95
	soakAfterSpan  = 60 // seconds after the release
)

// Soak runs a soak on s, which must hold no jobs of cfg.Kind: for
// cfg.Duration it enqueues cfg.Rate jobs a second while a default pool works
// them, and cfg.Observer holds the horizon through the middle third. It
// samples each cfg.Interval. The pool is stopped at the end; jobs still
// queued then are left in the store.
func Soak(ctx context.Context, s store.Store, cfg SoakConfig) (SoakReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return SoakReport{}, err
	}
	r := &soaker{s: s, cfg: cfg}
	return r.run(ctx)
}
