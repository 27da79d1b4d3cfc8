package store

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// WebhookAdd validates and adds a subscription.
func (e *engine) WebhookAdd(ctx context.Context, w Webhook) (Webhook, error) {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Webhook{}, lifecycle.Validationf("webhook url %q: give an absolute http:// or https:// URL", w.URL)
	}
	if len(w.Secret) < 16 {
		return Webhook{}, lifecycle.Validationf("webhook secret is %d bytes: use at least 16 random bytes (receivers check signatures with it)", len(w.Secret))
	}
	fields := []string{"url", w.URL, "secret", w.Secret}
	for _, f := range [][]string{w.EventTypes, w.Queues, w.Kinds, w.Runs} {
		for _, v := range f {
			fields = append(fields, "filter", v)
		}
	}
	if err := lifecycle.CheckTexts(fields...); err != nil {
		return Webhook{}, err
	}
	if w.ID == "" {
		w.ID = e.newID()
	}
	err = e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		t, err := now(ctx, tx, nil)
		if err != nil {
			return err
		}
		w.CreatedAt = t
		return rt.WebhookInsert(ctx, w)
	})
	if err == nil {
		e.hooksChanged()
	}
	return w, err
}

// WebhookList returns every subscription.
func (e *engine) WebhookList(ctx context.Context) ([]Webhook, error) {
	var out []Webhook
	err := e.d.Read(ctx, func(tx Tx) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		var err error
		out, err = rt.WebhookList(ctx)
		return err
	})
	return out, err
}

// WebhookRemove deletes a subscription; its pending messages stay (they can
// no longer be delivered and are dead-lettered when claimed).
func (e *engine) WebhookRemove(ctx context.Context, id string) error {
	return e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		found, err := rt.WebhookDelete(ctx, id)
		e.hooksChanged()
		if err == nil && !found {
			return &lifecycle.Error{Kind: ErrNotFound, Msg: "webhook " + id + ": no webhook has this id; list them with `stint webhooks ls`"}
		}
		return err
	})
}

// OutboxClaim leases the heads of the outbox: each claim adds an attempt and
// moves next_attempt_at past the lease, so nobody else takes the message
// (nor a later one of its aggregate) until the lease ends.
func (e *engine) OutboxClaim(ctx context.Context, p *OutboxClaimParams) ([]OutboxDelivery, error) {
	if p.Limit <= 0 || p.Lease <= 0 {
		return nil, lifecycle.Validationf("an outbox claim needs a positive limit and lease")
	}
	var out []OutboxDelivery
	err := e.write(ctx, func(tx Tx, b *batch) error {
		out = out[:0]
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		ms, err := outboxHeads(ctx, rt, t, p)
		if err != nil || len(ms) == 0 {
			return err
		}
		hooks, err := rt.WebhookList(ctx)
		if err != nil {
			return err
		}
		byID := map[string]Webhook{}
		for _, w := range hooks {
			byID[w.ID] = w
		}
		until := t.Add(p.Lease)
		for i := range ms {
			ms[i].Attempts++
			ms[i].NextAttemptAt = until
			w, ok := byID[ms[i].WebhookID]
			if !ok {
				ms[i].State, ms[i].LastError = OutboxDead, "the webhook was removed"
				continue
			}
			out = append(out, OutboxDelivery{Message: ms[i], Webhook: w})
		}
		if lt, ok := tx.(OutboxLeaseTx); ok && len(out) == len(ms) {
			return lt.OutboxLease(ctx, ms, until) // one statement for the lot
		}
		return rt.OutboxUpdate(ctx, ms)
	})
	return out, err
}

// OutboxDelivered records a delivery; a run's final status delivered sets
// its reported_at (seed-ci REPORTED) in the same transaction.
func (e *engine) OutboxDelivered(ctx context.Context, p *OutboxReportParams) error {
	return e.outboxReport(ctx, p, e.delivered)
}

// delivered marks m delivered at t; a run's final status delivered sets its
// reported_at (seed-ci REPORTED) in the same transaction.
func (e *engine) delivered(ctx context.Context, tx Tx, rt RunTx, b *batch, m *OutboxMessage, t time.Time) error {
	m.State, m.DeliveredAt, m.LastError = OutboxDelivered, &t, ""
	if m.Aggregate != AggregateRun || !isRunFinal(m.EventType) {
		return nil
	}
	en, err := lockRun(ctx, rt, b, m.AggregateID)
	if err != nil {
		if IsRejection(err) {
			return nil // the run was retired
		}
		return err
	}
	s, err := lifecycle.ApplyRun(en.run, lifecycle.RunCommand{Op: lifecycle.RunOpReport, Actor: lifecycle.ActorSystem,
		ActorID: "stint:outbox", Reason: "final status delivered to webhook " + m.WebhookID}, notBeforeRun(t, en.run))
	if err != nil {
		return err
	}
	b.runs.step(en, s)
	return nil
}

