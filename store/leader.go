package store

import (
	"context"
	"errors"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// LeaderTx is implemented by a driver's Tx that supports leader election:
// one row per name in a leaders table.
type LeaderTx interface {
	// LeaderAttemptElect makes id the leader of name until expiresAt when the
	// seat is free, expired at now, or already id's; it returns the term and
	// whether id holds the seat. The term rises each time the seat changes hands.
	LeaderAttemptElect(ctx context.Context, name, id string, now, expiresAt time.Time) (term int64, ok bool, err error)
	// LeaderResign frees name's seat if id holds it.
	LeaderResign(ctx context.Context, name, id string) error
}

// LeaderElectParams ask for (or renew) a leader seat.
type LeaderElectParams struct {
	Name string        // the seat, for example "maintenance"
	ID   string        // the candidate
	TTL  time.Duration // how long the seat is held without renewal
	Now  *time.Time
}

// Leadership is the outcome of an election attempt.
type Leadership struct {
	Elected bool
	Term    int64
	// ExpiresAt is when the seat frees up by the store's clock unless renewed.
	ExpiresAt time.Time
}

// ErrUnsupported is returned by an optional operation the backend lacks.
var ErrUnsupported = errors.New("not supported by this backend")

func (e *engine) LeaderElect(ctx context.Context, p *LeaderElectParams) (Leadership, error) {
	if p.Name == "" || p.ID == "" || p.TTL <= 0 {
		return Leadership{}, lifecycle.Validationf("leader election needs a name, a candidate id and a positive TTL")
	}
	var out Leadership
	err := e.d.InTx(ctx, func(tx Tx) error {
		lt, ok := tx.(LeaderTx)
		if !ok {
			return ErrUnsupported
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		exp := t.Add(p.TTL).Truncate(time.Microsecond)
		term, won, err := lt.LeaderAttemptElect(ctx, p.Name, p.ID, t, exp)
		if err != nil {
			return err
		}
		out = Leadership{Elected: won, Term: term}
		if won {
			out.ExpiresAt = exp
		}
		return nil
	})
	return out, err
}

func (e *engine) LeaderResign(ctx context.Context, name, id string) error {
	return e.d.InTx(ctx, func(tx Tx) error {
		lt, ok := tx.(LeaderTx)
		if !ok {
			return ErrUnsupported
		}
		return lt.LeaderResign(ctx, name, id)
	})
}
