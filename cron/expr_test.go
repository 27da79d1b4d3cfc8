package cron_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func TestParse(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 15, 10, 0, 30, 0, time.UTC)
	cases := []struct {
		name, expr, tz string
		next           time.Time // zero: the expression is refused
	}{
		{"every minute", "* * * * *", "", time.Date(2026, 1, 15, 10, 1, 0, 0, time.UTC)},
		{"seconds field", "*/10 * * * * *", "", time.Date(2026, 1, 15, 10, 0, 40, 0, time.UTC)},
		{"descriptor", "@hourly", "", time.Date(2026, 1, 15, 11, 0, 0, 0, time.UTC)},
		{"time zone", "0 9 * * *", "Europe/Paris", time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC)},
		{"time zone west of UTC", "0 9 * * *", "America/New_York", time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)},
		{"bad field", "61 * * * *", "", time.Time{}},
		{"too few fields", "* *", "", time.Time{}},
		{"never fires", "0 0 30 2 *", "", time.Time{}},
		{"unknown zone", "* * * * *", "Mars/Olympus", time.Time{}},
		{"zone in the expression", "CRON_TZ=UTC * * * * *", "", time.Time{}},
		{"empty", "", "", time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, err := cron.Parse(c.expr, c.tz)
			if c.next.IsZero() {
				if !errors.Is(err, lifecycle.ErrValidation) {
					t.Fatalf("Parse(%q, %q) = %v, want a validation error", c.expr, c.tz, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Next(from); !got.Equal(c.next) {
				t.Fatalf("Next = %s, want %s", got, c.next)
			}
		})
	}
}

func TestDue(t *testing.T) {
	t.Parallel()
	e, err := cron.Parse("*/5 * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 15, 10, 1, 0, 0, time.UTC)
	at := func(m int) time.Time { return time.Date(2026, 1, 15, 10, m, 0, 0, time.UTC) }
	last := at(5)
	cases := []struct {
		name   string
		s      store.Schedule
		now    time.Time
		expect []time.Time
	}{
		{"nothing due yet", store.Schedule{CreatedAt: created}, at(4), nil},
		{"first tick", store.Schedule{CreatedAt: created}, at(5), []time.Time{at(5)}},
		{"same tick again", store.Schedule{CreatedAt: created, LastTick: &last}, at(9), nil},
		{"missed ticks: the latest once", store.Schedule{CreatedAt: created, LastTick: &last}, at(21), []time.Time{at(20)}},
		{"failover: the ticks within grace", store.Schedule{CreatedAt: created, LastTick: &last}, at(10).Add(50 * time.Second), []time.Time{at(10)}},
		{"missed ticks: all", store.Schedule{CreatedAt: created, LastTick: &last, Missed: store.MissedAll}, at(21), []time.Time{at(10), at(15), at(20)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, _ := cron.Due(e, c.s, c.now, cron.DefaultGrace)
			if len(got) != len(c.expect) {
				t.Fatalf("Due = %v, want %v", got, c.expect)
			}
			for i := range got {
				if !got[i].Equal(c.expect[i]) {
					t.Fatalf("Due = %v, want %v", got, c.expect)
				}
			}
		})
	}
}
