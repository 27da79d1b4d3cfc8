package dispatch

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint/store"
)

// line is the waiting claims that would take the same jobs: same queues,
// kinds and topics. Its fields are guarded by the dispatcher's mutex.
type line struct {
	queues   []string
	waiters  []*waiter // first come, first served
	inflight int       // claims running for the line
	// gen counts the line's wake-ups: a claim that began before the last
	// one cannot prove the line empty.
	gen uint64
	// emptyAt is when a claim last came back short with no wake-up since;
	// zero when the line may have jobs.
	emptyAt time.Time
}

// drained reports whether a claim now would find nothing, as far as the
// wake-ups tell and for at most recheck after the last empty claim.
func (l *line) drained(now time.Time, recheck time.Duration) bool {
	return !l.emptyAt.IsZero() && now.Sub(l.emptyAt) < recheck
}

// waiter states: parked in its line, taken by a claim under way for it, or
// done (answered, expired or gone). Only the dispatcher moves parked to
// taken; whoever moves a waiter to done answers it, except its own caller.
const (
	parked int32 = iota
	taken
	done
)

// waiter is one parked claim.
type waiter struct {
	ctx      context.Context
	line     *line
	p        *store.JobClaimParams
	deadline time.Time // answered empty at or after it
	now      bool      // a ClaimNow: answered empty when its line is drained
	state    atomic.Int32
	out      chan result // receives the one answer
}

type result struct {
	jobs []store.Job
	err  error
}

// answer moves w to done and sends its outcome. The caller made sure w is
// not done already.
func (w *waiter) answer(jobs []store.Job, err error) {
	w.state.Store(done)
	w.out <- result{jobs, err}
}

// lineFor returns the line of p's claims, making it when new. d.mu is held.
func (d *Dispatcher) lineFor(p *store.JobClaimParams) *line {
	key := keyOf(p)
	if l, ok := d.lines[key]; ok {
		return l
	}
	l := &line{queues: slices.Clone(p.Queues)}
	d.lines[key] = l
	for _, q := range l.queues {
		d.watch[q] = append(d.watch[q], l)
	}
	return l
}

// keyOf names the jobs a claim may take: its queues, kinds and topics, each
// as a set.
func keyOf(p *store.JobClaimParams) string {
	var b strings.Builder
	for _, set := range [][]string{p.Queues, p.Kinds, p.Topics} {
		s := slices.Clone(set)
		slices.Sort(s)
		b.WriteString(strings.Join(slices.Compact(s), "\x00"))
		b.WriteByte('\x01')
	}
	return b.String()
}

// slack is how much earlier than asked a wait may end, so that deadlines
// close together share one firing of the timer.
func slack(wait time.Duration) time.Duration { return min(time.Second, wait/4) }

// park puts a waiter for p at the end of l, arms the timer, and starts a
// claim when l may have jobs. d.mu is held.
func (d *Dispatcher) park(ctx context.Context, l *line, p *store.JobClaimParams, wait time.Duration, claimNow bool) *waiter {
	now := d.cfg.Clock.Now()
	w := &waiter{ctx: ctx, line: l, p: p, deadline: now.Add(wait - slack(wait)), now: claimNow, out: make(chan result, 1)}
	l.waiters = append(l.waiters, w)
	d.count(1)
	d.armFor(w)
	d.start()
	if !l.drained(now, d.cfg.Recheck) {
		d.kick(l)
	}
	return w
}

// settleNow takes the ClaimNow waiters out of l, which is drained: they do
// not wait for jobs. Each gets the store's claim of its own, which likely
// finds nothing but answers a retried request id with the jobs it leased
// first. d.mu is held.
func (d *Dispatcher) settleNow(l *line) {
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.now && w.state.CompareAndSwap(parked, taken) {
			d.count(-1)
			go func() {
				jobs, err := d.cfg.Store.JobClaim(context.WithoutCancel(w.ctx), w.p)
				w.answer(jobs, err)
			}()
			continue
		}
		kept = append(kept, w)
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

// unpark takes a done waiter out of its line. d.mu is held.
func (d *Dispatcher) unpark(w *waiter) {
	l := w.line
	if i := slices.Index(l.waiters, w); i >= 0 {
		l.waiters = slices.Delete(l.waiters, i, i+1)
		d.count(-1)
	}
}

// armFor makes the timer fire by w's deadline. d.mu is held.
func (d *Dispatcher) armFor(w *waiter) {
	if d.next.IsZero() || w.deadline.Before(d.next) {
		d.next = w.deadline
		d.poke()
	}
}

// poke makes the run goroutine look again at what it should wait for.
func (d *Dispatcher) poke() {
	select {
	case d.rearm <- struct{}{}:
	default:
	}
}
