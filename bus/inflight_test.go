package bus

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// The records kept for results and last events are bounded: a job with a
// large payload or result is read instead, and at most maxFinal records
// wait for their last events.
func TestKeptRecordsAreBounded(t *testing.T) {
	t.Parallel()
	until := time.Unix(1000, 0)
	t.Run("dispatched", func(t *testing.T) {
		t.Parallel()
		f := newInflight()
		f.add(lifecycle.Job{ID: "small", Payload: []byte(`{"q":"hi"}`)}, until)
		f.add(lifecycle.Job{ID: "large", Payload: bytes.Repeat([]byte("x"), maxHeldBytes+1)}, until)
		if _, ok := f.held("small"); !ok {
			t.Fatal("a small job's record is not kept")
		}
		if _, ok := f.held("large"); ok {
			t.Fatal("a large job's record is kept")
		}
		if f.size() != 2 {
			t.Fatalf("%d jobs out, want 2: a job not kept still takes its slot", f.size())
		}
	})
	t.Run("finals", func(t *testing.T) {
		t.Parallel()
		c := newEventCache()
		for i := range maxFinal + 10 {
			c.final(lifecycle.Job{ID: fmt.Sprint(i), State: lifecycle.Succeeded, Result: []byte(`1`)})
		}
		c.final(lifecycle.Job{ID: "large", State: lifecycle.Succeeded, Result: bytes.Repeat([]byte("x"), maxHeldBytes+1)})
		if c.finals != maxFinal {
			t.Fatalf("%d records kept, want %d", c.finals, maxFinal)
		}
		if i, ok := c.get("large"); !ok || i.last != nil {
			t.Fatalf("a large result: %+v %v, want its topic and job_id only", i, ok)
		}
		c.forget("0")
		c.put("1", eventInfo{jobID: "1"})
		if c.finals != maxFinal-2 {
			t.Fatalf("%d records after a forget and a replace, want %d", c.finals, maxFinal-2)
		}
	})
}
