package dashboard

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// The history cache keeps a day of minutes. It is read whole once, then
// each refresh reads only the last few minutes again (events commit a
// little after their time), so a refresh costs a query over minutes, not a
// day; and nothing of it runs unless someone looks at the charts.
const (
	historyKeep    = 24 * time.Hour
	historyReread  = 3 * time.Minute
	historyFresh   = 10 * time.Second
	historyTimeout = 30 * time.Second
)

// historyCache holds the minutes read so far, refreshed in the background
// when a page asks for it and it is older than historyFresh.
type historyCache struct {
	reader store.HistoryReader
	clock  clock.Clock

	mu         sync.Mutex
	minutes    map[int64][]store.HistoryMinute // by epoch minute
	queued     map[string]int
	at         time.Time // the store's clock at the last read
	readAt     time.Time // this process's clock at the last read
	refreshing bool
	err        error
}

// snapshot is what one page draws from: a copy of the cache's state.
type historySnapshot struct {
	at      time.Time
	queued  map[string]int
	minutes map[int64][]store.HistoryMinute
}

// get returns the cache, reading it first when it holds nothing yet and
// starting a background refresh when it is stale.
func (c *historyCache) get(ctx context.Context) (historySnapshot, error) {
	c.mu.Lock()
	empty := c.at.IsZero()
	stale := c.clock.Now().Sub(c.readAt) > historyFresh
	if !empty && stale && !c.refreshing {
		c.refreshing = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), historyTimeout)
			defer cancel()
			c.refresh(ctx)
		}()
	}
	c.mu.Unlock()
	if empty {
		c.refresh(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return historySnapshot{}, c.err
	}
	return historySnapshot{at: c.at, queued: c.queued, minutes: c.minutes}, nil
}

// refresh reads the minutes since the last read (less historyReread), or
// the whole day, and swaps them in.
func (c *historyCache) refresh(ctx context.Context) {
	c.mu.Lock()
	since := c.clock.Now().Add(-historyKeep)
	if !c.at.IsZero() {
		since = c.at.Add(-historyReread)
	}
	c.mu.Unlock()
	h, err := c.reader.HistoryRead(ctx, since)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	c.err = err
	if err != nil {
		return
	}
	// Copy on write: snapshots handed out keep their map.
	from := since.Truncate(time.Minute).Unix() / 60
	oldest := h.At.Add(-historyKeep).Unix()/60 - 1
	next := make(map[int64][]store.HistoryMinute, len(c.minutes)+len(h.Minutes))
	for m, qs := range c.minutes {
		if m < from && m >= oldest {
			next[m] = qs
		}
	}
	for _, m := range h.Minutes {
		k := m.Minute.Unix() / 60
		next[k] = append(next[k], m)
	}
	c.minutes, c.queued, c.at, c.readAt = next, h.Queued, h.At, c.clock.Now()
}

// historyWindows are the spans the page offers, and the width of each bar.
var historyWindows = map[string]struct{ span, step time.Duration }{
	"hour": {time.Hour, time.Minute},
	"day":  {24 * time.Hour, 15 * time.Minute},
}

// historySeries is the history of one queue or of all the viewer's, one
// value per step, oldest first: counts per minute, the depth at the step's
// end, and latency percentiles in milliseconds (nil where nothing was
// timed).
type historySeries struct {
	Window      string     `json:"window"`
	Queue       string     `json:"queue"`
	StepSeconds int        `json:"step_seconds"`
	At          time.Time  `json:"at"`
	Queues      []string   `json:"queues"`
	Times       []int64    `json:"times"` // each step's start, Unix milliseconds
	Succeeded   []float64  `json:"succeeded"`
	Failed      []float64  `json:"failed"`
	Dead        []float64  `json:"dead_lettered"`
	Depth       []int      `json:"depth"`
	PickupP50   []*float64 `json:"pickup_p50"`
	PickupP99   []*float64 `json:"pickup_p99"`
	RunP50      []*float64 `json:"run_p50"`
	RunP99      []*float64 `json:"run_p99"`
	Totals      struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		Dead      int `json:"dead_lettered"`
	} `json:"totals"`
}

