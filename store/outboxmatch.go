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

// OutboxCandidate is an event of a transaction that webhooks may want: what
// the filters look at, and (from Body) the payload every matching webhook
// gets, built only when a driver needs it.
type OutboxCandidate struct {
	Aggregate   string
	AggregateID string
	EventType   string
	Queue       string // job events
	Kind        string // job events
	RunID       string
	At          time.Time

	data any // jobEventData or runEventData
}

// outboxBody is OutboxPayload with its data not yet encoded: the payload
// is encoded in one pass (as an OutboxPayload, the data was encoded, then
// scanned again to be copied in; every event of every transition pays it,
// in SQLite's single writer).
type outboxBody struct {
	Type        string    `json:"type"`
	Aggregate   string    `json:"aggregate"`
	AggregateID string    `json:"aggregate_id"`
	Timestamp   time.Time `json:"timestamp"`
	Data        any       `json:"data"`
}

// Body returns the JSON payload of the candidate's messages: an
// [OutboxPayload].
func (c OutboxCandidate) Body() (json.RawMessage, error) {
	return json.Marshal(outboxBody{Type: c.EventType, Aggregate: c.Aggregate, AggregateID: c.AggregateID, Timestamp: c.At, Data: c.data})
}

// Pass reports whether the candidate passes w's filters: the rule the
// drivers' OutboxMatch applies (in SQL on PostgreSQL).
func (c OutboxCandidate) Pass(w Webhook) bool {
	job := c.Aggregate == AggregateJob
	return pass(w.EventTypes, c.EventType) && (!job || pass(w.Queues, c.Queue)) && (!job || pass(w.Kinds, c.Kind)) && pass(w.Runs, c.RunID)
}

// matchOutbox hands the driver this transaction's events, in order, to be
// written to the outbox for each webhook they match, in this transaction: an
// outbox row exists if and only if its transition commits.
func (e *engine) matchOutbox(ctx context.Context, tx Tx, b *batch) error {
	rt, ok := tx.(RunTx)
	if !ok || (len(b.events) == 0 && len(b.runs.events) == 0) {
		return nil
	}
	if may, err := e.mayHaveWebhooks(ctx, rt); err != nil || !may {
		return err
	}
	var cs []OutboxCandidate
	for _, ev := range b.events {
		if slices.Contains(quiet, ev.Type) {
			continue
		}
		j, _ := b.latest(ev.JobID)
		cs = append(cs, OutboxCandidate{Aggregate: AggregateJob, AggregateID: ev.JobID, EventType: string(ev.Type),
			Queue: j.Queue, Kind: j.Kind, RunID: ev.RunID, At: ev.At, data: jobEventData{Event: ev, Queue: j.Queue, Kind: j.Kind}})
	}
	for _, ev := range b.runs.events {
		en, _ := b.runs.entry(ev.RunID)
		cs = append(cs, OutboxCandidate{Aggregate: AggregateRun, AggregateID: ev.RunID, EventType: string(ev.Type),
			RunID: ev.RunID, At: ev.At, data: runEventData{Event: ev, Run: en.run}})
	}
	b.runs.outboxMatch = cs
	return nil
}

// pass reports whether v passes filter: an empty filter passes everything.
func pass(filter []string, v string) bool { return len(filter) == 0 || slices.Contains(filter, v) }
