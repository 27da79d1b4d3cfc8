package store

import (
	"context"
	"strings"

	"github.com/stint-dev/stint/lifecycle"
)

// kindPrefix starts the name of the settings row that holds a kind's rate
// limit. Queue names cannot contain '@', so the rows never meet a queue's.
const kindPrefix = "@kind:"

// KindLimitName names the settings row of kind's rate limit: give it to
// QueueLimit (with RateLimit and RateInterval only) to limit the starts of
// kind across every queue.
func KindLimitName(kind string) string { return kindPrefix + kind }

// limitedKind returns the kind a settings row name limits, if it is one.
func limitedKind(name string) (string, bool) { return strings.CutPrefix(name, kindPrefix) }

// kindRates drops from jobs (in claim order) the starts that would exceed
// their kind's rate limit in its current window, and counts the rest in
// the window. Each limited kind's row is locked, like a limited queue's.
// Kinds without a limit, and claims when no kind is limited, cost nothing.
func kindRates(ctx context.Context, qt QueueTx, q ClaimQuery, kinds map[string]bool, jobs []lifecycle.Job) ([]lifecycle.Job, error) {
	room := map[string]*QueueSettings{}
	out := jobs[:0:0]
	for _, j := range jobs {
		if !kinds[j.Kind] {
			out = append(out, j)
			continue
		}
		s, ok := room[j.Kind]
		if !ok {
			got, _, err := qt.QueueGet(ctx, KindLimitName(j.Kind))
			if err != nil {
				return nil, err
			}
			got.Name = KindLimitName(j.Kind)
			if window := q.Now.Truncate(got.RateInterval); got.RateLimit > 0 && !got.RateWindow.Equal(window) {
				got.RateWindow, got.RateCount = window, 0
			}
			s = &got
			room[j.Kind] = s
		}
		if s.RateLimit > 0 && s.RateCount >= s.RateLimit {
			continue // over the kind's rate: stays queued for a later window
		}
		s.RateCount++
		out = append(out, j)
	}
	for _, s := range room {
		if err := qt.QueuePut(ctx, *s); err != nil {
			return nil, err
		}
	}
	return out, nil
}
