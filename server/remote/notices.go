package remote

import (
	"context"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// notices keeps one Notices stream open to the server while anyone
// subscribes, reconnecting with backoff, and fans what it hears out to the
// subscribers of Wakeups and LeaseNotices. Best effort like the store's own
// broker: a subscriber that is behind misses notices, and pools poll anyway.
type notices struct {
	s *Store

	mu     sync.Mutex
	queues map[chan string]struct{}
	jobs   map[chan string]struct{}
	cancel context.CancelFunc // of the running stream; nil when none
	done   chan struct{}
	closed bool
}

func newNotices(s *Store) *notices {
	return &notices{s: s, queues: map[chan string]struct{}{}, jobs: map[chan string]struct{}{}}
}

// Wakeups returns a channel of queues that may have claimable jobs, heard
// from the server, and a function that ends the subscription. When claims
// long-poll (ClaimWaits) the server wakes them itself, and the channel
// receives nothing: every worker hearing every queue's wake-up would cost
// the server a message per worker per wake-up.
func (s *Store) Wakeups() (<-chan string, func()) {
	if s.ClaimWaits() {
		return make(chan string), func() {}
	}
	return s.notices.subscribe(false)
}

// LeaseNotices returns a channel of job ids whose lease changed under their
// owner, heard from the server, and a function that ends the subscription.
func (s *Store) LeaseNotices() (<-chan string, func()) { return s.notices.subscribe(true) }

func (n *notices) subscribe(jobs bool) (<-chan string, func()) {
	ch := make(chan string, 64)
	n.mu.Lock()
	defer n.mu.Unlock()
	set := n.queues
	if jobs {
		set = n.jobs
	}
	set[ch] = struct{}{}
	if n.cancel == nil && !n.closed {
		ctx, cancel := context.WithCancel(context.Background())
		n.cancel, n.done = cancel, make(chan struct{})
		go n.run(ctx, n.done)
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			delete(set, ch)
			stop := len(n.queues) == 0 && len(n.jobs) == 0
			n.mu.Unlock()
			if stop {
				n.stop()
			}
		})
	}
}

// stop ends the stream, if one runs.
func (n *notices) stop() {
	n.mu.Lock()
	cancel, done := n.cancel, n.done
	n.cancel, n.done = nil, nil
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (n *notices) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.stop()
}

// run keeps the stream open until ctx ends: a dropped stream (a server
// restarting, a load balancer's idle timeout) is opened again after a pause
// that doubles up to 5s, on the next server when this one is unreachable.
func (n *notices) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		k := n.s.current.Load()
		stream, err := n.s.conns[k].worker.Notices(ctx, connect.NewRequest(&stintv1.NoticesRequest{LeasesOnly: n.s.ClaimWaits()}))
		if err == nil {
			for stream.Receive() {
				m := stream.Msg()
				switch {
				case m.Queue != "":
					n.publish(false, m.Queue)
				case m.JobId != "":
					n.publish(true, m.JobId)
				default: // listening again; what a reconnect missed, the pool's poll finds
					wait = 50 * time.Millisecond
				}
			}
			err = stream.Err()
			stream.Close()
		}
		if unreachable(err) {
			n.s.current.CompareAndSwap(k, (k+1)%int64(len(n.s.conns)))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// publish delivers v to the subscribers of one kind.
func (n *notices) publish(jobs bool, v string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := n.queues
	if jobs {
		set = n.jobs
	}
	for ch := range set {
		select {
		case ch <- v:
		default:
		}
	}
}
