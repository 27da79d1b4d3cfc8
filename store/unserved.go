package store

import (
	"context"
	"fmt"
)

// UnservedLister is implemented by every Store [New] returns whose driver
// keeps queue controls: it finds the jobs that wait for a kind no live
// worker handles (DESIGN §7: such a job is not discarded; it waits, and is
// reported). Find it with [As].
type UnservedLister interface {
	// UnservedKinds counts the queued jobs of each (queue, kind) that no
	// worker seen claiming within WorkerTTL handles, by queue then kind.
	UnservedKinds(ctx context.Context) ([]KindCount, error)
}

var _ UnservedLister = (*engine)(nil)

func (e *engine) UnservedKinds(ctx context.Context) ([]KindCount, error) {
	var out []KindCount
	err := e.d.Read(ctx, func(tx Tx) error {
		qt, ok := tx.(QueueTx)
		if !ok {
			return fmt.Errorf("unserved kinds: %w", ErrUnsupported)
		}
		t, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		kinds, err := qt.QueuedKinds(ctx)
		if err != nil {
			return err
		}
		workers, err := qt.WorkerList(ctx, t.Add(-WorkerTTL))
		if err != nil {
			return err
		}
		out = unserved(kinds, workers)
		return nil
	})
	return out, err
}

// unserved keeps the counts of kinds that none of workers handles.
func unserved(kinds []KindCount, workers []Worker) []KindCount {
	var out []KindCount
	for _, k := range kinds {
		if !served(workers, k.Queue, k.Kind) {
			out = append(out, k)
		}
	}
	return out
}
