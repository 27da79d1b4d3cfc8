package store

import (
	"context"
	"time"
)

// PartitionEnsurer is implemented by drivers whose history lives in
// time-partitioned tables (PostgreSQL): EnsurePartitions makes the
// partitions of the period holding now and of the next few where they are
// missing. A zero now means the database's clock.
type PartitionEnsurer interface {
	EnsurePartitions(ctx context.Context, now time.Time) error
}

// EnsurePartitions makes the coming history partitions of s's database, if
// its driver partitions history (see PartitionEnsurer), and does nothing
// otherwise. A nil now means the database's clock. The maintenance
// retention service calls it on every pass, whether retention is on or off.
func EnsurePartitions(ctx context.Context, s Store, now *time.Time) error {
	e, ok := s.(*engine)
	if !ok {
		return nil
	}
	pe, ok := e.d.(PartitionEnsurer)
	if !ok {
		return nil
	}
	var t time.Time
	if now != nil {
		t = *now
	}
	return pe.EnsurePartitions(ctx, t)
}

// HistoryPartitioned reports whether s keeps its history (job and run
// events, outbox messages) in time-partitioned tables, which retention drops
// whole: such rows past the cutoff stay until their whole partition can go.
func HistoryPartitioned(s Store) bool { return !PrunesHeartbeats(s) }
