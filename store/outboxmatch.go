package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// OutboxPayload is the JSON body delivered for one event.
type OutboxPayload struct {
	Type        string    `json:"type"`
	Aggregate   string    `json:"aggregate"`
	AggregateID string    `json:"aggregate_id"`
	Timestamp   time.Time `json:"timestamp"`
	// Data is the job event (with the job's state) or the run event with
	// the run.
	Data json.RawMessage `json:"data"`
}

type jobEventData struct {
	Event lifecycle.Event `json:"event"`
	Queue string          `json:"queue"`
	Kind  string          `json:"kind"`
}

type runEventData struct {
	Event lifecycle.RunEvent `json:"event"`
	Run   lifecycle.Run      `json:"run"`
}

// quiet event types never go to the outbox: they carry no outcome and would
// drown the receivers.
var quiet = []lifecycle.EventType{lifecycle.EventHeartbeat, lifecycle.EventCheckpointed}

// matchOutbox writes one outbox message per (event, matching webhook) of this
// transaction: an outbox row exists if and only if its transition commits.
func (e *engine) matchOutbox(ctx context.Context, tx Tx, b *batch) error {
	rt, ok := tx.(RunTx)
	if !ok || (len(b.events) == 0 && len(b.runs.events) == 0) {
		return nil
	}
	hooks, err := rt.WebhookList(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	for _, ev := range b.events {
		if slices.Contains(quiet, ev.Type) {
			continue
		}
		j, _ := b.latest(ev.JobID)
		data, err := json.Marshal(jobEventData{Event: ev, Queue: j.Queue, Kind: j.Kind})
		if err != nil {
			return err
		}
		for _, w := range hooks {
			if pass(w.EventTypes, string(ev.Type)) && pass(w.Queues, j.Queue) && pass(w.Kinds, j.Kind) && pass(w.Runs, ev.RunID) {
				if err := b.runs.message(w, AggregateJob, ev.JobID, string(ev.Type), ev.At, data); err != nil {
					return err
				}
			}
		}
	}
	for _, ev := range b.runs.events {
		en, _ := b.runs.entry(ev.RunID)
		data, err := json.Marshal(runEventData{Event: ev, Run: en.run})
		if err != nil {
			return err
		}
		for _, w := range hooks {
			if pass(w.EventTypes, string(ev.Type)) && pass(w.Runs, ev.RunID) {
				if err := b.runs.message(w, AggregateRun, ev.RunID, string(ev.Type), ev.At, data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pass reports whether v passes filter: an empty filter passes everything.
func pass(filter []string, v string) bool { return len(filter) == 0 || slices.Contains(filter, v) }

func (rb *runBatch) message(w Webhook, agg, id, typ string, at time.Time, data json.RawMessage) error {
	body, err := json.Marshal(OutboxPayload{Type: typ, Aggregate: agg, AggregateID: id, Timestamp: at, Data: data})
	if err != nil {
		return err
	}
	rb.outbox = append(rb.outbox, OutboxMessage{WebhookID: w.ID, Aggregate: agg, AggregateID: id, EventType: typ,
		Payload: body, State: OutboxPending, NextAttemptAt: at, CreatedAt: at})
	return nil
}
