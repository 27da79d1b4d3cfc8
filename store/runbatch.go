package store

import (
	"context"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// runBatch collects a transaction's writes to runs and the outbox, flushed
// after the jobs and their events.
type runBatch struct {
	entries map[string]*runEntry
	order   []string
	jobs    []RunJob
	events  []lifecycle.RunEvent
	outbox  []OutboxMessage
	// outboxMatch are the events to match against the webhooks at flush.
	outboxMatch []OutboxCandidate
	// touched are runs to settle even without a job event (a cancel).
	touched []string
	// seen counts the job events already settled.
	seen int
	// at is the transaction's time when a run operation resolved it.
	at time.Time
}

// runEntry is a run read (and locked) or created in this transaction.
type runEntry struct {
	run     lifecycle.Run
	prevRev int64 // 0: a new run
}

func (rb *runBatch) entry(id string) (*runEntry, bool) {
	en, ok := rb.entries[id]
	return en, ok
}

func (rb *runBatch) put(en *runEntry) {
	if rb.entries == nil {
		rb.entries = map[string]*runEntry{}
	}
	if _, ok := rb.entries[en.run.ID]; !ok {
		rb.order = append(rb.order, en.run.ID)
	}
	rb.entries[en.run.ID] = en
}

// step records an accepted run step.
func (rb *runBatch) step(en *runEntry, s lifecycle.RunStep) {
	if s.Event == nil {
		return
	}
	en.run = s.Run
	rb.events = append(rb.events, *s.Event)
}

// lockRun returns the run from this transaction, or reads and locks it.
func lockRun(ctx context.Context, rt RunTx, b *batch, id string) (*runEntry, error) {
	if en, ok := b.runs.entry(id); ok {
		return en, nil
	}
	r, ok, err := rt.RunGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, runNotFound(id)
	}
	en := &runEntry{run: r, prevRev: r.Rev}
	b.runs.put(en)
	return en, nil
}

// flush writes the runs, their jobs and events, and the outbox.
func (rb *runBatch) flush(ctx context.Context, tx Tx) error {
	if len(rb.order) == 0 && len(rb.outbox) == 0 && len(rb.outboxMatch) == 0 {
		return nil
	}
	rt, ok := tx.(RunTx)
	if !ok {
		return errNoRuns
	}
	for _, id := range rb.order {
		en := rb.entries[id]
		switch {
		case en.prevRev == 0:
			if err := rt.RunInsert(ctx, en.run); err != nil {
				return err
			}
		case en.run.Rev != en.prevRev:
			if err := rt.RunUpdate(ctx, en.run, en.prevRev); err != nil {
				return err
			}
		}
	}
	if len(rb.jobs) > 0 {
		if err := rt.RunJobInsert(ctx, rb.jobs); err != nil {
			return err
		}
	}
	if len(rb.events) > 0 {
		if err := rt.RunEventInsert(ctx, rb.events); err != nil {
			return err
		}
	}
	if len(rb.outbox) > 0 {
		if err := rt.OutboxInsert(ctx, rb.outbox); err != nil {
			return err
		}
	}
	if len(rb.outboxMatch) > 0 {
		return rt.OutboxMatch(ctx, rb.outboxMatch)
	}
	return nil
}

// latest returns the job as this transaction last wrote it, if it did.
func (b *batch) latest(id string) (lifecycle.Job, bool) {
	for i := len(b.updates) - 1; i >= 0; i-- {
		if b.updates[i].Job.ID == id {
			return b.updates[i].Job, true
		}
	}
	for i := len(b.written) - 1; i >= 0; i-- {
		if b.written[i].ID == id {
			return b.written[i], true
		}
	}
	for i := len(b.inserts) - 1; i >= 0; i-- {
		if b.inserts[i].ID == id {
			return b.inserts[i], true
		}
	}
	return lifecycle.Job{}, false
}

// jobNow returns the job as this transaction sees it: its own write, or the
// row (locked).
func jobNow(ctx context.Context, tx Tx, b *batch, id string) (lifecycle.Job, bool, error) {
	if j, ok := b.latest(id); ok {
		return j, true, nil
	}
	js, err := tx.JobGet(ctx, []string{id})
	if err != nil || len(js) == 0 {
		return lifecycle.Job{}, false, err
	}
	return js[0], true, nil
}
