package store

import (
	"context"
	"sync"
)

// Listener is implemented by drivers that hear other processes' notices
// (PostgreSQL's LISTEN). Listen delivers them until ctx ends; a driver
// reconnects on its own and may drop notifications, since claimers also poll
// and owners also heartbeat.
type Listener interface {
	Listen(ctx context.Context, deliver func(Notice)) error
}

// broker fans wake-ups out to the subscribers in this process: those this
// process's own commits cause, and those a Listener hears.
type broker struct {
	mu     sync.Mutex
	subs   map[chan string]struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newBroker() *broker { return &broker{subs: map[chan string]struct{}{}} }

// listen delivers what l hears: queues to b, and jobs to leases.
func (b *broker) listen(l Listener, leases *broker) {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go func() {
		defer close(b.done)
		_ = l.Listen(ctx, func(n Notice) {
			b.publish(n.Queues)
			leases.publish(n.Jobs)
		})
	}()
}

func (b *broker) publish(queues []string) {
	if len(queues) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		for _, q := range queues {
			select {
			case ch <- q:
			default: // the subscriber is behind; it polls anyway
			}
		}
	}
}

func (b *broker) subscribe() (<-chan string, func()) {
	ch := make(chan string, 64)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
		})
	}
}

func (b *broker) close() {
	if b.cancel != nil {
		b.cancel()
		<-b.done
	}
}

// Wakeups returns a channel that receives a queue name whenever jobs may have
// become claimable in it, and a function that ends the subscription.
// Delivery is best effort: a subscriber that falls behind misses wake-ups,
// so claimers poll as well.
func (e *engine) Wakeups() (<-chan string, func()) { return e.wake.subscribe() }

// LeaseNotices returns a channel that receives a job id whenever the job's
// lease changed under its owner, and a function that ends the subscription.
// Best effort, like Wakeups: owners also heartbeat.
func (e *engine) LeaseNotices() (<-chan string, func()) { return e.leases.subscribe() }
