package cron

import (
	"time"

	"github.com/stint-dev/stint/store"
)

// MaxLookBack bounds how far back missed ticks are looked for: a schedule
// whose last tick is older starts counting from MaxLookBack ago.
const MaxLookBack = 31 * 24 * time.Hour

// MaxCatchUp is the most missed ticks one pass enqueues under the "all"
// policy; the next pass goes on.
const MaxCatchUp = 100

// Due returns the ticks of s to fire at now, oldest first: none when no
// tick came due since its last one, the latest due tick under the "latest"
// policy, every due tick (up to MaxCatchUp) under "all".
func Due(e Expr, s store.Schedule, now time.Time) []time.Time {
	from := s.CreatedAt
	if s.LastTick != nil {
		from = *s.LastTick
	}
	if floor := now.Add(-MaxLookBack); from.Before(floor) {
		from = floor
	}
	var due []time.Time
	for t := e.Next(from); !t.IsZero() && !t.After(now); t = e.Next(t) {
		if s.Missed == store.MissedAll {
			if due = append(due, t); len(due) == MaxCatchUp {
				break
			}
			continue
		}
		due = append(due[:0], t)
	}
	return due
}
