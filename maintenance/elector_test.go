package maintenance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

const testTTL = 15 * time.Second // renew every 5s, followers every 3s, trust 12s

// cluster is several Maintainers on one database and one manual clock,
// stepped in lockstep: each tick moves the clock, then collects the
// election attempt of every member whose timer fired.
type cluster struct {
	t       *testing.T
	d       *db
	ms      []*Maintainer
	att     []chan electResult
	next    []time.Time // when each member attempts next; zero once stopped
	changes chan LeaderChange
}

func newCluster(t *testing.T, d *db, n int) *cluster {
	c := &cluster{t: t, d: d, changes: make(chan LeaderChange, 1000)}
	for i := range n {
		m := must(New(d.open(), &Config{
			Clock: d.clock, Logger: d.logger().With("member", i),
			Election: ElectorConfig{ID: fmt.Sprintf("m%d", i), TTL: testTTL,
				OnChange: func(lc LeaderChange) { c.changes <- lc }},
		}))
		stubMaintainer(m, d)
		att := make(chan electResult)
		m.elector.attempted = att
		c.ms, c.att, c.next = append(c.ms, m), append(c.att, att), append(c.next, time.Time{})
	}
	return c
}

// stubMaintainer makes m's services and elector pass the manual clock's
// time to a store whose clock cannot be set.
func stubMaintainer(m *Maintainer, d *db) {
	now := d.nowFor()
	m.scheduler.now, m.reaper.now, m.timeouts.now, m.canceller.now = now, now, now, now
	if m.elector != nil {
		m.elector.now = now
	}
}

// start starts member i and returns its first attempt.
func (c *cluster) start(i int) electResult {
	c.t.Helper()
	start(c.t, c.ms[i])
	return c.collect(i)
}

func (c *cluster) collect(i int) electResult {
	c.t.Helper()
	r := recv(c.t, c.att[i], fmt.Sprintf("election attempt of m%d", i))
	if r.err != nil {
		c.t.Fatalf("m%d: election failed: %v", i, r.err)
	}
	period := c.ms[i].elector.retry
	if c.ms[i].IsLeader() {
		period = c.ms[i].elector.renew
	}
	c.next[i] = c.d.clock.Now().Add(period)
	return r
}

// tick moves the clock by d and collects the attempts it caused; it returns
// the members elected in them.
func (c *cluster) tick(d time.Duration) []int {
	c.t.Helper()
	c.d.clock.Advance(d)
	now := c.d.clock.Now()
	var elected []int
	for i, at := range c.next {
		if at.IsZero() || at.After(now) {
			continue
		}
		if c.collect(i).l.Elected {
			elected = append(elected, i)
		}
	}
	c.check()
	return elected
}

// check asserts, between ticks, that at most one member leads and that a
// member's services run exactly while it leads.
func (c *cluster) check() {
	c.t.Helper()
	leaders := 0
	for i, m := range c.ms {
		lead := m.IsLeader()
		if lead {
			leaders++
		}
		m.mu.Lock()
		running := m.running
		m.mu.Unlock()
		if running != lead {
			c.t.Fatalf("m%d: leader %v but services running %v", i, lead, running)
		}
	}
	if leaders > 1 {
		c.t.Fatalf("%d leaders at once", leaders)
	}
}

// leader returns the one leading member, or -1.
func (c *cluster) leader() int {
	for i, m := range c.ms {
		if m.IsLeader() {
			return i
		}
	}
	return -1
}

