package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestOutboxBodyIsThePayload: the one-pass body is byte for byte the
// OutboxPayload of the data encoded apart, and reads back as one.
func TestOutboxBodyIsThePayload(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.UTC)
	ev := lifecycle.Event{JobID: "j1", Rev: 3, Type: lifecycle.EventSucceeded, At: at, Reason: `<a & "b">`}
	c := OutboxCandidate{Aggregate: AggregateJob, AggregateID: "j1", EventType: string(ev.Type), Queue: "q", Kind: "k", At: at,
		data: jobEventData{Event: ev, Queue: "q", Kind: "k"}}
	got, err := c.Body()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c.data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(OutboxPayload{Type: c.EventType, Aggregate: c.Aggregate, AggregateID: c.AggregateID, Timestamp: at, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	var p OutboxPayload
	if err := json.Unmarshal(got, &p); err != nil || p.AggregateID != "j1" || !p.Timestamp.Equal(at) {
		t.Fatalf("read back %+v, %v", p, err)
	}
}
