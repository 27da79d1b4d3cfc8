package store

import (
	"context"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// RetainTx is implemented by a driver's Tx that supports retention.
type RetainTx interface {
	// JobDeleteFinished deletes up to limit terminal jobs finished before
	// before, with their events and provenance, and returns how many jobs
	// and events it removed.
	JobDeleteFinished(ctx context.Context, before time.Time, limit int) (jobs, events int, err error)
	// EventPruneHeartbeats deletes up to limit heartbeat events older than before.
	EventPruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error)
}

// OutboxRetainTx is implemented by a driver's Tx whose retention also deletes
// finished outbox messages.
type OutboxRetainTx interface {
	// OutboxDeleteFinished deletes up to limit delivered or dead messages
	// that ended before before, and returns how many it removed. Pending
	// messages are never deleted.
	OutboxDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error)
	// RunDeleteFinished deletes up to limit finished runs that ended before
	// before and whose jobs are all gone (and nothing about them is still to
	// deliver), with their run_jobs and run_events rows; it returns how many
	// runs it removed. A live run is never deleted.
	RunDeleteFinished(ctx context.Context, before time.Time, limit int) (int, error)
}

// HistoryPartitioner is implemented by drivers whose history lives in
// time-partitioned tables (PostgreSQL): their retention drops whole
// partitions and never deletes events row by row, so old heartbeat events
// stay until their partition goes.
type HistoryPartitioner interface {
	PartitionedHistory() bool
}

// PrunesHeartbeats reports whether s deletes the old heartbeat events of live
// jobs on retention (RetainParams.HeartbeatsBefore). A store with partitioned
// history keeps them until their whole partition is dropped.
func PrunesHeartbeats(s Store) bool {
	e, ok := s.(*engine)
	if !ok {
		return true
	}
	hp, ok := e.d.(HistoryPartitioner)
	return !ok || !hp.PartitionedHistory()
}

// RetainParams bound one retention pass.
type RetainParams struct {
	// FinishedBefore: terminal jobs finished before it are deleted with their
	// events, and so are outbox messages delivered or dead-lettered before
	// it. Zero deletes none.
	FinishedBefore time.Time
	// HeartbeatsBefore: heartbeat events older than it are deleted, where the
	// store deletes history by rows (see PrunesHeartbeats). Zero deletes none.
	HeartbeatsBefore time.Time
	// Limit is the most rows of each kind deleted in one call. Defaults to 1000.
	Limit int
}

// RetainResult counts what a retention pass removed.
type RetainResult struct {
	Jobs       int `json:"jobs"`
	Events     int `json:"events"`
	Heartbeats int `json:"heartbeats"`
	Outbox     int `json:"outbox"`
	Runs       int `json:"runs"`
}

func (e *engine) JobRetain(ctx context.Context, p *RetainParams) (RetainResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultMaintainLimit
	}
	if limit > MaxBatch {
		return RetainResult{}, lifecycle.Validationf("retention limit %d: at most %d", limit, MaxBatch)
	}
	var out RetainResult
	err := e.d.InTx(ctx, func(tx Tx) error {
		out = RetainResult{}
		rt, ok := tx.(RetainTx)
		if !ok {
			return ErrUnsupported
		}
		var err error
		if !p.FinishedBefore.IsZero() {
			if out.Jobs, out.Events, err = rt.JobDeleteFinished(ctx, p.FinishedBefore.UTC(), limit); err != nil {
				return err
			}
			if ot, ok := tx.(OutboxRetainTx); ok {
				if out.Outbox, err = ot.OutboxDeleteFinished(ctx, p.FinishedBefore.UTC(), limit); err != nil {
					return err
				}
				if out.Runs, err = ot.RunDeleteFinished(ctx, p.FinishedBefore.UTC(), limit); err != nil {
					return err
				}
			}
		}
		if !p.HeartbeatsBefore.IsZero() {
			out.Heartbeats, err = rt.EventPruneHeartbeats(ctx, p.HeartbeatsBefore.UTC(), limit)
		}
		return err
	})
	return out, err
}
