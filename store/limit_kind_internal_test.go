package store

import (
	"context"
	"testing"
	"time"
)

// namesTx is a QueueTx that only answers QueueLimitedNames, counting calls.
type namesTx struct {
	QueueTx
	names []string
	reads int
}

func (n *namesTx) QueueLimitedNames(context.Context) ([]string, error) {
	n.reads++
	return n.names, nil
}

// TestLimitedKindsCache: with no limits configured a claim learns so from
// the cached names (read once per refresh) and takes the plain path; a kind
// row shows up as a limited kind, never as a limited queue.
func TestLimitedKindsCache(t *testing.T) {
	l := newLimits()
	l.last = time.Unix(1e9, 0) // as a claim notes its time (see claimed)
	qt := &namesTx{}
	for range 3 {
		queues, kinds, err := l.limited(t.Context(), qt, []string{"a"})
		if err != nil || queues != nil || kinds != nil {
			t.Fatalf("no limits: queues %v kinds %v (%v)", queues, kinds, err)
		}
	}
	if qt.reads != 1 {
		t.Fatalf("read the limited names %d times within one refresh, want 1", qt.reads)
	}
	l.forget()
	qt.names = []string{KindLimitName("sms"), "a"}
	queues, kinds, err := l.limited(t.Context(), qt, []string{"a", "b"})
	if err != nil || !queues["a"] || len(queues) != 1 || !kinds["sms"] || len(kinds) != 1 {
		t.Fatalf("queues %v kinds %v (%v)", queues, kinds, err)
	}
}
