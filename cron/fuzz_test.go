package cron_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/lifecycle"
)

// FuzzParse feeds arbitrary cron expressions and time zones, as `stint cron
// add` and the API's PutSchedule take them from users: Parse never panics,
// refuses with a validation error, and an expression it takes fires after
// any time it is asked about, later than that time.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 2 * * *", "*/5 * * * * *", "@every 30s", "@hourly", "0 0 30 2 *", "TZ=UTC 0 * * * *", "@every 0s", "1-5/0 * * * *", "60 * * * *"} {
		f.Add(s, "")
		f.Add(s, "Europe/Paris")
	}
	at := time.Date(2030, 3, 31, 1, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, tz string) {
		e, err := cron.Parse(expr, tz)
		if err != nil {
			if !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("Parse(%q, %q): %v is not a validation error", expr, tz, err)
			}
			return
		}
		if next := e.Next(at); !next.IsZero() && !next.After(at) {
			t.Fatalf("Parse(%q, %q).Next(%s) = %s, not later", expr, tz, at, next)
		}
	})
}
