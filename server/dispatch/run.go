package dispatch

import (
	"time"
)

// start runs the wake-up and timer goroutine unless it runs. d.mu is held.
func (d *Dispatcher) start() {
	if d.running {
		return
	}
	d.running = true
	wake, stop := d.cfg.Store.Wakeups()
	go d.run(wake, stop)
}

// run hears the store's wake-ups and fires the one timer of every deadline.
// It ends when nobody is parked and no empty claim is trusted any more:
// from then on, nothing is known about the lines, and they are forgotten.
func (d *Dispatcher) run(wake <-chan string, stop func()) {
	defer stop()
	var armed time.Time
	var timer <-chan time.Time
	for {
		d.mu.Lock()
		next, exit := d.nextFiring()
		if exit {
			d.running = false
			d.forget()
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if !next.IsZero() && !next.Equal(armed) {
			armed, timer = next, d.cfg.Clock.After(next.Sub(d.cfg.Clock.Now()))
		}
		select {
		case q := <-wake:
			d.woken(q)
		case <-timer:
			armed, timer = time.Time{}, nil
			d.expire()
		case <-d.rearm:
		}
	}
}

// woken notes that q may have jobs: each line claiming from it is no longer
// drained, and a claim starts for its first waiter.
func (d *Dispatcher) woken(q string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.watch[q] {
		l.gen++
		l.emptyAt = time.Time{}
		d.kick(l)
	}
}

// expire answers, with nothing, every parked waiter whose deadline passed,
// and finds the next deadline.
func (d *Dispatcher) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireAt(d.cfg.Clock.Now())
}

// expireAt answers the parked waiters whose deadline is not after now and
// sets d.next to the earliest deadline left. d.mu is held.
func (d *Dispatcher) expireAt(now time.Time) {
	d.next = time.Time{}
	for _, l := range d.lines {
		kept := l.waiters[:0]
		for _, w := range l.waiters {
			if w.deadline.After(now) {
				kept = append(kept, w)
				if d.next.IsZero() || w.deadline.Before(d.next) {
					d.next = w.deadline
				}
				continue
			}
			d.count(-1)
			if w.state.CompareAndSwap(parked, done) {
				w.out <- result{}
			}
		}
		clear(l.waiters[len(kept):])
		l.waiters = kept
	}
}

// nextFiring is when the timer should fire next: the earliest deadline of
// the parked or, with nobody parked, when the last trusted empty claim
// stops being trusted (then the goroutine may end: nothing it would hear
// matters). exit is true when nothing needs the goroutine: nobody parked,
// no claim under way, no empty claim trusted. d.mu is held.
func (d *Dispatcher) nextFiring() (next time.Time, exit bool) {
	if d.parked > 0 {
		if d.next.IsZero() {
			d.expireAt(d.cfg.Clock.Now().Add(-time.Hour)) // finds the next deadline
		}
		return d.next, false
	}
	now := d.cfg.Clock.Now()
	busy := false
	for _, l := range d.lines {
		busy = busy || l.inflight > 0
		if t := l.emptyAt.Add(d.cfg.Recheck); !l.emptyAt.IsZero() && t.After(now) && t.After(next) {
			next = t
		}
	}
	return next, next.IsZero() && !busy
}

// forget drops the lines no claim runs for; those left are no longer
// trusted drained. d.mu is held.
func (d *Dispatcher) forget() {
	for key, l := range d.lines {
		l.gen++
		l.emptyAt = time.Time{}
		if l.inflight == 0 && len(l.waiters) == 0 {
			delete(d.lines, key)
		}
	}
	d.watch = map[string][]*line{}
	for _, l := range d.lines {
		for _, q := range l.queues {
			d.watch[q] = append(d.watch[q], l)
		}
	}
}
