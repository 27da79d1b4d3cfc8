package store

import (
	"context"
	"sync"
	"time"
)

// hookRefresh is how old the engine's knowledge that no webhook exists may
// be: a webhook added by another process receives the events of
// transactions that commit from at most this long after it was added (at
// once in the process that added it).
const hookRefresh = time.Second

// hookCache remembers whether any webhook exists, so that a database
// without subscriptions pays nothing for the outbox on its hot path
// (building and sending every event's payload costs 2-3× on batch enqueue).
// It is a cache of a fact, not lifecycle time: the wall clock times it.
type hookCache struct {
	mu         sync.Mutex
	none       bool      // the last look found no webhook
	at         time.Time // of the last look
	refreshing bool
	// gen counts this process's changes, so that a look that began before
	// one does not overwrite it.
	gen int
}

// Sequential is implemented by drivers whose transactions share one
// connection (postgres' WithTx): the engine never reads through them from
// another goroutine.
type Sequential interface{ Sequential() }

// mayHaveWebhooks reports whether webhooks may exist. The first write of an
// engine, and every stale write on a Sequential driver, looks in its own
// transaction; otherwise a stale answer is refreshed in the background and
// the write goes by what was known.
func (e *engine) mayHaveWebhooks(ctx context.Context, rt RunTx) (bool, error) {
	c := &e.hooks
	c.mu.Lock()
	_, seq := e.d.(Sequential)
	stale := time.Since(c.at) > hookRefresh
	switch {
	case stale && (c.at.IsZero() || seq):
		gen := c.gen
		c.mu.Unlock()
		ws, err := rt.WebhookList(ctx)
		if err != nil {
			return true, err
		}
		c.mu.Lock()
		if gen == c.gen {
			c.none, c.at = len(ws) == 0, time.Now()
		}
		c.mu.Unlock()
		return len(ws) > 0, nil
	case stale && !c.refreshing:
		c.refreshing = true
		go e.refreshHooks(c.gen)
	}
	defer c.mu.Unlock()
	return !c.none, nil
}

func (e *engine) refreshHooks(gen int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err := e.d.Read(ctx, func(tx Tx) error {
		rt, ok := tx.(RunTx)
		if !ok {
			return nil
		}
		ws, err := rt.WebhookList(ctx)
		n = len(ws)
		return err
	})
	c := &e.hooks
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err != nil || gen != c.gen {
		return // keep what we knew; the next write looks again
	}
	c.none, c.at = n == 0, time.Now()
}

// hooksChanged is called after this process added or removed a webhook.
func (e *engine) hooksChanged() {
	c := &e.hooks
	c.mu.Lock()
	c.none, c.at = false, time.Time{}
	c.gen++
	c.mu.Unlock()
}
