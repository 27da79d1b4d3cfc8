package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// limitsRefresh is how often a node re-reads which queues are paused or
// limited. A queue paused or limited for the first time is seen by other
// nodes within it; from then on every claim of the queue reads its
// settings under lock, in the claim's transaction.
const limitsRefresh = time.Second

// limits caches the names of the queues whose claims need their settings,
// so claims of every other queue (all of them, in a pool with no limits)
// cost nothing more than before.
type limits struct {
	mu      sync.Mutex
	at      time.Time // when names was read, by the store's clock; zero: never
	last    time.Time // the store's clock at this node's latest claim
	names   map[string]bool
	kinds   map[string]bool      // kinds with a rate limit (rows named KindLimitName)
	workers map[string]time.Time // worker id → when its claim was last recorded
	// turn rotates which tenant a fair claim serves first.
	turn int
	// defaults are the job defaults of the queue and kind rows that have
	// some (defaults.go), read at defaultsAt by the store's clock, under
	// their own lock: enqueues never wait for the claims' bookkeeping.
	dmu        sync.Mutex
	defaults   map[string]SpecDefaults
	defaultsAt time.Time
}

func newLimits() *limits { return &limits{workers: map[string]time.Time{}} }

// forget makes the next claim re-read the names.
func (l *limits) forget() {
	l.mu.Lock()
	l.at = time.Time{}
	l.mu.Unlock()
	l.dmu.Lock()
	l.defaultsAt = time.Time{}
	l.dmu.Unlock()
}

// limited returns which of queues need their settings read, and the kinds
// with a rate limit (nil: none). It judges
// the age of the names by the time of the latest claim, so the common case
// reads no clock (on PostgreSQL the claim's time comes with its rows).
func (l *limits) limited(ctx context.Context, qt QueueTx, queues []string) (map[string]bool, map[string]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.last
	if l.at.IsZero() || t.Sub(l.at) >= limitsRefresh || t.Before(l.at) {
		names, err := qt.QueueLimitedNames(ctx)
		if err != nil {
			return nil, nil, err
		}
		l.names, l.kinds, l.at = make(map[string]bool, len(names)), nil, t
		for _, n := range names {
			if kind, ok := limitedKind(n); ok {
				if l.kinds == nil {
					l.kinds = map[string]bool{}
				}
				l.kinds[kind] = true
				continue
			}
			l.names[n] = true
		}
	}
	var out map[string]bool
	for _, q := range queues {
		if l.names[q] {
			if out == nil {
				out = map[string]bool{}
			}
			out[q] = true
		}
	}
	return out, l.kinds, nil
}

// claimable is JobClaimable with the queues' pauses and limits applied.
// Queues without settings are claimed as before, in one query. Each paused
// or limited queue has its settings row locked (its claimers across every
// node take turns), is skipped when paused, and is claimed from only up to
// what its concurrency and rate limits leave; the rate logs are updated.
func (e *engine) claimable(ctx context.Context, tx Tx, q ClaimQuery) ([]lifecycle.Job, error) {
	qt, ok := tx.(QueueTx)
	if !ok {
		return tx.JobClaimable(ctx, q)
	}
	limited, kinds, err := e.limits.limited(ctx, qt, q.Queues)
	if err != nil || len(limited) == 0 && len(kinds) == 0 {
		if err != nil {
			return nil, err
		}
		return tx.JobClaimable(ctx, q)
	}
	if q.Now.IsZero() {
		// Rate windows need the time: limited queues pay for reading it.
		if q.Now, err = now(ctx, tx, nil); err != nil {
			return nil, err
		}
	}
	var jobs []lifecycle.Job
	var plain []string
	for _, name := range q.Queues {
		if !limited[name] {
			plain = append(plain, name)
		}
	}
	if len(plain) > 0 {
		pq := q
		pq.Queues = plain
		if jobs, err = tx.JobClaimable(ctx, pq); err != nil {
			return nil, err
		}
	}
	settings := map[string]QueueSettings{}
	for _, name := range q.Queues {
		if !limited[name] {
			continue
		}
		s, _, err := qt.QueueGet(ctx, name)
		if err != nil {
			return nil, err
		}
		s.Name = name
		n, err := room(ctx, qt, &s, q)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			continue
		}
		lq := q
		lq.Queues, lq.Limit = []string{name}, n
		claimFn := tx.JobClaimable
		switch {
		case s.FairTenants: // with the key limit too, if any
			claimFn = func(ctx context.Context, q ClaimQuery) ([]lifecycle.Job, error) {
				return e.claimFair(ctx, tx, qt, q, s)
			}
		case s.KeyLimit > 0:
			claimFn = func(ctx context.Context, q ClaimQuery) ([]lifecycle.Job, error) {
				return claimKeyed(ctx, tx, q, s.KeyLimit)
			}
		}
		got, err := claimFn(ctx, lq)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, got...)
		settings[name] = s
	}
	// One claim order across the queues, then the batch size.
	slices.SortFunc(jobs, func(a, b lifecycle.Job) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(jobs) > q.Limit {
		jobs = jobs[:q.Limit]
	}
	if len(kinds) > 0 {
		if jobs, err = kindRates(ctx, qt, q, kinds, jobs); err != nil {
			return nil, err
		}
	}
	return jobs, countStarts(ctx, qt, settings, jobs, q.Now)
}

// room returns how many jobs of s's queue a claim may take now: none when
// it is paused, and no more than its concurrency and rate limits leave.
func room(ctx context.Context, qt QueueTx, s *QueueSettings, q ClaimQuery) (int, error) {
	if s.Paused {
		return 0, nil
	}
	n := q.Limit
	if s.MaxRunning > 0 {
		running, err := qt.JobCountLeased(ctx, s.Name)
		if err != nil {
			return 0, err
		}
		n = min(n, s.MaxRunning-running)
	}
	if s.RateLimit > 0 {
		s.RateLog = s.RateLog.Since(q.Now.Add(-s.RateInterval))
		n = min(n, s.RateLimit-s.RateLog.Count())
	}
	return n, nil
}

// countStarts adds the claimed jobs to their rate-limited queues' logs.
func countStarts(ctx context.Context, qt QueueTx, settings map[string]QueueSettings, jobs []lifecycle.Job, now time.Time) error {
	per := map[string]int{}
	for _, j := range jobs {
		per[j.Queue]++
	}
	for name, s := range settings {
		if s.RateLimit == 0 || per[name] == 0 {
			continue
		}
		s.RateLog = s.RateLog.Add(now, per[name])
		if err := qt.QueuePut(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// claimed runs after a claim read its time t: it notes t for the limits
// cache and records the claiming worker's queues and kinds, at most every
// workerSeenEvery per worker and node, so `stint queues ls` can tell which
// queued kinds no live worker serves.
func (e *engine) claimed(ctx context.Context, tx Tx, p *JobClaimParams, t time.Time) error {
	qt, ok := tx.(QueueTx)
	if !ok {
		return nil
	}
	e.limits.mu.Lock()
	if t.After(e.limits.last) || e.limits.last.IsZero() {
		e.limits.last = t
	}
	last, ok := e.limits.workers[p.WorkerID]
	due := !ok || t.Sub(last) >= workerSeenEvery || t.Before(last)
	if due {
		e.limits.workers[p.WorkerID] = t
	}
	e.limits.mu.Unlock()
	if !due {
		return nil
	}
	return qt.WorkerSeen(ctx, Worker{ID: p.WorkerID, Queues: p.Queues, Kinds: p.Kinds, SeenAt: t})
}
