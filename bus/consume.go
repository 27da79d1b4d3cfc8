package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consume fetches from the bridge's consumer of stream and hands each
// message to handle, until ctx ends. While open says no (backpressure) it
// fetches nothing, so messages wait in the stream. Failures (the bus away,
// the consumer deleted) back off and set the consumer up again.
func (b *Bridge) consume(ctx context.Context, stream string, open func(context.Context) bool, handle func(context.Context, jetstream.Msg)) {
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
		batch, err := cons.Fetch(b.cfg.Batch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			cons = nil
			if !failed("fetch", err) {
				return
			}
			continue
		}
		for msg := range batch.Messages() {
			handle(ctx, msg)
		}
		if err := batch.Error(); err != nil && !isTimeout(err) && !errors.Is(err, jetstream.ErrNoMessages) {
			cons = nil
			if !failed("fetch", err) {
				return
			}
			continue
		}
		fails = 0
	}
}

// withTimeout runs a setup call bounded by 5s.
func (b *Bridge) withTimeout(ctx context.Context, fn func(context.Context) (jetstream.Consumer, error)) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return fn(ctx)
}