// history serves the charts' data: ?window=hour|day and ?queue= (empty:
// all the viewer's queues).
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	v, q := viewerOf(r.Context()), r.URL.Query()
	name := q.Get("window")
	if name == "" {
		name = "hour"
	}
	win, ok := historyWindows[name]
	if !ok {
		writeError(w, http.StatusBadRequest, "window "+quoteShort(name)+": use hour or day")
		return
	}
	queue := q.Get("queue")
	if len(queue) > maxField || (queue != "" && !v.ownsQueue(queue)) {
		writeError(w, http.StatusNotFound, "queue "+quoteShort(queue)+" not found")
		return
	}
	if h.hist == nil {
		writeError(w, http.StatusNotImplemented, "this store keeps no history")
		return
	}
	snap, err := h.hist.get(r.Context())
	if err != nil {
		if errors.Is(err, store.ErrUnsupported) {
			writeError(w, http.StatusNotImplemented, "this store keeps no history")
		} else {
			storeError(w, err)
		}
		return
	}
	keep := func(name string) bool { return v.ownsQueue(name) && (queue == "" || name == queue) }
	writeJSON(w, buildSeries(snap, name, win.span, win.step, queue, keep, v.ownsQueue))
}

// buildSeries folds the cached minutes of the kept queues into steps.
func buildSeries(snap historySnapshot, window string, span, step time.Duration, queue string,
	keep, owns func(string) bool) historySeries {
	perStep := int64(step / time.Minute)
	end := snap.at.Truncate(step).Add(step) // the current step's end
	start := end.Add(-span)
	n := int(span / step)
	s := historySeries{Window: window, Queue: queue, StepSeconds: int(step.Seconds()), At: snap.at,
		Times: make([]int64, n), Succeeded: make([]float64, n), Failed: make([]float64, n), Dead: make([]float64, n),
		Depth: make([]int, n), PickupP50: make([]*float64, n), PickupP99: make([]*float64, n),
		RunP50: make([]*float64, n), RunP99: make([]*float64, n), Queues: []string{}}
	seen := map[string]bool{}
	depth := 0
	for q, d := range snap.queued {
		seen[q] = owns(q)
		if keep(q) {
			depth += d
		}
	}
	bins := len(store.LatencyBounds) + 1
	pickup, run := make([][]int, n), make([][]int, n)
	net := make([]int, n) // entered - left in each step
	after := 0            // entered - left since the window's end
	for minute, qs := range snap.minutes {
		at := time.Unix(minute*60, 0)
		for _, m := range qs {
			if !seen[m.Queue] {
				seen[m.Queue] = owns(m.Queue)
			}
			if !keep(m.Queue) {
				continue
			}
			if !at.Before(end) {
				after += m.Entered - m.Left
				continue
			}
			if at.Before(start) {
				continue
			}
			i := int(at.Sub(start) / step)
			s.Succeeded[i] += float64(m.Succeeded)
			s.Failed[i] += float64(m.Failed)
			s.Dead[i] += float64(m.DeadLettered)
			s.Totals.Succeeded += m.Succeeded
			s.Totals.Failed += m.Failed
			s.Totals.Dead += m.DeadLettered
			net[i] += m.Entered - m.Left
			if pickup[i] == nil {
				pickup[i], run[i] = make([]int, bins), make([]int, bins)
			}
			for b := range bins {
				pickup[i][b] += m.Pickup[b]
				run[i][b] += m.Run[b]
			}
		}
	}
	// The depth now, walked back step by step: each step's end had the
	// depth of the next one's end less what that step added.
	d := depth - after
	for i := n - 1; i >= 0; i-- {
		s.Depth[i] = max(d, 0)
		d -= net[i]
	}
	for i := range n {
		s.Times[i] = start.Add(time.Duration(i) * step).UnixMilli()
		s.Succeeded[i] /= float64(perStep)
		s.Failed[i] /= float64(perStep)
		s.Dead[i] /= float64(perStep)
		s.PickupP50[i], s.PickupP99[i] = percentile(pickup[i], 0.5), percentile(pickup[i], 0.99)
		s.RunP50[i], s.RunP99[i] = percentile(run[i], 0.5), percentile(run[i], 0.99)
	}
	for q, mine := range seen {
		if mine {
			s.Queues = append(s.Queues, q)
		}
	}
	slices.Sort(s.Queues)
	return s
}

// percentile reads the p-quantile of a LatencyBounds histogram as the upper
// bound of its bucket (the last bucket, unbounded, reads as the last
// bound); nil for an empty histogram.
func percentile(hist []int, p float64) *float64 {
	total := 0
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return nil
	}
	rank, seen := p*float64(total), 0
	for i, n := range hist {
		seen += n
		if float64(seen) >= rank {
			v := store.LatencyBounds[min(i, len(store.LatencyBounds)-1)]
			return &v
		}
	}
	v := store.LatencyBounds[len(store.LatencyBounds)-1]
	return &v
}
