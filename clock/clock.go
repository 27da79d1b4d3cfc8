// Package clock is the one clock interface every stint component takes, with
// the system clock and a manual clock for tests.
package clock

import "time"

// Clock tells the time and makes timers. Components read time only from a
// Clock, never from time.Now, so tests can move time by hand.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// After is time.After.
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }
