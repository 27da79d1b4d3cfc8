package maintenance

import (
	"strings"
	"testing"
	"time"
)

// A bad Config is an error from New that names the field, never a panic later.
func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"negative interval", Config{Scheduler: SchedulerConfig{Interval: -time.Second}}, "scheduler: Interval"},
		{"limit above the store's batch", Config{Reaper: ReaperConfig{Limit: 20000}}, "reaper: Limit"},
		{"negative limit", Config{Retention: RetentionConfig{Limit: -1}}, "retention: Limit"},
		{"timeouts interval", Config{Timeouts: TimeoutsConfig{Interval: -1}}, "timeouts: Interval"},
		{"cancel finalizer limit", Config{CancelFinalizer: CancelFinalizerConfig{Limit: -3}}, "cancel finalizer: Limit"},
		{"negative TTL", Config{Election: ElectorConfig{TTL: -time.Second}}, "TTL"},
		{"margin eats the TTL", Config{Election: ElectorConfig{TTL: 10 * time.Second, SafetyMargin: 5 * time.Second}}, "SafetyMargin"},
		{"negative margin", Config{Election: ElectorConfig{SafetyMargin: -time.Second}}, "SafetyMargin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(nil, &tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// The zero Config takes the documented defaults.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	checks := []struct {
		name      string
		got, want any
	}{
		{"scheduler interval", c.Scheduler.Interval, time.Second},
		{"reaper interval", c.Reaper.Interval, time.Second},
		{"timeouts interval", c.Timeouts.Interval, time.Second},
		{"budget interval", c.Timeouts.BudgetInterval, 5 * time.Second},
		{"cancel finalizer interval", c.CancelFinalizer.Interval, time.Second},
		{"retention interval", c.Retention.Interval, time.Minute},
		{"retention", c.Retention.Retention, 7 * 24 * time.Hour},
		{"heartbeat retention", c.Retention.HeartbeatRetention, 24 * time.Hour},
		{"limit", c.Reaper.Limit, 1000},
		{"seat", c.Election.Seat, "maintenance"},
		{"leader TTL", c.Election.TTL, 15 * time.Second},
		{"safety margin", c.Election.SafetyMargin, 3 * time.Second},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if c.Election.ID == "" || c.Scheduler.Clock == nil || c.Scheduler.Logger == nil {
		t.Errorf("ID, Clock and Logger not defaulted: %+v", c.Election)
	}
	if e := must(NewElector(nil, nil)); e.renew != 5*time.Second || e.retry != 3*time.Second {
		t.Errorf("renew every %s and retry every %s, want 5s and 3s", e.renew, e.retry)
	}
}
