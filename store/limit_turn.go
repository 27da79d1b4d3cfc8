package store

import (
	"context"
	"slices"
	"sync"
)

// turns makes the claimers of a limited queue in one process take turns
// before they begin a transaction, rather than inside it.
//
// A claim of a paused or limited queue locks the queue's settings row, so
// its claimers on every node go one at a time anyway (limit.go). Without
// turns, each claimer waiting for that lock holds a database connection
// (and, on PostgreSQL, a backend waiting on a row lock) for the whole
// wait; with many claimers on a small connection pool, every connection
// ends up waiting behind the one claim that holds the lock, and the
// completions that would free the queue's slots wait for a connection.
// Taking the turn first, each process sends at most one claim per limited
// queue at a time and the others wait in the process, holding nothing the
// store needs. The limit itself is still enforced by the row lock.
type turns struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// take waits for the turn of every queue in limited (in name order, so
// two claims of the same queues never wait for each other in a cycle) and
// returns the function that gives them back. It returns ctx's error if ctx
// ends first, holding nothing.
func (t *turns) take(ctx context.Context, limited []string) (func(), error) {
	if len(limited) == 0 {
		return func() {}, nil
	}
	slices.Sort(limited)
	limited = slices.Compact(limited)
	held := make([]chan struct{}, 0, len(limited))
	release := func() {
		for _, ch := range held {
			<-ch
		}
	}
	for _, name := range limited {
		ch := t.of(name)
		select {
		case ch <- struct{}{}:
			held = append(held, ch)
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// of returns the turn of queue name.
func (t *turns) of(name string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]chan struct{}{}
	}
	ch, ok := t.m[name]
	if !ok {
		ch = make(chan struct{}, 1)
		t.m[name] = ch
	}
	return ch
}

// known returns the queues of queues that this node last saw paused or
// limited, without reading anything: a queue limited since is claimed
// without a turn until the claims' next read of the names (within
// limitsRefresh), which costs only the wait described on turns.
func (l *limits) known(queues []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, q := range queues {
		if l.names[q] {
			out = append(out, q)
		}
	}
	return out
}
