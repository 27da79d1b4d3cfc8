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
	b.consume(ctx, b.cfg.RequestStream, gate.open, b.ingestBatch)
}

// request is a decoded JobRequest and its message.
type request struct {
	msg  jetstream.Msg
	req  JobRequest
	spec lifecycle.Spec
}

// enqueueOne enqueues one request on its own.
func (b *Bridge) enqueueOne(ctx context.Context, r request) {
	res, err := b.st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{r.spec}, ActorID: actor, RequestID: r.req.JobID})
	switch {
	case errors.Is(err, lifecycle.ErrRequestConflict):
		b.refuse(ctx, r.msg, r.req, conflict(r.req.JobID, ""))
	case errors.Is(err, lifecycle.ErrValidation):
		b.refuse(ctx, r.msg, r.req, reject(CodeInvalid, "%s", err))
	case err != nil:
		b.log.Warn("bus enqueue failed; the request will be delivered again", "job_id", r.req.JobID, "err", err)
		_ = r.msg.NakWithDelay(time.Second)
	default:
		b.enqueued(ctx, r, res[0], false)
	}
}

// enqueued settles a request whose enqueue committed: a new job is
// counted, a request that found its job is a duplicate (or, with another
// body, a conflict, refused), and the message is acked.
func (b *Bridge) enqueued(ctx context.Context, r request, res store.EnqueueResult, again bool) {
	if res.Existing || again {
		if !sameSpec(res.Job, r.spec) {
			b.refuse(ctx, r.msg, r.req, conflict(r.req.JobID, res.Job.ID))
			return
		}
		b.m.duplicates.Inc()
	} else {
		b.m.enqueued.Inc()
		b.ev.put(res.Job.ID, eventInfo{jobID: r.req.JobID, topic: orText(res.Job.Topic, res.Job.Kind)})
		if res.Job.State == lifecycle.Denied {
			b.m.denied.Inc() // its denied event answers DENIED through the outbox
		}
	}
	if err := r.msg.Ack(); err != nil {
		b.log.Debug("bus ack failed; the redelivery will find the job", "job_id", r.req.JobID, "err", err)
	}
}

// maxEnqueue bounds the requests of one enqueue transaction.
const maxEnqueue = 1000

// ingestBatch makes a fetched batch of requests jobs in one enqueue
// transaction (per maxEnqueue), each request exactly once: every job_id is
// its job's request id, so each stays idempotent on its own, and each
// message is acked only after the transaction committed. Refused requests
// are answered one by one; copies of a job_id within the batch meet the job
// the first copy made; a batch the store refuses as a whole (a conflicting
// request id, an invalid spec) is retried one request at a time, so one bad
// request refuses only itself.
func (b *Bridge) ingestBatch(ctx context.Context, msgs []jetstream.Msg) {
	var firsts []request
	copies := map[string][]request{}
	for _, msg := range msgs {
		b.m.received.Inc()
		req, spec, rej := b.cfg.decodeRequest(msg.Subject(), msg.Data())
		if rej != nil {
			b.refuse(ctx, msg, req, rej)
			continue
		}
		r := request{msg, req, spec}
		if _, seen := copies[req.JobID]; seen {
			copies[req.JobID] = append(copies[req.JobID], r)
			continue
		}
		copies[req.JobID] = []request{}
		firsts = append(firsts, r)
	}
	for len(firsts) > 0 {
		chunk := firsts[:min(len(firsts), maxEnqueue)]
		firsts = firsts[len(chunk):]
		specs, ids := make([]lifecycle.Spec, len(chunk)), make([]string, len(chunk))
		for i, r := range chunk {
			specs[i], ids[i] = r.spec, r.req.JobID
		}
		if b.enqueueHook != nil {
			b.enqueueHook(ids)
		}
		res, err := b.st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs, ActorID: actor, RequestIDs: ids})
		switch {
		case errors.Is(err, lifecycle.ErrRequestConflict), errors.Is(err, lifecycle.ErrValidation):
			for _, r := range chunk {
				for _, c := range append([]request{r}, copies[r.req.JobID]...) {
					b.enqueueOne(ctx, c)
				}
			}
			continue
		case err != nil:
			b.log.Warn("bus enqueue failed; the requests will be delivered again", "requests", len(chunk), "err", err)
			for _, r := range chunk {
				for _, c := range append([]request{r}, copies[r.req.JobID]...) {
					_ = c.msg.NakWithDelay(time.Second)
				}
			}
			continue
		}
		for i, r := range chunk {
			b.enqueued(ctx, r, res[i], false)
			for _, c := range copies[r.req.JobID] {
				b.enqueued(ctx, c, res[i], true)
			}
		}
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
