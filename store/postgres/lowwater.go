package postgres

import (
	"strings"
	"sync"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// The claim's low-water mark.
//
// A claim walks the claim index of a queue in claim order and stops at the
// first rows it can lock. While a long transaction holds the xmin horizon,
// every job claimed since the horizon was taken leaves an entry at the head
// of that walk that is dead to every claimer but cannot be removed, and
// index scans cannot mark it killed: each claim then steps over all of
// them (tens of thousands after a minute at 1,000 jobs/s). So the driver
// remembers, per queue and claim filter, a key below which it believes no
// job is claimable, and each claim seeks to it instead of starting at the
// head of the queue.
//
// Correctness never depends on the mark being high; a mark too low only
// costs a longer walk. Whatever makes a job claimable with a key below a
// mark lowers the mark, after the fact is visible to new snapshots:
//   - a transaction of this driver that writes a job into state queued
//     lowers the marks of its queue once it has committed (tx.finish);
//   - it also sends the key in its queue's notification, so that the
//     listeners of other processes lower theirs (notify.go);
//   - a claim that rolls back lowers the marks to the jobs it had locked;
//   - a listener that lost its connection forgets every mark;
//   - a probe, in the background, reads the true first queued key of each
//     queue without locking and lowers the marks to it (lowwater_probe.go),
//     for what no notice reached: a claimer of another process that locked
//     jobs and rolled back, lost notifications, or DisableNotify.
//
// A claim advances the mark to the first job it returned of each queue, or
// to the lowest key lowered while it ran if that is lower: a job committed
// after the claim's snapshot was taken, with a key between the old mark and
// the claim's first job, would otherwise be left behind the new mark.

// claimKey is a position in a queue's claim order: priority descending,
// then created_at, then id.
type claimKey struct {
	priority int
	at       time.Time
	id       string
}

// less orders keys in claim order. Ids compare bytewise; keys the driver
// lowers to carry the empty id, the least in every collation, so an id
// comparison never has to agree with the database's collation of two
// non-empty ids.
func (k claimKey) less(o claimKey) bool {
	if k.priority != o.priority {
		return k.priority > o.priority
	}
	if !k.at.Equal(o.at) {
		return k.at.Before(o.at)
	}
	return k.id < o.id
}

// lowKey is the key a mark is lowered to for a job: at or below the row's
// key as PostgreSQL stores it (which rounds created_at to microseconds).
func lowKey(j *lifecycle.Job) claimKey {
	return claimKey{priority: j.Priority, at: j.CreatedAt.Truncate(time.Microsecond)}
}

// maxMarkFilters bounds the claim filters (kinds and topics) remembered per
// queue; a claim with a filter beyond them walks from the head.
const maxMarkFilters = 32

// lowWater holds a driver's marks and the claims in flight.
type lowWater struct {
	mu sync.Mutex
	// marks maps a queue to its marks, one per claim filter.
	marks   map[string]map[string]claimKey
	flights map[*flight]struct{}
}

func newLowWater() *lowWater {
	return &lowWater{marks: map[string]map[string]claimKey{}, flights: map[*flight]struct{}{}}
}

// flight is a claim of one queue with one filter, from the moment it read
// the mark until its transaction ends.
type flight struct {
	queue, filter string
	// floor is the lowest key lowered for the queue since the claim read
	// the mark; bottom means it was lowered to the head of the queue.
	floor  claimKey
	floors bool
	bottom bool
	// first is the first job the claim returned of the queue.
	first claimKey
	got   bool
}

// filterKey names a claim filter: jobs of other kinds or topics do not
// stop the claim's walk, so each filter has a mark of its own.
func filterKey(kinds, topics []string) string {
	return strings.Join(kinds, "\x00") + "\x01" + strings.Join(topics, "\x00")
}

// begin registers a claim of queue with filter and returns the mark to
// seek to, if there is one.
func (lw *lowWater) begin(queue, filter string) (*flight, claimKey, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	f := &flight{queue: queue, filter: filter}
	lw.flights[f] = struct{}{}
	k, ok := lw.marks[queue][filter]
	return f, k, ok
}

// end ends a claim: after its transaction committed, the mark advances to
// the first job it returned (or to the lowest key lowered meanwhile); after
// a rollback, the jobs it locked are claimable again and lower the marks.
func (lw *lowWater) end(f *flight, committed bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	delete(lw.flights, f)
	if !f.got {
		return
	}
	if !committed {
		lw.lowerLocked(f.queue, claimKey{priority: f.first.priority, at: f.first.at}, false)
		return
	}
	if f.bottom {
		return
	}
	k := f.first
	if f.floors && f.floor.less(k) {
		k = f.floor
	}
	m := lw.marks[f.queue]
	if m == nil {
		m = map[string]claimKey{}
		lw.marks[f.queue] = m
	}
	if _, ok := m[f.filter]; ok || len(m) < maxMarkFilters {
		m[f.filter] = k
	}
}

// lower lowers the marks of queue to k, and the floor of every claim of it
// in flight; bottom forgets the marks instead.
func (lw *lowWater) lower(queue string, k claimKey, bottom bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.lowerLocked(queue, k, bottom)
}

func (lw *lowWater) lowerLocked(queue string, k claimKey, bottom bool) {
	if m := lw.marks[queue]; m != nil {
		for filter, mark := range m {
			if bottom {
				delete(m, filter)
			} else if k.less(mark) {
				m[filter] = k
			}
		}
	}
	for f := range lw.flights {
		if f.queue != queue {
			continue
		}
		switch {
		case bottom:
			f.bottom = true
		case !f.floors || k.less(f.floor):
			f.floor, f.floors = k, true
		}
	}
}

// forget drops every mark and sends every claim in flight to the head of
// its queue: notifications may have been lost.
func (lw *lowWater) forget() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	clear(lw.marks)
	for f := range lw.flights {
		f.bottom = true
	}
}

// queues returns the queues that have marks.
func (lw *lowWater) queues() []string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var out []string
	for q, m := range lw.marks {
		if len(m) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// mark returns the mark of queue for the claim filter of kinds and topics.
func (lw *lowWater) mark(queue string, kinds, topics []string) (claimKey, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	k, ok := lw.marks[queue][filterKey(kinds, topics)]
	return k, ok
}
