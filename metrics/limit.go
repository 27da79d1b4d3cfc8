package metrics

import (
	"cmp"
	"slices"
	"sync"
)

// Other is the label value that stands for every queue, kind or other
// user-named value beyond the limit (see [MaxLabelValues]): their series
// are summed under it, so a scrape stays bounded however many names users
// make up. A queue or kind literally named "other" is counted there too.
const Other = "other"

// DefaultMaxLabelValues is how many distinct values each label that comes
// from user input (queue, kind) keeps before the rest are summed under
// [Other].
const DefaultMaxLabelValues = 100

// Option configures [New].
type Option func(*options)

type options struct {
	maxLabelValues int
}

// MaxLabelValues bounds each label that comes from user input (queue and
// kind) to n distinct values. For the job gauges (stint_jobs and the
// oldest job's age) the n deepest queues keep their own series at each
// scrape; for counters and histograms, which must never go back, the first
// n values seen keep theirs. Everything else is summed under [Other].
// n < 1 means [DefaultMaxLabelValues].
func MaxLabelValues(n int) Option {
	return func(o *options) { o.maxLabelValues = n }
}

// labelLimit keeps the first max values of one label seen and names every
// later one [Other]: a counter's series can only grow, so the values that
// have one keep it.
type labelLimit struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func newLabelLimit(max int) *labelLimit {
	return &labelLimit{max: max, seen: map[string]struct{}{}}
}

// value returns v, or [Other] when max other values came first.
func (l *labelLimit) value(v string) string {
	l.mu.RLock()
	_, ok := l.seen[v]
	full := len(l.seen) >= l.max
	l.mu.RUnlock()
	if ok || v == Other {
		return v
	}
	if full {
		return Other
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; !ok {
		if len(l.seen) >= l.max {
			return Other
		}
		l.seen[v] = struct{}{}
	}
	return v
}

// deepest returns the keys of depth with the n largest values (ties by
// name, so scrapes agree), never [Other]: the names that keep their own
// series this scrape.
func deepest(depth map[string]int, n int) map[string]bool {
	names := make([]string, 0, len(depth))
	for k := range depth {
		if k != Other {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(depth[b], depth[a]), cmp.Compare(a, b))
	})
	keep := make(map[string]bool, min(n, len(names)))
	for _, k := range names[:min(n, len(names))] {
		keep[k] = true
	}
	return keep
}
