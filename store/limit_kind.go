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

// kindRoom is a limited kind's settings during one claim: the starts its
// log holds in the interval ending now, and those the claim adds.
type kindRoom struct {
	QueueSettings
	used, started int
}

// kindRates drops from jobs (in claim order) the starts that would exceed
// their kind's rate limit in the interval ending now, and logs the rest.
// Each limited kind's row is locked, like a limited queue's. Kinds without
// a limit, and claims when no kind is limited, cost nothing.
func kindRates(ctx context.Context, qt QueueTx, q ClaimQuery, kinds map[string]bool, jobs []lifecycle.Job) ([]lifecycle.Job, error) {
	room := map[string]*kindRoom{}
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
			got.RateLog = got.RateLog.Since(q.Now.Add(-got.RateInterval))
			s = &kindRoom{QueueSettings: got, used: got.RateLog.Count()}
			room[j.Kind] = s
		}
		if s.RateLimit > 0 && s.used+s.started >= s.RateLimit {
			continue // over the kind's rate: stays queued until a start leaves the interval
		}
		s.started++
		out = append(out, j)
	}
	for _, s := range room {
		if s.started == 0 {
			continue
		}
		s.RateLog = s.RateLog.Add(q.Now, s.started)
		if err := qt.QueuePut(ctx, s.QueueSettings); err != nil {
			return nil, err
		}
	}
	return out, nil
}
