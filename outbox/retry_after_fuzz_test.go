package outbox

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter: whatever a receiver puts in Retry-After, the wait read
// from it is never negative; a number of seconds is that many seconds, or
// the longest wait when it is too large for a Duration (a product that
// wrapped around would retry a receiver that asked for days at once).
func FuzzRetryAfter(f *testing.F) {
	for _, seed := range []string{"", "0", "120", " 7 ", "-1", "1e3", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", "9223372036854775807", "18446744073709551616", "9223372037", "x"} {
		f.Add(seed)
	}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h string) {
		got := retryAfter(h, now)
		if got < 0 {
			t.Fatalf("Retry-After %q: wait %v", h, got)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64)
		if err != nil || n < 0 {
			return
		}
		want := time.Duration(math.MaxInt64)
		if n <= math.MaxInt64/int64(time.Second) {
			want = time.Duration(n) * time.Second
		}
		if got != want {
			t.Fatalf("Retry-After %q: wait %v, want %v", h, got, want)
		}
	})
}
