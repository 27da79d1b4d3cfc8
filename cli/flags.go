package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stint-dev/stint/lifecycle"
)

// Flag values that check their input as the command line is parsed, so a
// bad value is rejected before anything is opened. pflag prefixes their
// errors with the flag and the value ("invalid argument "x" for "--priority"
// flag: "); each error says what is expected.

// priorityFlag reads an integer priority or a priority name.
type priorityFlag struct{ p *int }

var _ pflag.Value = priorityFlag{}

func (f priorityFlag) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f priorityFlag) Set(s string) error {
	n, err := lifecycle.ParsePriority(s)
	if err != nil {
		return fmt.Errorf("expected an integer from %d to %d, or critical, interactive, default or batch",
			-lifecycle.MaxPriority, lifecycle.MaxPriority)
	}
	*f.p = n
	return nil
}

func (priorityFlag) Type() string { return "priority" }

// timeFlag reads an RFC 3339 time into a *time.Time.
type timeFlag struct{ t **time.Time }

func (f timeFlag) String() string {
	if f.t == nil || *f.t == nil {
		return ""
	}
	return (*f.t).Format(time.RFC3339Nano)
}

func (f timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errors.New("expected an RFC 3339 time such as 2026-01-02T15:04:05Z or 2026-01-02T15:04:05+02:00")
	}
	*f.t = &t
	return nil
}

func (timeFlag) Type() string { return "time" }

// durationFlag reads a non-negative Go duration.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return errors.New("expected a non-negative duration such as 30s, 5m or 1h30m")
	}
	*f.d = d
	return nil
}

func (durationFlag) Type() string { return "duration" }

// intFlag reads an integer within [min, max].
type intFlag struct {
	p        *int
	min, max int
}

func (f intFlag) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.Itoa(*f.p)
}

func (f intFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return fmt.Errorf("expected an integer from %d to %d", f.min, f.max)
	}
	*f.p = n
	return nil
}

func (intFlag) Type() string { return "int" }

// statesFlag reads lifecycle states, comma-separated or repeated.
type statesFlag struct{ p *[]lifecycle.State }

func (f statesFlag) String() string {
	if f.p == nil {
		return ""
	}
	names := make([]string, len(*f.p))
	for i, s := range *f.p {
		names[i] = string(s)
	}
	return strings.Join(names, ",")
}

func (f statesFlag) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		st, err := lifecycle.ParseState(strings.TrimSpace(name))
		if err != nil {
			return fmt.Errorf("unknown state %q: expected one of %s", name, stateNames())
		}
		*f.p = append(*f.p, st)
	}
	return nil
}

func (statesFlag) Type() string { return "states" }

func stateNames() string {
	names := make([]string, len(lifecycle.States))
	for i, s := range lifecycle.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