// Three Maintainers elect one leader; it keeps the seat while it renews;
// when it is killed (stops renewing without resigning) another takes over
// once the seat expires and not before, with a higher term; when that one
// stops cleanly it resigns and the last takes over at its next attempt.
func TestElection(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		c := newCluster(t, d, 3)
		if r := c.start(0); !r.l.Elected {
			t.Fatalf("the first candidate was not elected")
		}
		for i := 1; i < 3; i++ {
			if r := c.start(i); r.l.Elected {
				t.Fatalf("m%d was elected while m0 holds the seat", i)
			}
		}
		c.check()
		term1 := c.ms[0].Term()
		lastRenewal := d.clock.Now()
		for range 20 {
			if elected := c.tick(time.Second); len(elected) > 0 {
				if len(elected) != 1 || elected[0] != 0 {
					t.Fatalf("members %v elected while m0 leads", elected)
				}
				lastRenewal = d.clock.Now()
			}
			if c.leader() != 0 || c.ms[0].Term() != term1 {
				t.Fatalf("leader m%d term %d, want m0 term %d throughout", c.leader(), c.ms[0].Term(), term1)
			}
		}

		// Kill m0: it neither renews nor resigns.
		c.ms[0].elector.abandon()
		c.next[0] = time.Time{}
		expires := lastRenewal.Add(testTTL)
		second := -1
		for second < 0 {
			elected := c.tick(time.Second)
			if len(elected) > 1 {
				t.Fatalf("members %v elected at once", elected)
			}
			if len(elected) == 1 {
				second = elected[0]
			}
			if d.clock.Now().Sub(expires) > time.Minute {
				t.Fatalf("no successor a minute after the seat expired")
			}
		}
		now := d.clock.Now()
		if now.Before(expires) {
			t.Fatalf("m%d elected at %s, before the killed leader's seat expired at %s", second, now, expires)
		}
		if late := now.Sub(expires); late > c.ms[second].elector.retry {
			t.Errorf("successor elected %s after the seat expired; want within one follower period", late)
		}
		if term2 := c.ms[second].Term(); term2 <= term1 {
			t.Errorf("successor's term %d is not above the killed leader's %d", term2, term1)
		}

		// Stop the successor cleanly: it resigns, so the last member takes
		// over at its next attempt instead of after a TTL. (That the term
		// rises across a resignation is TestElectionTermRisesAcrossResign's.)
		c.ms[second].Stop()
		c.next[second] = time.Time{}
		if c.ms[second].IsLeader() {
			t.Fatalf("m%d still leads after Stop", second)
		}
		third := 3 - second
		stopped := d.clock.Now()
		for c.leader() != third {
			c.tick(time.Second)
			if d.clock.Now().Sub(stopped) > c.ms[third].elector.retry {
				t.Fatalf("m%d not elected within one follower period of the leader's resignation", third)
			}
		}
	})
}

// Terms strictly increase: a seat that changes hands after its holder
// resigned gets a higher term than the holder had, as after expiry.
func TestElectionTermRisesAcrossResign(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		ctx := t.Context()
		elect := func(id string) store.Leadership {
			t.Helper()
			l, err := d.s.LeaderElect(ctx, &store.LeaderElectParams{Name: "seat", ID: id, TTL: testTTL, Now: d.now()})
			if err != nil {
				t.Fatalf("elect %s: %v", id, err)
			}
			return l
		}
		a := elect("a")
		if !a.Elected {
			t.Fatalf("a not elected to a free seat")
		}
		if err := d.s.LeaderResign(ctx, "seat", "a"); err != nil {
			t.Fatalf("resign: %v", err)
		}
		b := elect("b")
		if !b.Elected {
			t.Fatalf("b not elected after a resigned")
		}
		if b.Term <= a.Term {
			t.Errorf("b's term %d is not above a's %d: a term no longer identifies one leader "+
				"(the store forgets the term when a leader resigns)", b.Term, a.Term)
		}
	})
}

// blockingStore holds LeaderElect calls while blocked, to play a database
// that stops answering.
type blockingStore struct {
	store.Store
	mu      sync.Mutex
	blocked chan struct{} // closed to release; nil when not blocking
	entered chan struct{}
}

func (b *blockingStore) block() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blocked, b.entered = make(chan struct{}), make(chan struct{}, 10)
}

func (b *blockingStore) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.blocked)
	b.blocked = nil
}

func (b *blockingStore) LeaderElect(ctx context.Context, p *store.LeaderElectParams) (store.Leadership, error) {
	b.mu.Lock()
	blocked, entered := b.blocked, b.entered
	b.mu.Unlock()
	if blocked != nil {
		entered <- struct{}{}
		select {
		case <-blocked:
		case <-ctx.Done():
			return store.Leadership{}, ctx.Err()
		}
	}
	return b.Store.LeaderElect(ctx, p)
}

