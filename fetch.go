package stint

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// fetcher claims the jobs of one queue, as many as the queue has free
// slots. It never pauses between claims while there is work: a full claim
// is followed by another at once; a short one means the queue is drained,
// and the fetcher waits for a wake-up from the store (sent on every commit
// that makes a job claimable), with polling as the fallback.
type fetcher struct {
	p     *Pool
	queue string
	max   int64
	busy  atomic.Int64
	woken chan struct{} // holds one pending wake-up
	freed chan struct{} // holds one pending "a slot was freed"
	// waited is set when the last claim waited at the store for jobs
	// (claimwait.go), or carried completions: the fetcher claims again at
	// once instead of idling.
	waited bool

	// Completions carried with claims (carry.go): cc is nil unless the
	// store can; soon says that a completion offered now goes with the
	// next claim.
	cc    store.CompleteClaimStore
	mu    sync.Mutex
	soon  bool
	carry []completion
}

func newFetcher(p *Pool, queue string, max int) *fetcher {
	f := &fetcher{p: p, queue: queue, max: int64(max), woken: make(chan struct{}, 1), freed: make(chan struct{}, 1)}
	f.enableCarry()
	return f
}

func (f *fetcher) wake() { signal(f.woken) }

func (f *fetcher) slotFreed() {
	f.busy.Add(-1)
	signal(f.freed)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (f *fetcher) loop(ctx context.Context) {
	defer f.p.fetchDone.Done()
	defer f.unready()
	for ctx.Err() == nil {
		free := f.max - f.busy.Load()
		if free <= 0 {
			f.ready()
			select {
			case <-f.freed:
			case <-ctx.Done():
			}
			continue
		}
		want := int(min(free, int64(f.p.cfg.FetchLimit)))
		if got := f.claim(ctx, want); got == want || f.waited {
			f.ready()
			continue
		}
		f.unready()
		f.idle(ctx)
	}
}

// idle waits for a wake-up, the poll interval or the end of ctx.
func (f *fetcher) idle(ctx context.Context) {
	select {
	case <-f.woken:
	case <-f.p.clock.After(f.p.cfg.PollInterval):
	case <-ctx.Done():
	}
}

// claim claims up to n jobs of the registered kinds, claimed and started in
// one transaction, and starts an attempt for each; it returns how many.
//
// Each claim carries a fresh request id. A claim that failed without being
// refused may have committed (its reply lost, its commit uncertain): it is
// retried with backoff under the SAME request id, which returns the leases
// the first try took instead of leaving them to expire, until it gets an
// answer or the pool stops. The store call itself is not cancelled by Stop,
// so a claimed job always gets its attempt.
func (f *fetcher) claim(ctx context.Context, n int) int {
	got := 0
	f.waited = false
	groups := f.groups()
	for i, g := range groups {
		if got < n {
			got += f.claimKinds(ctx, g.kinds, g.ttl, n-got, i == len(groups)-1)
		}
	}
	return got
}

// leaseGroup is the kinds of a queue whose jobs are claimed with one lease TTL.
type leaseGroup struct {
	ttl   time.Duration
	kinds []string
}

// groups splits the registered kinds by the lease TTL their jobs get in
// this queue (KindDefaults may give kinds their own): one claim each.
func (f *fetcher) groups() []leaseGroup {
	var out []leaseGroup
	for _, k := range f.p.mux.kindList() {
		ttl := f.p.cfg.defaultsFor(k, f.queue).LeaseTTL
		i := slices.IndexFunc(out, func(g leaseGroup) bool { return g.ttl == ttl })
		if i < 0 {
			out, i = append(out, leaseGroup{ttl: ttl}), len(out)
		}
		out[i].kinds = append(out[i].kinds, k)
	}
	return out
}

// claimKinds claims up to n jobs of kinds with leases of ttl; see claim.
func (f *fetcher) claimKinds(ctx context.Context, kinds []string, ttl time.Duration, n int, last bool) int {
	params := &store.JobClaimParams{
		WorkerID: f.p.cfg.WorkerID, Queues: []string{f.queue}, Kinds: kinds, Topics: f.p.cfg.Topics,
		Limit: n, LeaseTTL: ttl, Start: true, RequestID: uuid.NewString(),
	}
	var r *retrier
	claimCtx, waits := f.claimContext(ctx, last)
	var carried []completion
	if last {
		carried = f.takeCarry(waits)
	}
	if len(carried) > 0 {
		claimCtx, waits = f.p.base, false // the completions' outcomes do not wait for jobs
	}
	for {
		sent := f.p.clock.Now()
		jobs, err := f.send(claimCtx, carried, params)
		if err == nil {
			f.run(jobs, sent)
			f.waited = waits || len(carried) > 0
			return len(jobs)
		}
		if waits && ctx.Err() != nil {
			return 0 // stopped while waiting; the server released what it leased
		}
		if !uncertain(err) {
			f.p.log.Error("stint: the store refused a claim; trying again after the poll interval", "queue", f.queue, "error", err)
			f.p.comp.resend(carried)
			return 0
		}
		if r == nil {
			r = f.p.retrier("claim")
		}
		if !r.wait(ctx, err, "queue", f.queue, "request_id", params.RequestID) {
			f.p.log.Warn("stint: stopped retrying a claim whose outcome is unknown; what it may have leased returns to its queue when the lease expires",
				"queue", f.queue, "request_id", params.RequestID)
			f.p.comp.resend(carried)
			return 0
		}
	}
}

// run starts an attempt for each claimed job. sent is when the claim that
// returned them was sent, by the pool's clock: their leases run from a
// moment after it.
func (f *fetcher) run(jobs []lifecycle.Job, sent time.Time) {
	for _, rec := range jobs {
		f.busy.Add(1)
		a := newAttempt(f.p, rec, sent, f.slotFreed)
		f.p.track(a)
		f.p.runs.Add(1)
		f.p.stats.claimed.Add(1)
		go a.run()
	}
}
