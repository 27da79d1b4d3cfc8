package lifecycle_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// nominal is the delay before jitter: Base*Factor^(attempt-1), capped at Max.
func nominal(b lifecycle.Backoff, attempt int) time.Duration {
	b = b.OrDefault()
	d := float64(b.Base) * math.Pow(b.Factor, float64(attempt-1))
	if d > float64(b.Max) {
		return b.Max
	}
	return time.Duration(d)
}

func jobIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("job-%d", i)
	}
	return ids
}

func TestBackoffDefaults(t *testing.T) {
	t.Parallel()
	want := lifecycle.Backoff{Base: 500 * time.Millisecond, Factor: 2, Max: 60 * time.Second}
	if lifecycle.DefaultBackoff != want {
		t.Fatalf("DefaultBackoff = %+v, want %+v (DESIGN.md: 500 ms, 2, 60 s)", lifecycle.DefaultBackoff, want)
	}
	cases := []struct {
		name string
		in   lifecycle.Backoff
		want lifecycle.Backoff
	}{
		{"zero", lifecycle.Backoff{}, want},
		{"negative fields", lifecycle.Backoff{Base: -1, Factor: -2, Max: -3}, want},
		{"factor below 1", lifecycle.Backoff{Factor: 0.5}, want},
		{"only base", lifecycle.Backoff{Base: time.Second}, lifecycle.Backoff{Base: time.Second, Factor: 2, Max: time.Minute}},
		{"factor 1 is kept", lifecycle.Backoff{Factor: 1}, lifecycle.Backoff{Base: 500 * time.Millisecond, Factor: 1, Max: time.Minute}},
		{"complete", lifecycle.Backoff{Base: time.Second, Factor: 3, Max: time.Hour}, lifecycle.Backoff{Base: time.Second, Factor: 3, Max: time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.OrDefault(); got != tc.want {
				t.Errorf("OrDefault() = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("zero schedule delays as the default", func(t *testing.T) {
		t.Parallel()
		for attempt := 1; attempt <= 12; attempt++ {
			if z, d := (lifecycle.Backoff{}).Delay("job-9", attempt), lifecycle.DefaultBackoff.Delay("job-9", attempt); z != d {
				t.Errorf("attempt %d: zero Backoff %s, DefaultBackoff %s", attempt, z, d)
			}
		}
	})
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	schedules := []lifecycle.Backoff{
		lifecycle.DefaultBackoff,
		{Base: time.Second, Factor: 3, Max: 10 * time.Minute},
		{Base: 100 * time.Millisecond, Factor: 1.5, Max: 5 * time.Second},
		{Base: time.Second, Factor: 1, Max: time.Second},
	}
	for _, b := range schedules {
		t.Run(fmt.Sprintf("%s*%g^n<=%s", b.Base, b.Factor, b.Max), func(t *testing.T) {
			t.Parallel()
			for _, id := range jobIDs(40) {
				for _, attempt := range []int{1, 2, 3, 4, 5, 8, 12, 20, 64, 1000, 5000} {
					d, want := b.Delay(id, attempt), nominal(b, attempt)
					if d < want/2 || d > want {
						t.Fatalf("Delay(%s, %d) = %s, want within [%s, %s]", id, attempt, d, want/2, want)
					}
					if d > b.Max {
						t.Fatalf("Delay(%s, %d) = %s exceeds Max %s", id, attempt, d, b.Max)
					}
					if again := b.Delay(id, attempt); again != d {
						t.Fatalf("Delay(%s, %d) is not deterministic: %s then %s", id, attempt, d, again)
					}
				}
			}
		})
	}
}

func TestBackoffGrowsWithAttempt(t *testing.T) {
	t.Parallel()
	b := lifecycle.DefaultBackoff
	for _, id := range jobIDs(40) {
		// With factor 2 the jittered ranges [d/2, d] of consecutive attempts
		// touch, so delays never shrink until the cap is reached (attempt 8).
		for attempt := 1; attempt < 7; attempt++ {
			if d1, d2 := b.Delay(id, attempt), b.Delay(id, attempt+1); d2 < d1 {
				t.Errorf("%s: attempt %d waits %s, attempt %d only %s", id, attempt, d1, attempt+1, d2)
			}
		}
		if first, capped := b.Delay(id, 1), b.Delay(id, 50); capped <= first || capped < b.Max/2 {
			t.Errorf("%s: attempt 1 waits %s, attempt 50 %s; want growth up to [Max/2, Max]", id, first, capped)
		}
	}
}

func TestBackoffJitter(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for _, id := range jobIDs(50) {
		seen[lifecycle.DefaultBackoff.Delay(id, 3)] = true
	}
	if len(seen) < 10 {
		t.Errorf("50 jobs got only %d distinct delays for attempt 3: the jitter does not spread them", len(seen))
	}
	if a, b := lifecycle.DefaultBackoff.Delay("job-1", 0), lifecycle.DefaultBackoff.Delay("job-1", 1); a != b {
		t.Errorf("attempt 0 waits %s, want the attempt-1 delay %s", a, b)
	}
}
