package cron

import (
	"time"

	"github.com/stint-dev/stint/store"
)

// MaxLookBack bounds how far back missed ticks are looked for: a schedule
// whose last tick is older starts counting from MaxLookBack ago.
const MaxLookBack = 31 * 24 * time.Hour

// MaxCatchUp is the most ticks one pass fires for a schedule; the next pass
// goes on.
const MaxCatchUp = 100

// DefaultGrace is how late a tick may be and still be fired under the
// "latest" policy along with the ones after it: long enough to cover a
// leader failover, so a failover never skips a tick.
const DefaultGrace = time.Minute

// Due returns the ticks of s to fire at now, oldest first, and how many due
// ticks the policy skips. Under "all" every due tick is fired (up to
// MaxCatchUp). Under "latest" (the default) the ticks due within grace of
// now are fired; when none is, the latest due tick is, once; the older
// ones are skipped.
func Due(e Expr, s store.Schedule, now time.Time, grace time.Duration) (fire []time.Time, skipped int) {
	from := s.CreatedAt
	if s.LastTick != nil {
		from = *s.LastTick
	}
	if floor := now.Add(-MaxLookBack); from.Before(floor) {
		from = floor
	}
	var due []time.Time
	for t := e.Next(from); !t.IsZero() && !t.After(now); t = e.Next(t) {
		due = append(due, t)
		if s.Missed == store.MissedAll && len(due) == MaxCatchUp {
			break
		}
	}
	if s.Missed == store.MissedAll || len(due) == 0 {
		return due, 0
	}
	recent := len(due)
	for recent > 0 && due[recent-1].After(now.Add(-grace)) {
		recent--
	}
	if recent == len(due) {
		recent = len(due) - 1 // none within grace: the latest, once
	}
	fire = due[recent:]
	if len(fire) > MaxCatchUp {
		fire = fire[len(fire)-MaxCatchUp:]
	}
	return fire, len(due) - len(fire)
}
