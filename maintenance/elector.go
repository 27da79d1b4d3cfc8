package maintenance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// Election defaults.
const (
	// DefaultSeat is the leader seat the maintenance services run under.
	DefaultSeat = "maintenance"
	// DefaultLeaderTTL is how long a leader seat is held without renewal.
	DefaultLeaderTTL = 15 * time.Second
)

// resignTimeout bounds the resignation a stopping leader sends, so Stop
// returns even when the database is unreachable (the seat then expires).
const resignTimeout = 5 * time.Second

// ElectorConfig configures an [Elector].
type ElectorConfig struct {
	// Seat names the leader seat. Processes that share a database and a seat
	// elect one leader between them. Defaults to DefaultSeat ("maintenance").
	Seat string
	// ID names this candidate; it must differ between processes. Defaults to
	// "<hostname>-<pid>-<random>".
	ID string
	// TTL is how long the seat stays held without renewal. The leader renews
	// it every TTL/3 and followers try to take it every TTL/5, so a killed
	// leader is replaced at most TTL + TTL/5 after its last renewal, and a
	// leader that stops cleanly (resigning) within TTL/5. Defaults to
	// DefaultLeaderTTL (15s).
	TTL time.Duration
	// SafetyMargin shortens the time a leader trusts its seat: it considers
	// itself leader until the time it sent its last successful request, plus
	// TTL, minus SafetyMargin. The store counts the TTL from its own clock,
	// which read the time after the request was sent, so the leader stops
	// trusting its seat before any successor can be elected; the margin
	// covers clocks running at slightly different rates and the time it
	// takes to stop the services. At least 0 and less than TTL/2. Defaults
	// to TTL/5.
	SafetyMargin time.Duration
	// OnChange, if set, is called each time this candidate becomes leader or
	// stops being leader, from the election goroutine and after the
	// Maintainer started or stopped its services. It must return quickly
	// and must not call Stop.
	OnChange func(LeaderChange)
	// Logger receives elections, depositions and failed requests. Defaults
	// to slog.Default().
	Logger *slog.Logger
	// Clock times renewals and trust. Defaults to the system clock.
	Clock clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c ElectorConfig) WithDefaults() ElectorConfig {
	c.Seat = orDefault(c.Seat, DefaultSeat)
	if c.ID == "" {
		c.ID = candidateID()
	}
	c.TTL = orDefault(c.TTL, DefaultLeaderTTL)
	if c.SafetyMargin == 0 {
		c.SafetyMargin = c.TTL / 5
	}
	c.Logger = orDefault(c.Logger, slog.Default())
	c.Clock = orDefault[clock.Clock](c.Clock, clock.System{})
	return c
}

func (c ElectorConfig) validate() error {
	switch {
	case c.TTL <= 0:
		return fmt.Errorf("maintenance: election: TTL is %s: use a positive duration, or 0 for the default", c.TTL)
	case c.SafetyMargin < 0 || c.SafetyMargin >= c.TTL/2:
		return fmt.Errorf("maintenance: election: SafetyMargin is %s: use at least 0 and less than TTL/2 (%s)", c.SafetyMargin, c.TTL/2)
	}
	return nil
}

func candidateID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// LeaderChange reports that a candidate became leader or stopped being one.
type LeaderChange struct {
	// ID is the candidate.
	ID string
	// Leader is true when it was elected, false when it stopped leading.
	Leader bool
	// Term is the seat's term: it rises each time the seat changes hands.
	Term int64
	// Reason says why, for logs.
	Reason string
}

// Elector competes for a leader seat in the store and keeps it while it
// can. It trusts the seat only for TTL minus SafetyMargin after it sent the
// request that won or renewed it, and gives it up at once (stopping the
// Maintainer's services) when a renewal fails or comes too late. Stop
// resigns the seat, so a successor takes over without waiting for it to
// expire.
type Elector struct {
	store store.Store
	cfg   ElectorConfig
	now   nowFunc
	renew time.Duration // leader's renewal period
	retry time.Duration // follower's attempt period
	// changed is the Maintainer's hook, called before cfg.OnChange.
	changed func(LeaderChange)

	mu         sync.Mutex
	leader     bool
	term       int64
	validUntil time.Time // by cfg.Clock; meaningful while leader
	held       bool      // the store granted this candidate the seat at least once
	cancel     context.CancelFunc
	done       chan struct{}
	noResign   bool // set by tests to play a killed leader

	// attempted, when set (by tests), receives each election outcome after
	// the timer of the next attempt is armed.
	attempted chan electResult
}

type electResult struct {
	l   store.Leadership
	err error
}

// NewElector returns an elector for a seat in s; cfg may be nil for the defaults.
func NewElector(s store.Store, cfg *ElectorConfig) (*Elector, error) {
	c := ElectorConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Elector{store: s, cfg: c, now: storeNow, renew: c.TTL / 3, retry: c.TTL / 5}, nil
}

// ID returns the candidate's id.
func (e *Elector) ID() string { return e.cfg.ID }

// IsLeader reports whether this candidate holds the seat and may still trust
// it by its clock.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader && e.cfg.Clock.Now().Before(e.validUntil)
}

// Term returns the term of the seat this candidate holds or last held, or 0
// if it never held it.
func (e *Elector) Term() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term
}

// Start begins competing for the seat: the first attempt is made at once.
// Starting a running elector does nothing.
func (e *Elector) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("maintenance: election: not started: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	e.cancel, e.done = cancel, make(chan struct{})
	go e.run(ctx, e.done)
	return nil
}

// Stop steps down (stopping the services first) and resigns the seat, so
// another candidate can take it at once.
func (e *Elector) Stop() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.cancel, e.done = nil, nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// abandon stops like a killed process would: without resigning, so the seat
// stays taken until it expires.
func (e *Elector) abandon() {
	e.mu.Lock()
	e.noResign = true
	e.mu.Unlock()
	e.Stop()
}

func (e *Elector) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	var pending chan electResult
	for {
		sent := e.cfg.Clock.Now()
		res := make(chan electResult, 1)
		go func() {
			l, err := e.store.LeaderElect(ctx, &store.LeaderElectParams{Name: e.cfg.Seat, ID: e.cfg.ID, TTL: e.cfg.TTL, Now: e.now()})
			res <- electResult{l, err}
		}()
		r, ok := waitTrusting(ctx, e, res)
		if !ok {
			pending = res
			break
		}
		e.settle(ctx, sent, r)
		period := e.retry
		if e.IsLeader() {
			period = e.renew
		}
		next := e.cfg.Clock.After(period)
		if e.attempted != nil {
			select {
			case e.attempted <- r:
			case <-ctx.Done():
			}
		}
		if _, ok := waitTrusting(ctx, e, next); !ok {
			break
		}
	}
	e.finish(ctx, pending)
}

// waitTrusting waits for ch while watching the trust window: when it runs
// out first, the elector steps down and goes on waiting. It returns false
// when ctx ends.
func waitTrusting[T any](ctx context.Context, e *Elector, ch <-chan T) (T, bool) {
	for {
		var expired <-chan time.Time
		e.mu.Lock()
		if e.leader {
			expired = e.cfg.Clock.After(e.validUntil.Sub(e.cfg.Clock.Now()))
		}
		e.mu.Unlock()
		select {
		case v := <-ch:
			return v, true
		case <-ctx.Done():
			var zero T
			return zero, false
		case <-expired:
			e.demote("the seat was not renewed in time: its trust window ran out")
		}
	}
}

// settle acts on the outcome of an attempt sent at sent.
func (e *Elector) settle(ctx context.Context, sent time.Time, r electResult) {
	if r.err != nil {
		switch {
		case errors.Is(r.err, store.ErrUnsupported):
			e.cfg.Logger.Error("the store cannot elect a leader, so maintenance will not run; use a backend that supports election, or run a single node with Config.SingleNode", "error", r.err)
		case ctx.Err() == nil:
			e.cfg.Logger.Warn("leader election request failed; retrying", "seat", e.cfg.Seat, "id", e.cfg.ID, "error", r.err)
		}
		return
	}
	until := sent.Add(e.cfg.TTL - e.cfg.SafetyMargin)
	e.mu.Lock()
	leader, term := e.leader, e.term
	if r.l.Elected {
		e.held = true
	}
	e.mu.Unlock()
	switch {
	case !r.l.Elected:
		if leader {
			e.cfg.Logger.Warn("the seat was taken while this candidate still trusted it; check the clocks and SafetyMargin", "seat", e.cfg.Seat, "id", e.cfg.ID)
		}
		e.demote("another candidate holds the seat")
	case !until.After(e.cfg.Clock.Now()):
		e.demote("the election reply came too late to trust")
	case leader && r.l.Term == term:
		e.mu.Lock()
		e.validUntil = until
		e.mu.Unlock()
	default:
		e.demote("the seat changed hands")
		e.promote(r.l.Term, until)
	}
}

func (e *Elector) promote(term int64, until time.Time) {
	e.mu.Lock()
	e.leader, e.term, e.validUntil = true, term, until
	e.mu.Unlock()
	e.notify(LeaderChange{ID: e.cfg.ID, Leader: true, Term: term, Reason: "elected"})
}

// demote steps down if this candidate leads; the hooks (the Maintainer
// stopping its services) have run when it returns.
func (e *Elector) demote(reason string) {
	e.mu.Lock()
	was, term := e.leader, e.term
	e.leader = false
	e.mu.Unlock()
	if was {
		e.notify(LeaderChange{ID: e.cfg.ID, Leader: false, Term: term, Reason: reason})
	}
}

func (e *Elector) notify(c LeaderChange) {
	if c.Leader {
		e.cfg.Logger.Info("elected leader", "seat", e.cfg.Seat, "id", c.ID, "term", c.Term)
	} else {
		e.cfg.Logger.Info("stopped leading", "seat", e.cfg.Seat, "id", c.ID, "term", c.Term, "reason", c.Reason)
	}
	if e.changed != nil {
		e.changed(c)
	}
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(c)
	}
}

// finish steps down, waits for an attempt still in flight (it ends with
// ctx) so a late win cannot outlive the resignation, and resigns.
func (e *Elector) finish(ctx context.Context, pending chan electResult) {
	e.demote("stopping")
	if pending != nil {
		if r := <-pending; r.err == nil && r.l.Elected {
			e.mu.Lock()
			e.held = true
			e.mu.Unlock()
		}
	}
	e.mu.Lock()
	resign := e.held && !e.noResign
	e.mu.Unlock()
	if !resign {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	if err := e.store.LeaderResign(rctx, e.cfg.Seat, e.cfg.ID); err != nil {
		e.cfg.Logger.Warn("could not resign the leader seat; it frees up when it expires", "seat", e.cfg.Seat, "id", e.cfg.ID, "error", err)
	}
}
