package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// eventsHost is the host of the bridge's outbox webhooks. No request to it
// leaves the process: [Bridge.Transport] answers it by publishing on the bus.
const eventsHost = "stint-bus.invalid"

// stateEvents are the job events that change a job's state (heartbeats and
// checkpoints do not, and the outbox never carries them).
var stateEvents = []lifecycle.EventType{lifecycle.EventEnqueued, lifecycle.EventDenied, lifecycle.EventPromoted,
	lifecycle.EventUnblocked, lifecycle.EventClaimed, lifecycle.EventStarted, lifecycle.EventSucceeded,
	lifecycle.EventFailed, lifecycle.EventRetryScheduled, lifecycle.EventStalled, lifecycle.EventRequeued,
	lifecycle.EventDeadLettered, lifecycle.EventCancelRequested, lifecycle.EventCancelled, lifecycle.EventTimedOut,
	lifecycle.EventHalted}

// WebhookURL is the outbox subscription of the bridge named name.
func WebhookURL(name string) string { return "http://" + eventsHost + "/" + url.PathEscape(name) }

// subscribe adds the bridge's outbox subscription when it is missing: every
// state change of a job of the bridged queue, from the next commit on.
func (b *Bridge) subscribe(ctx context.Context) error {
	hooks, err := b.st.WebhookList(ctx)
	if err != nil {
		return err
	}
	want := WebhookURL(b.cfg.Name)
	for _, h := range hooks {
		if h.URL == want {
			return nil
		}
	}
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	types := make([]string, len(stateEvents))
	for i, t := range stateEvents {
		types[i] = string(t)
	}
	_, err = b.st.WebhookAdd(ctx, store.Webhook{URL: want, Secret: hex.EncodeToString(secret), EventTypes: types, Queues: []string{b.cfg.Queue}})
	if err == nil {
		b.log.Info("bus outbox subscription added", "url", want, "queue", b.cfg.Queue)
	}
	return err
}

// Transport returns an http.RoundTripper for the outbox deliverer's client:
// deliveries to the bridge's webhook are published on the bus (the answer
// is 200 once JetStream has stored the event, 503 while the bus is away,
// so the outbox retries in order); every other request goes to next
// (http.DefaultTransport when nil).
func (b *Bridge) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{b: b, next: next}
}

type transport struct {
	b    *Bridge
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != eventsHost {
		return t.next.RoundTrip(req)
	}
	code, text := http.StatusOK, "published"
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	switch {
	case err != nil:
		code, text = http.StatusBadRequest, err.Error()
	case strings.TrimPrefix(req.URL.Path, "/") != t.b.cfg.Name:
		code, text = http.StatusServiceUnavailable, "no bus bridge named "+req.URL.Path+" runs in this process"
	default:
		if err := t.b.publishEvent(req.Context(), body); err != nil {
			code, text = http.StatusServiceUnavailable, err.Error()
		}
	}
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(text)),
		ContentLength: int64(len(text)), Request: req}, nil
}

// jobEventData is the data of a job's outbox payload.
type jobEventData struct {
	Event lifecycle.Event `json:"event"`
	Queue string          `json:"queue"`
	Kind  string          `json:"kind"`
}

// publishEvent publishes one outbox message as a JobResult on EventPrefix +
// topic, with Nats-Msg-Id = job id + revision so JetStream drops a repeat.
func (b *Bridge) publishEvent(ctx context.Context, body []byte) error {
	ev, err := b.eventMsg(ctx, body)
	if err != nil || ev.msg == nil {
		return err
	}
	if !b.connected() {
		return errAway
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.js.PublishMsg(ctx, ev.msg, jetstream.WithMsgID(ev.id)); err != nil {
		return fmt.Errorf("bus: publish event: %w", err)
	}
	b.eventPublished(ev)
	return nil
}

// errUnreadable is an outbox payload the bridge cannot read: retrying will
// not help.
var errUnreadable = errors.New("bus: unreadable outbox payload")

// outEvent is one event ready to publish; msg is nil for an outbox payload
// that is not the bus's (a run event).
type outEvent struct {
	msg *nats.Msg
	id  string // Nats-Msg-Id: job id:revision
	ev  lifecycle.Event
}

// eventMsg reads one outbox payload into the message that publishes it.
func (b *Bridge) eventMsg(ctx context.Context, body []byte) (outEvent, error) {
	var p store.OutboxPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return outEvent{}, fmt.Errorf("%w: %v", errUnreadable, err)
	}
	if p.Aggregate != store.AggregateJob {
		return outEvent{}, nil // run events are not the bus's
	}
	var d jobEventData
	if err := json.Unmarshal(p.Data, &d); err != nil {
		return outEvent{}, fmt.Errorf("%w: the job event: %v", errUnreadable, err)
	}
	res, err := b.eventResult(ctx, d.Event, d.Kind)
	if err != nil {
		return outEvent{}, err
	}
	m := nats.NewMsg(b.cfg.EventPrefix + res.Topic)
	m.Data, _ = json.Marshal(res)
	return outEvent{msg: m, id: fmt.Sprintf("%s:%d", d.Event.JobID, d.Event.Rev), ev: d.Event}, nil
}

// eventPublished counts a published event and forgets a finished job.
func (b *Bridge) eventPublished(e outEvent) {
	b.m.published.Inc()
	b.m.lag.Observe(b.cfg.Clock.Now().Sub(e.ev.At).Seconds())
	if e.ev.ToState.Terminal() {
		b.ev.forget(e.ev.JobID)
	}
}

