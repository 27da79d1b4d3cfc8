package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RateStart is one claim's starts in a rate-limited queue (or kind): n
// jobs started at At.
type RateStart struct {
	At time.Time
	N  int
}

// RateLog is the sliding window of a rate limit: the starts of the last
// interval, oldest first. A claim admits only as many jobs as leave at most
// RateLimit starts in the interval that ends at its time, so no interval of
// that length, wherever it begins, holds more than RateLimit starts (a
// fixed window let up to twice as many through across its boundary). The
// log holds at most RateLimit entries: one per claim that started jobs.
type RateLog []RateStart

// Since returns the starts after t (those of the interval ending now when t
// is now minus the interval).
func (l RateLog) Since(t time.Time) RateLog {
	for i, s := range l {
		if s.At.After(t) {
			return l[i:]
		}
	}
	return nil
}

// Count is the number of starts in l.
func (l RateLog) Count() int {
	n := 0
	for _, s := range l {
		n += s.N
	}
	return n
}

// Add records n starts at t (kept in time order, merged with a start at the
// same time).
func (l RateLog) Add(t time.Time, n int) RateLog {
	if n <= 0 {
		return l
	}
	out := append(RateLog(nil), l...)
	i := len(out)
	for i > 0 && out[i-1].At.After(t) {
		i-- // a clock that went back: keep the order, the entry still counts
	}
	if i > 0 && out[i-1].At.Equal(t) {
		out[i-1].N += n
		return out
	}
	return append(out[:i], append(RateLog{{At: t, N: n}}, out[i:]...)...)
}

// String encodes l for a queues row: "unixmicro:n,..." (empty for none).
func (l RateLog) String() string {
	var b strings.Builder
	for i, s := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s.At.UnixMicro(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(s.N))
	}
	return b.String()
}

// ParseRateLog decodes what [RateLog.String] wrote.
func ParseRateLog(s string) (RateLog, error) {
	if s == "" {
		return nil, nil
	}
	var out RateLog
	for item := range strings.SplitSeq(s, ",") {
		at, n, ok := strings.Cut(item, ":")
		micros, err1 := strconv.ParseInt(at, 10, 64)
		count, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || count < 1 {
			return nil, fmt.Errorf("rate log entry %q: want unixmicro:count", item)
		}
		out = append(out, RateStart{At: time.UnixMicro(micros).UTC(), N: count})
	}
	return out, nil
}
