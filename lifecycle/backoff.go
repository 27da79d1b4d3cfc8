package lifecycle

import (
	"hash/fnv"
	"math"
	"strconv"
	"time"
)

// Backoff is an exponential retry schedule with deterministic jitter.
type Backoff struct {
	// Base is the delay before the first retry. Defaults to 500ms.
	Base time.Duration
	// Factor multiplies the delay after each attempt. Defaults to 2.
	Factor float64
	// Max caps the delay. Defaults to 60s.
	Max time.Duration
}

// DefaultBackoff is the schedule used when none is configured.
var DefaultBackoff = Backoff{Base: 500 * time.Millisecond, Factor: 2, Max: 60 * time.Second}

// OrDefault fills zero fields from [DefaultBackoff].
func (b Backoff) OrDefault() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Factor < 1 {
		b.Factor = DefaultBackoff.Factor
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff.Max
	}
	return b
}

// Delay returns the wait before the retry that follows attempt (1-based).
// The exponential delay d is capped at Max, then jittered into [d/2, d]. The
// jitter is seeded by (jobID, attempt), so the same job and attempt always
// get the same delay and a schedule can be reproduced.
func (b Backoff) Delay(jobID string, attempt int) time.Duration {
	b = b.OrDefault()
	if attempt < 1 {
		attempt = 1
	}
	d := float64(b.Base) * math.Pow(b.Factor, float64(attempt-1))
	if d > float64(b.Max) || math.IsInf(d, 0) {
		d = float64(b.Max)
	}
	half := time.Duration(d / 2)
	h := fnv.New64a()
	h.Write([]byte(jobID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	return half + time.Duration(h.Sum64()%uint64(half+1))
}
