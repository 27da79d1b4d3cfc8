package bus

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consume fetches from the bridge's consumer of stream and hands each
// fetched batch to handle, until ctx ends. While open says no (backpressure) it
// fetches nothing, so messages wait in the stream. Failures (the bus away,
// the consumer deleted) back off and set the consumer up again.
func (b *Bridge) consume(ctx context.Context, stream string, open func(context.Context) bool, handle func(context.Context, []jetstream.Msg)) {
	var cons jetstream.Consumer
	fails := 0
	failed := func(what string, err error) bool {
		fails++
		if fails == 1 || fails%20 == 0 {
			b.log.Warn("bus "+what+" failed; retrying", "stream", stream, "err", err, "failures", fails)
		}
		return b.pause(ctx, backoff(fails))
	}
	for ctx.Err() == nil {
		if open != nil && !open(ctx) {
			if !b.pause(ctx, 250*time.Millisecond) {
				return
			}
			continue
		}
		if cons == nil {
			c, err := b.withTimeout(ctx, func(ctx context.Context) (jetstream.Consumer, error) { return b.consumer(ctx, stream) })
			if err != nil {
				if !failed("consumer setup", err) {
					return
				}
				continue
			}
			cons = c
		}
		msgs, err := fetch(cons, b.cfg.Batch)
		if len(msgs) > 0 {
			handle(ctx, msgs)
		}
		if err != nil {
			cons = nil
			if !failed("fetch", err) {
				return
			}
			continue
		}
		fails = 0
	}
}

// fetch takes what waits, up to n messages, at once; when nothing does,
// it waits up to a second for the first message and takes what came with
// it. So a backlog is handled in batches, and a lone message at once.
func fetch(cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	msgs, err := drain(cons.FetchNoWait(n))
	if len(msgs) > 0 || err != nil {
		return msgs, err
	}
	if msgs, err = drain(cons.Fetch(1, jetstream.FetchMaxWait(time.Second))); len(msgs) == 0 || err != nil || n == 1 {
		return msgs, err
	}
	more, err := drain(cons.FetchNoWait(n - 1))
	return append(msgs, more...), err
}

// drain collects a fetched batch; a fetch that found nothing is no error.
func drain(batch jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var msgs []jetstream.Msg
	for msg := range batch.Messages() {
		msgs = append(msgs, msg)
	}
	if err := batch.Error(); err != nil && !isTimeout(err) && !errors.Is(err, jetstream.ErrNoMessages) {
		return msgs, err
	}
	return msgs, nil
}

// lanes handles msgs on up to Concurrency goroutines: the messages with the
// same key go to the same lane, in the order they came.
func (b *Bridge) lanes(ctx context.Context, msgs []jetstream.Msg, key func(jetstream.Msg) string, handle func(context.Context, jetstream.Msg)) {
	n := min(b.cfg.Concurrency, len(msgs))
	if n <= 1 {
		for _, m := range msgs {
			handle(ctx, m)
		}
		return
	}
	lanes := make([][]jetstream.Msg, n)
	for _, m := range msgs {
		h := fnv.New32a()
		h.Write([]byte(key(m)))
		i := int(h.Sum32() % uint32(n))
		lanes[i] = append(lanes[i], m)
	}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, m := range lane {
				handle(ctx, m)
			}
		})
	}
	wg.Wait()
}

// withTimeout runs a setup call bounded by 5s.
func (b *Bridge) withTimeout(ctx context.Context, fn func(context.Context) (jetstream.Consumer, error)) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return fn(ctx)
}
