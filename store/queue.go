package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// QueueSettings are the cluster-wide controls of one queue. The zero value
// (not paused, no limits) is what every queue has until told otherwise.
type QueueSettings struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	// MaxRunning is the most jobs of the queue claimed or running at once,
	// across every node; 0 is no limit.
	MaxRunning int `json:"max_running,omitempty"`
	// RateLimit is the most jobs of the queue started in any RateInterval
	// (a sliding window: see RateLog); 0 is no limit.
	RateLimit    int           `json:"rate_limit,omitempty"`
	RateInterval time.Duration `json:"rate_interval,omitempty"`
	// FairTenants shares each claim of the queue between the tenants that
	// have queued jobs in it, by Weights (a tenant not named weighs 1),
	// and gives what one leaves unused to the others: one busy tenant
	// never starves another, and a lone tenant still gets every slot.
	FairTenants bool           `json:"fair_tenants,omitempty"`
	Weights     map[string]int `json:"weights,omitempty"`
	// KeyLimit is the most jobs of the queue with the same concurrency key
	// (env ConcurrencyKeyEnv) claimed or running at once; 0 is no limit.
	// Jobs of a key at its limit wait without holding back other keys.
	KeyLimit int `json:"key_limit,omitempty"`
	// Defaults are given to the jobs enqueued into the queue (or of the
	// kind, on a kind's row) that do not say (see SpecDefaults).
	Defaults SpecDefaults `json:"defaults,omitzero"`
	// RateLog holds the starts of the last RateInterval, which a claim
	// counts and adds to.
	RateLog RateLog `json:"-"`
	// RateWindow and RateCount, in what QueueSettingsList returns, are the
	// start of the interval that ends at the store's time and the starts
	// in it; derived from RateLog, never stored.
	RateWindow time.Time `json:"-"`
	RateCount  int       `json:"-"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Limited reports whether claims of the queue need its settings at all.
func (q QueueSettings) Limited() bool {
	return q.Paused || q.MaxRunning > 0 || q.RateLimit > 0 || q.FairTenants || q.KeyLimit > 0
}

// QueueLimits change a queue's limits; a nil field is left as it is.
type QueueLimits struct {
	MaxRunning   *int
	RateLimit    *int
	RateInterval *time.Duration
	FairTenants  *bool
	KeyLimit     *int
	// Weights, when not nil, replaces the tenants' weights.
	Weights map[string]int
	// DefaultMaxAttempts, DefaultTimeout and DefaultPriority set the
	// defaults of the jobs enqueued into the queue (or of the kind) that
	// do not say; 0 removes one.
	DefaultMaxAttempts *int
	DefaultTimeout     *time.Duration
	DefaultPriority    *int
	// DefaultBackoffBase, DefaultBackoffFactor and DefaultBackoffMax set
	// the retry schedule of the queue's (or kind's) failed attempts that
	// name none (see SpecDefaults); 0 removes one.
	DefaultBackoffBase   *time.Duration
	DefaultBackoffFactor *float64
	DefaultBackoffMax    *time.Duration
}

// Worker is a worker as the store last saw it claim.
type Worker struct {
	ID     string    `json:"id"`
	Queues []string  `json:"queues"`
	Kinds  []string  `json:"kinds,omitempty"` // empty: any kind
	SeenAt time.Time `json:"seen_at"`
}

// QueueCount is one row of the queue statistics: jobs of a queue in a state.
type QueueCount struct {
	Queue string
	State lifecycle.State
	Jobs  int
	// OldestRunAt is the earliest run_at among them (queued jobs: how long
	// the oldest has waited).
	OldestRunAt time.Time
}

// KindCount counts the queued jobs of one kind in one queue.
type KindCount struct {
	Queue string `json:"queue"`
	Kind  string `json:"kind"`
	Jobs  int    `json:"jobs"`
}

// QueueTx is implemented by a driver's Tx that keeps queue controls.
type QueueTx interface {
	// QueueLimitedNames returns the names of the queues that are paused or
	// limited.
	QueueLimitedNames(ctx context.Context) ([]string, error)
	// QueueGet returns a queue's settings, locked for update where the
	// backend locks rows (claimers of the queue wait for each other).
	QueueGet(ctx context.Context, name string) (QueueSettings, bool, error)
	// QueuePut inserts or replaces a queue's settings.
	QueuePut(ctx context.Context, q QueueSettings) error
	// QueueList returns every queue's settings ordered by name.
	QueueList(ctx context.Context) ([]QueueSettings, error)
	// QueueDefaults returns the job defaults of the queue and kind rows
	// that have some, by row name.
	QueueDefaults(ctx context.Context) (map[string]SpecDefaults, error)
	// QueueTenants returns up to limit tenants with queued jobs in queue.
	QueueTenants(ctx context.Context, queue string, limit int) ([]string, error)
	// JobClaimableTenant is JobClaimable for the jobs of one tenant in
	// q's single queue.
	JobClaimableTenant(ctx context.Context, q ClaimQuery, tenant string) ([]lifecycle.Job, error)
	// JobCountLeased counts the claimed, running and cancel_requested jobs of a queue.
	JobCountLeased(ctx context.Context, queue string) (int, error)
	// QueueCounts counts the jobs of every queue by state.
	QueueCounts(ctx context.Context) ([]QueueCount, error)
	// QueuedKinds counts the queued jobs by queue and kind.
	QueuedKinds(ctx context.Context) ([]KindCount, error)
	// WorkerSeen records that a worker claimed now.
	WorkerSeen(ctx context.Context, w Worker) error
	// WorkerList returns the workers seen since since.
	WorkerList(ctx context.Context, since time.Time) ([]Worker, error)
}

// QueueStore is implemented by every Store [New] returns whose driver keeps
// queue controls.
type QueueStore interface {
	// QueuePause pauses (claims skip the queue; running jobs finish;
	// enqueues still land) or resumes a queue, on every node.
	QueuePause(ctx context.Context, name string, paused bool) (QueueSettings, error)
	// QueueLimit sets a queue's limits.
	QueueLimit(ctx context.Context, name string, l QueueLimits) (QueueSettings, error)
	// QueueInfo describes every queue that has jobs or settings.
	QueueInfo(ctx context.Context) ([]QueueInfo, error)
	// QueueSettingsList returns the settings of every queue that has any,
	// by name, without counting jobs (cheap enough to read per request).
	// A rate-limited queue's RateWindow and RateCount are the start of the
	// interval that ends at the store's time and the starts in it.
	QueueSettingsList(ctx context.Context) ([]QueueSettings, error)
}

// QueueInfo is what `stint queues ls` shows of a queue.
type QueueInfo struct {
	QueueSettings
	// Jobs counts the queue's jobs by state (terminal ones included).
	Jobs map[lifecycle.State]int `json:"jobs"`
	// Running counts the leased jobs: claimed, running, cancel_requested.
	Running int `json:"running"`
	// OldestWaiting is how long the oldest queued job has waited.
	OldestWaiting time.Duration `json:"oldest_waiting,omitempty"`
	// Unserved are kinds with queued jobs that no worker seen within
	// WorkerTTL handles.
	Unserved []string `json:"unserved,omitempty"`
}

// WorkerTTL is how long after its last claim a worker counts as live for
// QueueInfo's Unserved.
const WorkerTTL = time.Minute

// workerSeenEvery is how often a claim records its worker.
const workerSeenEvery = 10 * time.Second

var _ QueueStore = (*engine)(nil)

// Queues returns s's QueueStore, or ErrUnsupported.
func Queues(s Store) (QueueStore, error) {
	if q, ok := As[QueueStore](s); ok {
		return q, nil
	}
	return nil, fmt.Errorf("queue controls: %w", ErrUnsupported)
}

// queueTx runs fn with the driver's QueueTx in a write transaction.
func (e *engine) queueTx(ctx context.Context, fn func(tx Tx, qt QueueTx) error) error {
	err := e.write(ctx, func(tx Tx, _ *batch) error {
		qt, ok := tx.(QueueTx)
		if !ok {
			return fmt.Errorf("queue controls: %w", ErrUnsupported)
		}
		return fn(tx, qt)
	})
	if err == nil {
		e.limits.forget() // this node sees the change at its next claim
	}
	return err
}

// queueChange reads a queue's settings (or the zero ones), lets change
// edit them and writes them back.
func (e *engine) queueChange(ctx context.Context, name string, change func(*QueueSettings) error) (QueueSettings, error) {
	if kind, ok := limitedKind(name); ok {
		if err := lifecycle.CheckName("kind", kind); err != nil {
			return QueueSettings{}, err
		}
	} else if err := lifecycle.CheckName("queue", name); err != nil {
		return QueueSettings{}, err
	}
	var out QueueSettings
	err := e.queueTx(ctx, func(tx Tx, qt QueueTx) error {
		q, _, err := qt.QueueGet(ctx, name)
		if err != nil {
			return err
		}
		q.Name = name
		if err := change(&q); err != nil {
			return err
		}
		if q.UpdatedAt, err = now(ctx, tx, nil); err != nil {
			return err
		}
		out = q
		return qt.QueuePut(ctx, q)
	})
	return out, err
}

func (e *engine) QueuePause(ctx context.Context, name string, paused bool) (QueueSettings, error) {
	return e.queueChange(ctx, name, func(q *QueueSettings) error {
		if _, kind := limitedKind(name); kind {
			return lifecycle.Validationf("kind %s: a kind cannot be paused; pause its queue", strings.TrimPrefix(name, kindPrefix))
		}
		q.Paused = paused
		return nil
	})
}

func (e *engine) QueueLimit(ctx context.Context, name string, l QueueLimits) (QueueSettings, error) {
	return e.queueChange(ctx, name, func(q *QueueSettings) error {
		if l.MaxRunning != nil {
			q.MaxRunning = *l.MaxRunning
		}
		if l.RateLimit != nil {
			q.RateLimit = *l.RateLimit
		}
		if l.RateInterval != nil {
			q.RateInterval = *l.RateInterval
		}
		if l.FairTenants != nil {
			q.FairTenants = *l.FairTenants
		}
		if l.KeyLimit != nil {
			q.KeyLimit = *l.KeyLimit
		}
		if l.Weights != nil {
			q.Weights = l.Weights
		}
		if l.DefaultMaxAttempts != nil {
			q.Defaults.MaxAttempts = *l.DefaultMaxAttempts
		}
		if l.DefaultTimeout != nil {
			q.Defaults.Timeout = *l.DefaultTimeout
		}
		if l.DefaultPriority != nil {
			q.Defaults.Priority = *l.DefaultPriority
		}
		if l.DefaultBackoffBase != nil {
			q.Defaults.BackoffBase = *l.DefaultBackoffBase
		}
		if l.DefaultBackoffFactor != nil {
			q.Defaults.BackoffFactor = *l.DefaultBackoffFactor
		}
		if l.DefaultBackoffMax != nil {
			q.Defaults.BackoffMax = *l.DefaultBackoffMax
		}
		if err := q.Defaults.validate(); err != nil {
			return err
		}
		for tenant, w := range q.Weights {
			if w < 1 || w > 1000 {
				return lifecycle.Validationf("weight %d of tenant %q: give 1 to 1000", w, tenant)
			}
		}
		if _, kind := limitedKind(name); kind && (q.Paused || q.MaxRunning != 0 || q.KeyLimit != 0 || q.FairTenants || len(q.Weights) > 0) {
			return lifecycle.Validationf("kind %s: a kind takes only a rate limit (--rate with --per) and job defaults; limit the queue for the rest", strings.TrimPrefix(name, kindPrefix))
		}
		switch {
		case q.MaxRunning < 0 || q.MaxRunning > MaxBatch*100:
			return lifecycle.Validationf("max running %d: give 0 (no limit) to %d", q.MaxRunning, MaxBatch*100)
		case q.KeyLimit < 0:
			return lifecycle.Validationf("key limit %d: give 0 (no limit) or a positive number", q.KeyLimit)
		case q.RateLimit < 0:
			return lifecycle.Validationf("rate limit %d: give 0 (no limit) or a positive number of starts", q.RateLimit)
		case q.RateLimit > 0 && q.RateInterval < time.Millisecond:
			return lifecycle.Validationf("rate limit of %d needs an interval of at least 1ms, such as 1s or 1m", q.RateLimit)
		}
		return nil // the log stays: a new limit counts the starts already made
	})
}

func (e *engine) QueueInfo(ctx context.Context) ([]QueueInfo, error) {
	var out []QueueInfo
	err := e.d.Read(ctx, func(tx Tx) error {
		qt, ok := tx.(QueueTx)
		if !ok {
			return fmt.Errorf("queue controls: %w", ErrUnsupported)
		}
		t, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		byName := map[string]*QueueInfo{}
		get := func(name string) *QueueInfo {
			if q, ok := byName[name]; ok {
				return q
			}
			q := &QueueInfo{QueueSettings: QueueSettings{Name: name}, Jobs: map[lifecycle.State]int{}}
			byName[name] = q
			return q
		}
		settings, err := qt.QueueList(ctx)
		if err != nil {
			return err
		}
		for _, s := range settings {
			get(s.Name).QueueSettings = s
		}
		counts, err := qt.QueueCounts(ctx)
		if err != nil {
			return err
		}
		for _, c := range counts {
			q := get(c.Queue)
			q.Jobs[c.State] = c.Jobs
			if c.State.Leased() {
				q.Running += c.Jobs
			}
			if c.State == lifecycle.Queued && t.After(c.OldestRunAt) {
				q.OldestWaiting = t.Sub(c.OldestRunAt).Round(time.Millisecond)
			}
		}
		kinds, err := qt.QueuedKinds(ctx)
		if err != nil {
			return err
		}
		workers, err := qt.WorkerList(ctx, t.Add(-WorkerTTL))
		if err != nil {
			return err
		}
		for _, k := range unserved(kinds, workers) {
			q := get(k.Queue)
			q.Unserved = append(q.Unserved, k.Kind)
		}
		out = out[:0]
		for _, q := range byName {
			out = append(out, *q)
		}
		slices.SortFunc(out, func(a, b QueueInfo) int { return strings.Compare(a.Name, b.Name) })
		return nil
	})
	return out, err
}

func (e *engine) QueueSettingsList(ctx context.Context) ([]QueueSettings, error) {
	var out []QueueSettings
	err := e.d.Read(ctx, func(tx Tx) error {
		qt, ok := tx.(QueueTx)
		if !ok {
			return fmt.Errorf("queue controls: %w", ErrUnsupported)
		}
		t, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if out, err = qt.QueueList(ctx); err != nil {
			return err
		}
		for i, q := range out {
			if q.RateLimit > 0 && q.RateInterval > 0 {
				from := t.Add(-q.RateInterval)
				out[i].RateWindow, out[i].RateCount = from, q.RateLog.Since(from).Count()
			}
		}
		return nil
	})
	return out, err
}

// served reports whether some worker claims kind from queue.
func served(workers []Worker, queue, kind string) bool {
	for _, w := range workers {
		if slices.Contains(w.Queues, queue) && (len(w.Kinds) == 0 || slices.Contains(w.Kinds, kind)) {
			return true
		}
	}
	return false
}