// eventResult is the JobResult of one event: the job's topic and job_id
// (read once per job and kept), and for a terminal job its outcome.
func (b *Bridge) eventResult(ctx context.Context, ev lifecycle.Event, kind string) (JobResult, error) {
	at := ev.At
	r := JobResult{Status: StatusOf(ev.ToState), State: ev.ToState, Event: ev.Type, Revision: ev.Rev,
		StintJobID: ev.JobID, Attempt: ev.Attempt, LeaseID: ev.LeaseID, At: &at}
	if ev.Actor == lifecycle.ActorOwner {
		r.WorkerID = ev.ActorID
	}
	if e := eventError(ev); e != nil {
		r.ErrorCode, r.ErrorMessage = e.Code, e.Message
	} else if ev.ToState == lifecycle.Denied || ev.ToState == lifecycle.Cancelled || ev.ToState == lifecycle.Halted {
		r.ErrorCode, r.ErrorMessage = string(ev.ToState), ev.Reason
	}
	info, ok := b.ev.get(ev.JobID)
	if !ok || ev.ToState.Terminal() {
		j, err := b.eventJob(ctx, ev, info)
		switch {
		case errors.Is(err, lifecycle.ErrNotFound): // retention removed it: the event says enough
			r.JobID, r.Topic = orText(ev.CorrelationID, ev.JobID), kind
			return r, nil
		case err != nil:
			return r, fmt.Errorf("bus: read job %s for its event: %w", ev.JobID, err)
		}
		info = eventInfo{jobID: j.CorrelationID, topic: orText(j.Topic, j.Kind)}
		if !ev.ToState.Terminal() {
			b.ev.put(ev.JobID, info)
		} else if j.State == ev.ToState && j.Rev == ev.Rev {
			r.Result, r.ResultPtr, r.ExecutionMS = j.Result, j.ResultPtr, j.ExecutionMS
			r.Status = terminalStatus(j)
			if r.ErrorCode == "" && j.ReasonCode != "" {
				r.ErrorCode, r.ErrorMessage = j.ReasonCode, j.Reason
			}
		}
	}
	r.JobID, r.Topic = orText(info.jobID, ev.JobID), info.topic
	return r, nil
}

// eventJob is the job an event needs read: the record the bridge kept when
// it applied the result that ended the job, if the event is that change
// (same revision), else the row.
func (b *Bridge) eventJob(ctx context.Context, ev lifecycle.Event, info eventInfo) (lifecycle.Job, error) {
	if j := info.last; j != nil && j.ID == ev.JobID && j.Rev == ev.Rev && j.State == ev.ToState {
		return *j, nil
	}
	return b.st.JobGet(ctx, ev.JobID)
}

// terminalStatus is a terminal job's seed-bus status: as StatusOf, except
// that a job dead-lettered because its leases ran out (a dispatched job no
// worker answered in time) is TIMEOUT, as seed-bus's reconciler marks it.
func terminalStatus(j lifecycle.Job) Status {
	if j.State == lifecycle.DeadLettered && (j.ReasonCode == lifecycle.ReasonLeaseExpired || j.ReasonCode == "timeout") {
		return StatusTimeout
	}
	return StatusOf(j.State)
}

// eventError reads the error a failure's event records.
func eventError(ev lifecycle.Event) *lifecycle.JobError {
	if len(ev.Details) == 0 {
		return nil
	}
	var d struct {
		Error *lifecycle.JobError `json:"error"`
	}
	if json.Unmarshal(ev.Details, &d) != nil {
		return nil
	}
	return d.Error
}

// eventCache keeps the topic and job_id of the jobs whose events are being
// published, so that only a job's first and last events read the job; and
// a slim record of a job a bus worker's result ended (what its last event
// needs, the result at most maxHeldBytes), so that this event need not read
// it either. At most maxFinal such records are kept: while events wait
// (the bus away), the others are read when their turn comes.
type eventCache struct {
	mu     sync.Mutex
	jobs   map[string]eventInfo
	finals int // entries with a record
}

type eventInfo struct {
	jobID, topic string
	last         *lifecycle.Job // the job as a result ended it, or nil
}

// maxCached bounds the cache; past it the cache starts again.
const maxCached = 100_000

// maxFinal bounds the records kept for last events.
const maxFinal = 4096

func newEventCache() *eventCache { return &eventCache{jobs: map[string]eventInfo{}} }

func (c *eventCache) get(id string) (eventInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.jobs[id]
	return i, ok
}

func (c *eventCache) put(id string, i eventInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(id, i)
}

// final keeps a slim record of j, ended by a result, for its last event.
func (c *eventCache) final(j lifecycle.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := eventInfo{jobID: j.CorrelationID, topic: orText(j.Topic, j.Kind)}
	if c.finals < maxFinal && len(j.Result) <= maxHeldBytes {
		i.last = &lifecycle.Job{ID: j.ID, CorrelationID: j.CorrelationID, Topic: j.Topic, Kind: j.Kind, State: j.State, Rev: j.Rev,
			Result: j.Result, ResultPtr: j.ResultPtr, ExecutionMS: j.ExecutionMS, ReasonCode: j.ReasonCode, Reason: j.Reason}
	}
	c.set(j.ID, i)
}

// set stores i under id, keeping the count of records; c.mu is held.
func (c *eventCache) set(id string, i eventInfo) {
	if len(c.jobs) >= maxCached {
		clear(c.jobs)
		c.finals = 0
	}
	if old, ok := c.jobs[id]; ok && old.last != nil {
		c.finals--
	}
	if i.last != nil {
		c.finals++
	}
	c.jobs[id] = i
}

func (c *eventCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.jobs[id]; ok && old.last != nil {
		c.finals--
	}
	delete(c.jobs, id)
}
