package stint

import (
	"sync"

	"github.com/stint-dev/stint/store"
)

// completeRetries is how many times a completion batch the store failed to
// write (not rejected: failed, like a lost connection) is tried again.
const completeRetries = 3

// completer writes successful outcomes in batches: one goroutine takes
// everything waiting when it is free and writes it in one JobComplete call,
// so batches grow with the load and no completion waits for a batch to fill.
type completer struct {
	p    *Pool
	mu   sync.RWMutex // guards closed against add racing close
	in   chan completion
	done chan struct{}

	closed bool
	// carriers holds, by queue, the fetchers that send completions with
	// their claims (carry.go); empty unless the store can.
	carriers sync.Map
}

type completion struct {
	a      *attempt
	params store.JobCompleteParams
}

func newCompleter(p *Pool) *completer {
	size := 0
	for _, n := range p.cfg.Queues {
		size += n
	}
	c := &completer{p: p, in: make(chan completion, min(size, store.MaxBatch)), done: make(chan struct{})}
	go c.loop()
	return c
}

// add queues a's completion and reports whether it did. It blocks only
// while the queue is full.
func (c *completer) add(a *attempt) bool {
	result, ptr := a.job.results()
	cp := completion{a: a, params: store.JobCompleteParams{
		OwnerParams: a.owner(), Result: result, ResultPtr: ptr, ExecutionMS: a.execMS(), Held: a.heldRecord(),
	}}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		// Only a handler that returned as Stop gave up waiting gets here.
		c.p.log.Warn("stint: a completion came after the pool stopped and is dropped; the job runs again when its lease expires", a.jobLog()...)
		return false
	}
	if f := c.carrier(a); f != nil && f.offer(cp) {
		return true // it goes with the fetcher's next claim
	}
	c.in <- cp
	return true
}

// close writes what is queued and stops the completer.
func (c *completer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.in)
	}
	c.mu.Unlock()
	<-c.done
}

func (c *completer) loop() {
	defer close(c.done)
	limit := c.p.cfg.CompleteBatch
	batch := make([]completion, 0, limit)
	for first := range c.in {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < limit {
			select {
			case cp, ok := <-c.in:
				if !ok {
					break fill
				}
				batch = append(batch, cp)
			default:
				break fill
			}
		}
		c.flush(batch)
	}
}

// flush writes one batch and accounts for each item's outcome; the
// attempts stop heartbeating once it is done.
func (c *completer) flush(batch []completion) {
	params := make([]store.JobCompleteParams, len(batch))
	for i, cp := range batch {
		params[i] = cp.params
	}
	var results []store.Result
	var err error
	r := c.p.retrier("complete")
	for try := 0; ; try++ {
		results, err = c.p.store.JobComplete(c.p.base, params)
		if err == nil || try == completeRetries || !r.wait(c.p.base, err, "jobs", len(batch)) {
			break
		}
	}
	c.report(batch, results, err)
}

// report accounts for the outcome of each completion of batch, written
// with results or failed with err, and untracks their attempts.
func (c *completer) report(batch []completion, results []store.Result, err error) {
	defer func() {
		for _, cp := range batch {
			c.p.untrack(cp.a)
		}
	}()
	if err != nil {
		c.p.log.Error("stint: could not write completions; the jobs run again when their leases expire", "jobs", len(batch), "error", err)
		for _, cp := range batch {
			cp.a.outcome("complete", JobRecord{}, err)
		}
		return
	}
	for i, r := range results {
		if !batch[i].a.reported("complete", r.Job, r.Err) {
			continue
		}
		c.p.stats.succeeded.Add(1)
	}
}

// resend queues completions that a fetcher took to send with its claim
// and did not send after all (carry.go).
func (c *completer) resend(cps []completion) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, cp := range cps {
		if c.closed { // not reached: the fetchers stop before the completer
			c.p.log.Warn("stint: a completion came after the pool stopped and is dropped; the job runs again when its lease expires", cp.a.jobLog()...)
			c.p.untrack(cp.a)
			continue
		}
		c.in <- cp
	}
}
