package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// actor is the producer name of bridged enqueues. It is the same for every
// bridge, so that the request id (the job_id) finds the same job whichever
// bridge takes a redelivery.
const actor = "bus"

// intake turns JobRequests into jobs until ctx ends.
func (b *Bridge) intake(ctx context.Context) {
	gate := &intakeGate{b: b}
	b.consume(ctx, b.cfg.RequestStream, gate.open, requestKey, b.ingest)
}

// requestKey puts a batch's requests of one job_id in one lane, in order,
// so a duplicate meets the job its first copy made.
func requestKey(m jetstream.Msg) string {
	var r struct {
		JobID string `json:"job_id"`
	}
	_ = json.Unmarshal(m.Data(), &r)
	return r.JobID
}

// ingest makes one request a job, exactly once: the enqueue's request id is
// the job_id, so a redelivery or a duplicate publish finds the job the
// first one made and writes nothing. The message is acked only after the
// enqueue committed; a refused one is answered and terminated.
func (b *Bridge) ingest(ctx context.Context, msg jetstream.Msg) {
	b.m.received.Inc()
	req, spec, rej := b.cfg.decodeRequest(msg.Subject(), msg.Data())
	if rej != nil {
		b.refuse(ctx, msg, req, rej)
		return
	}
	res, err := b.st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: actor, RequestID: req.JobID})
	switch {
	case errors.Is(err, lifecycle.ErrRequestConflict):
		b.refuse(ctx, msg, req, conflict(req.JobID, ""))
		return
	case errors.Is(err, lifecycle.ErrValidation):
		b.refuse(ctx, msg, req, reject(CodeInvalid, "%s", err))
		return
	case err != nil:
		b.log.Warn("bus enqueue failed; the request will be delivered again", "job_id", req.JobID, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	r := res[0]
	if r.Existing {
		if !sameSpec(r.Job, spec) {
			b.refuse(ctx, msg, req, conflict(req.JobID, r.Job.ID))
			return
		}
		b.m.duplicates.Inc()
	} else {
		b.m.enqueued.Inc()
		if r.Job.State == lifecycle.Denied {
			b.m.denied.Inc() // its denied event answers DENIED through the outbox
		}
	}
	if err := msg.Ack(); err != nil {
		b.log.Debug("bus ack failed; the redelivery will find the job", "job_id", req.JobID, "err", err)
	}
}

// sameSpec reports whether job is what spec would have made: the same
// job_id with another body is a conflict, not a duplicate.
func sameSpec(job lifecycle.Job, spec lifecycle.Spec) bool {
	s, err := lifecycle.New(job.ID, spec, actor, "", job.CreatedAt)
	if err != nil {
		return false
	}
	return lifecycle.SpecDigest(s.Job) == lifecycle.SpecDigest(job)
}

func conflict(jobID, stintID string) *Rejection {
	first := "the first job"
	if stintID != "" {
		first = "the first job (" + stintID + ")"
	}
	return reject(CodeConflict, "job_id %q was already requested with a different body; %s is unchanged; publish a new request under a new job_id", jobID, first)
}

// refuse answers a refused request with an error result on RejectPrefix +
// topic, then terminates the message so it is never delivered again. When
// the answer cannot be published the message is left for redelivery.
func (b *Bridge) refuse(ctx context.Context, msg jetstream.Msg, req JobRequest, rej *Rejection) {
	topic := b.cfg.topicOf(msg.Subject())
	res := JobResult{JobID: req.JobID, Topic: topic, Status: StatusFailed, ErrorCode: rej.Code, ErrorMessage: rej.Message}
	data, _ := json.Marshal(res)
	out := nats.NewMsg(b.cfg.RejectPrefix + topic)
	out.Data = data
	id := "rejected:" + msg.Subject()
	if md, err := msg.Metadata(); err == nil {
		id = fmt.Sprintf("rejected:%s:%d", md.Stream, md.Sequence.Stream)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.js.PublishMsg(pctx, out, jetstream.WithMsgID(id)); err != nil {
		b.log.Warn("bus could not publish a refusal; the request will be delivered again", "job_id", req.JobID, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	b.m.rejected.WithLabelValues(rej.Code).Inc()
	b.log.Info("bus request refused", "subject", msg.Subject(), "job_id", req.JobID, "code", rej.Code, "reason", rej.Message)
	_ = msg.Term()
}

// intakeGate is the intake's backpressure: closed while the bridged queue
// is paused or holds MaxQueued waiting jobs. It reads the store at most
// once a second.
type intakeGate struct {
	b      *Bridge
	mu     sync.Mutex
	at     time.Time
	isOpen bool
}

func (g *intakeGate) open(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.b.cfg.Clock.Now()
	if !g.at.IsZero() && now.Sub(g.at) < time.Second {
		return g.isOpen
	}
	g.at, g.isOpen = now, g.check(ctx)
	return g.isOpen
}

func (g *intakeGate) check(ctx context.Context) bool {
	qs, err := store.Queues(g.b.st)
	if err != nil {
		return true // a store without queue controls has nothing to pause
	}
	settings, err := qs.QueueSettingsList(ctx)
	if err != nil {
		return true // the enqueue itself will say what is wrong
	}
	for _, s := range settings {
		if s.Name == g.b.cfg.Queue && s.Paused {
			return false
		}
	}
	if g.b.cfg.MaxQueued <= 0 {
		return true
	}
	infos, err := qs.QueueInfo(ctx)
	if err != nil {
		return true
	}
	for _, q := range infos {
		if q.Name == g.b.cfg.Queue {
			return q.Jobs[lifecycle.Queued]+q.Jobs[lifecycle.Scheduled]+q.Jobs[lifecycle.Retrying] < g.b.cfg.MaxQueued
		}
	}
	return true
}
