package cron

import (
	"fmt"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// parser reads five fields, an optional leading seconds field, and the
// descriptors (@hourly, @every 5m, ...).
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom |
	robfig.Month | robfig.Dow | robfig.Descriptor)

// Expr is a parsed cron expression in its time zone.
type Expr struct {
	s   robfig.Schedule
	loc *time.Location
}

// Parse reads expr in the IANA time zone tz (empty is UTC). A bad
// expression or zone is an [lifecycle.ErrValidation] error saying what to
// write instead.
func Parse(expr, tz string) (e Expr, err error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Expr{}, lifecycle.Validationf("cron expression %q: give the time zone on its own (--tz), not in the expression", expr)
	}
	loc := time.UTC
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return Expr{}, lifecycle.Validationf("time zone %q is unknown: use an IANA name such as Europe/Paris or America/New_York", tz)
		}
	}
	defer func() {
		// The parser has panicked on some malformed input; a bad
		// expression must be a validation error, never a crash.
		if r := recover(); r != nil {
			e, err = Expr{}, lifecycle.Validationf("cron expression %q cannot be parsed: %v", expr, r)
		}
	}()
	s, err := parser.Parse(expr)
	if err != nil {
		return Expr{}, lifecycle.Validationf("cron expression %q: %v; write five fields (minute hour day-of-month month day-of-week), six with seconds first, or @hourly, @daily, @every 10m", expr, err)
	}
	if e := (Expr{s: s, loc: loc}); e.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return Expr{}, lifecycle.Validationf("cron expression %q never fires (no such date)", expr)
	}
	return Expr{s: s, loc: loc}, nil
}

// Next returns the first tick after t, in UTC; zero when there is none
// within five years.
func (e Expr) Next(t time.Time) time.Time {
	n := e.s.Next(t.In(e.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// Check validates a schedule: its expression and time zone, and the job it
// enqueues.
func Check(s store.Schedule) error {
	// A schedule's job has no deadline, so the time it is checked at does
	// not matter.
	if err := s.Validate(time.Time{}); err != nil {
		return fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	if _, err := Parse(s.Expr, s.TimeZone); err != nil {
		return fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	return nil
}
