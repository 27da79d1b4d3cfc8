package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Declare creates or redefines schedules in s, checking every one before
// writing any. A redefined schedule keeps its last tick, so declaring the
// same schedules at every start (from Go code or a file) fires no tick twice.
func Declare(ctx context.Context, s store.Store, schedules ...store.Schedule) ([]store.Schedule, error) {
	ss, err := store.Schedules(s)
	if err != nil {
		return nil, err
	}
	for _, sc := range schedules {
		if err := Check(sc); err != nil {
			return nil, err
		}
	}
	out := make([]store.Schedule, 0, len(schedules))
	for _, sc := range schedules {
		got, err := ss.SchedulePut(ctx, sc)
		if err != nil {
			return out, fmt.Errorf("schedule %q: %w", sc.Name, err)
		}
		out = append(out, got)
	}
	return out, nil
}

// fileSchedule is one schedule in a file: like store.Schedule, with the
// timeout written as a Go duration ("90s").
type fileSchedule struct {
	Name        string          `json:"name"`
	Expr        string          `json:"expr"`
	TimeZone    string          `json:"time_zone"`
	Missed      string          `json:"missed"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Tenant      string          `json:"tenant"`
	Priority    int             `json:"priority"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts int             `json:"max_attempts"`
	Timeout     string          `json:"timeout"`
	Paused      bool            `json:"paused"`
}

// LoadFile reads schedules from a JSON file: an array of objects with the
// fields name, expr, time_zone, missed, kind, queue, tenant, priority,
// payload, max_attempts, timeout ("90s") and paused. It checks each one.
func LoadFile(path string) ([]store.Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, lifecycle.Validationf("schedules file: %v: check the path", err)
	}
	var fs []fileSchedule
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fs); err != nil {
		return nil, lifecycle.Validationf("schedules file %s: %v; write a JSON array of schedules", path, err)
	}
	out := make([]store.Schedule, 0, len(fs))
	for i, f := range fs {
		var timeout time.Duration
		if f.Timeout != "" {
			if timeout, err = time.ParseDuration(f.Timeout); err != nil {
				return nil, lifecycle.Validationf("schedules file %s, schedule %d: timeout %q: write a duration such as 90s", path, i, f.Timeout)
			}
		}
		s := store.Schedule{Name: f.Name, Expr: f.Expr, TimeZone: f.TimeZone, Missed: f.Missed, Kind: f.Kind,
			Queue: f.Queue, Tenant: f.Tenant, Priority: f.Priority, Payload: f.Payload, MaxAttempts: f.MaxAttempts,
			Timeout: timeout, Paused: f.Paused}
		if err := Check(s); err != nil {
			return nil, fmt.Errorf("schedules file %s: %w", path, err)
		}
		out = append(out, s)
	}
	return out, nil
}