// A leader whose renewal hangs stops trusting its seat, and stops its
// services, before the seat expires in the store: at the moment it steps
// down no other candidate can be elected yet.
func TestElectionLeaderStepsDownBeforeSeatExpires(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		bs := &blockingStore{Store: d.open()}
		changes := make(chan LeaderChange, 10)
		m := must(New(bs, &Config{
			Clock: d.clock, Logger: d.logger(),
			Election: ElectorConfig{ID: "leader", TTL: testTTL, OnChange: func(c LeaderChange) { changes <- c }},
		}))
		stubMaintainer(m, d)
		start(t, m)
		elected := recv(t, changes, "election")
		if !elected.Leader || !m.IsLeader() {
			t.Fatalf("not elected: %+v", elected)
		}
		sent := d.clock.Now()
		seatExpires := sent.Add(testTTL)
		trustEnds := seatExpires.Add(-m.elector.cfg.SafetyMargin)

		bs.block()
		d.clock.Advance(m.elector.renew)
		recv(t, bs.entered, "renewal")
		if !m.IsLeader() {
			t.Fatalf("stepped down while its trust window is open")
		}
		d.clock.Set(trustEnds)
		deposed := recv(t, changes, "step-down")
		if deposed.Leader || deposed.Term != elected.Term {
			t.Fatalf("change %+v, want a step-down from term %d", deposed, elected.Term)
		}
		if m.IsLeader() {
			t.Fatalf("IsLeader after stepping down")
		}
		m.mu.Lock()
		running := m.running
		m.mu.Unlock()
		if running {
			t.Fatalf("services still running after stepping down")
		}

		// At this moment the seat is still taken in the store...
		other := func() store.Leadership {
			l, err := d.s.LeaderElect(t.Context(), &store.LeaderElectParams{Name: DefaultSeat, ID: "other", TTL: testTTL, Now: d.now()})
			if err != nil {
				t.Fatalf("elect other: %v", err)
			}
			return l
		}
		if l := other(); l.Elected {
			t.Fatalf("another candidate was elected at %s, while the deposed leader trusted its seat until %s", d.clock.Now(), trustEnds)
		}
		// ...and it frees up only when the store says it expires.
		d.clock.Set(seatExpires.Add(-time.Microsecond))
		if l := other(); l.Elected {
			t.Fatalf("another candidate was elected before the seat expired")
		}
		d.clock.Set(seatExpires)
		l := other()
		if !l.Elected || l.Term <= elected.Term {
			t.Fatalf("other at expiry: %+v, want elected with a term above %d", l, elected.Term)
		}
		bs.release()
	})
}

// Without an election, a single-node Maintainer runs every service: a
// scheduled job is promoted when due, an expired lease reaped.
func TestMaintainerSingleNode(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		m := must(New(d.s, &Config{Clock: d.clock, Logger: d.logger(), SingleNode: true}))
		stubMaintainer(m, d)
		sched, reap := watch(m.scheduler.l), watch(m.reaper.l)
		runAt := d.clock.Now().Add(time.Minute)
		scheduled := d.enqueue(lifecycle.Spec{RunAt: &runAt})
		d.enqueue(lifecycle.Spec{})
		owned := d.claim(leaseTTL, true)
		start(t, m)
		if !m.IsLeader() || m.Term() != 0 {
			t.Fatalf("single node: IsLeader %v term %d, want true and 0", m.IsLeader(), m.Term())
		}
		nextPass(t, sched)
		nextPass(t, reap)
		d.clock.Advance(time.Minute)
		if n := nextPass(t, sched); n != 1 {
			t.Fatalf("scheduler promoted %d jobs, want 1", n)
		}
		if n := nextPass(t, reap); n != 2 {
			t.Fatalf("reaper changed %d jobs, want 2 (stall, requeue)", n)
		}
		d.wantState(scheduled.ID, lifecycle.Queued, "")
		d.wantState(owned.ID, lifecycle.Queued, "")
		m.Stop()
		if m.IsLeader() {
			t.Fatalf("IsLeader after Stop")
		}
		d.verify()
	})
}