func isRunFinal(typ string) bool {
	switch lifecycle.RunEventType(typ) {
	case lifecycle.RunEventSucceeded, lifecycle.RunEventFailed, lifecycle.RunEventCancelled, lifecycle.RunEventTimedOut:
		return true
	}
	return false
}

// OutboxFailed records a failed attempt: due again at RetryAt, or dead.
func (e *engine) OutboxFailed(ctx context.Context, p *OutboxReportParams) error {
	return e.outboxReport(ctx, p, func(_ context.Context, _ Tx, _ RunTx, _ *batch, m *OutboxMessage, t time.Time) error {
		m.LastError = p.Error
		switch {
		case p.Dead:
			m.State = OutboxDead
		case p.RetryAt != nil:
			m.NextAttemptAt = p.RetryAt.UTC().Truncate(time.Microsecond)
		default:
			m.NextAttemptAt = t
		}
		return nil
	})
}

// reportFn changes a message a report is about.
type reportFn func(ctx context.Context, tx Tx, rt RunTx, b *batch, m *OutboxMessage, t time.Time) error

// outboxReport applies a report to a pending message still at the
// reporter's attempt; a stale reporter (its lease ran out and another
// claimed the message) changes nothing.
func (e *engine) outboxReport(ctx context.Context, p *OutboxReportParams, fn reportFn) error {
	if err := lifecycle.CheckTexts("error", p.Error); err != nil {
		return err
	}
	return e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		t, err := now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		return e.outboxReportTx(ctx, tx, rt, b, p, t, fn)
	})
}

// outboxReportTx is outboxReport inside a transaction, at time t.
func (e *engine) outboxReportTx(ctx context.Context, tx Tx, rt RunTx, b *batch, p *OutboxReportParams, t time.Time, fn reportFn) error {
	m, ok, err := rt.OutboxGet(ctx, p.ID)
	if err != nil {
		return err
	}
	if !ok {
		return &lifecycle.Error{Kind: ErrNotFound, Msg: fmt.Sprintf("outbox message %d: not found", p.ID)}
	}
	if m.State != OutboxPending || m.Attempts != p.Attempt {
		return &lifecycle.Error{Kind: ErrStaleLease, Msg: fmt.Sprintf("outbox message %d is %s at attempt %d, not attempt %d: another deliverer took it", p.ID, m.State, m.Attempts, p.Attempt)}
	}
	if err := fn(ctx, tx, rt, b, &m, t); err != nil {
		return err
	}
	return rt.OutboxUpdate(ctx, []OutboxMessage{m})
}

// OutboxList lists messages ordered by id.
func (e *engine) OutboxList(ctx context.Context, p *OutboxListParams) ([]OutboxMessage, error) {
	q := *p
	if q.Limit <= 0 {
		q.Limit = 100
	}
	var out []OutboxMessage
	err := e.d.Read(ctx, func(tx Tx) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		var err error
		out, err = rt.OutboxList(ctx, q)
		return err
	})
	return out, err
}

// OutboxReplay makes a dead message pending and due now; its attempts start
// over so it gets the full retry budget again.
func (e *engine) OutboxReplay(ctx context.Context, id int64) (OutboxMessage, error) {
	var m OutboxMessage
	err := e.write(ctx, func(tx Tx, b *batch) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return errNoRuns
		}
		var found bool
		var err error
		if m, found, err = rt.OutboxGet(ctx, id); err != nil {
			return err
		}
		if !found {
			return &lifecycle.Error{Kind: ErrNotFound, Msg: fmt.Sprintf("outbox message %d: not found; list them with `stint outbox ls --dead`", id)}
		}
		if m.State != OutboxDead {
			return &lifecycle.Error{Kind: lifecycle.ErrInvalidTransition, Msg: fmt.Sprintf("outbox message %d is %s: only a dead message can be replayed", id, m.State)}
		}
		t, err := now(ctx, tx, nil)
		if err != nil {
			return err
		}
		m.State, m.Attempts, m.NextAttemptAt = OutboxPending, 0, t
		return rt.OutboxUpdate(ctx, []OutboxMessage{m})
	})
	return m, err
}
