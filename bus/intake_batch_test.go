package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint/store"
)

// A fetched batch of requests is one enqueue transaction, each request
// still exactly once: requests waiting in the stream before the bridge
// starts (copies of some job_ids, and a copy of one with another body,
// inside the same batch) make one job per job_id, in transactions of many
// jobs; the copies count as duplicates and the conflicting one is refused.
func TestIntakeBatches(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	ctx := context.Background()
	cfg := uniqueConfig(t, machineNATS)
	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, cfg.streamConfig(cfg.RequestStream)); err != nil {
		t.Fatal(err)
	}
	const n = 300
	pub := func(req JobRequest) {
		body, _ := json.Marshal(req)
		if _, err := js.Publish(ctx, cfg.TopicPrefix+"job.chat.simple", body); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		req := JobRequest{JobID: fmt.Sprintf("b-%d", i), Payload: []byte(`{"i":1}`)}
		pub(req)
		if i%10 == 0 {
			pub(req) // a copy, byte for byte, in the same fetch
		}
	}
	pub(JobRequest{JobID: "b-5", Payload: []byte(`{"i":2}`)}) // same job_id, another body
	var mu sync.Mutex
	var sizes []int
	h := newHarnessWith(t, sqliteStore(t, store.Options{}), cfg, func(b *Bridge) {
		b.enqueueHook = func(ids []string) {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, len(ids))
		}
	})
	eventually(t, "every request to be taken", func() bool {
		return testutil.ToFloat64(h.b.m.received) >= n+n/10+1 &&
			testutil.ToFloat64(h.b.m.enqueued)+testutil.ToFloat64(h.b.m.duplicates)+testutil.ToFloat64(h.b.m.rejected.WithLabelValues(CodeConflict)) >= n+n/10+1
	})
	all := jobs(t, h.st)
	if len(all) != n {
		t.Fatalf("%d jobs for %d job_ids", len(all), n)
	}
	if e := testutil.ToFloat64(h.b.m.enqueued); e != n {
		t.Fatalf("%v enqueued, want %d", e, n)
	}
	if d := testutil.ToFloat64(h.b.m.duplicates); d < n/10 {
		t.Fatalf("%v duplicates, want at least the %d copies", d, n/10)
	}
	if c := testutil.ToFloat64(h.b.m.rejected.WithLabelValues(CodeConflict)); c != 1 {
		t.Fatalf("%v conflicting duplicates refused, want 1", c)
	}
	for _, j := range all {
		if j.CorrelationID == "b-5" && string(j.Payload) != `{"i":1}` {
			t.Fatalf("the conflicting copy changed b-5: %s", j.Payload)
		}
	}
	mu.Lock()
	largest, total := 0, 0
	for _, s := range sizes {
		largest, total = max(largest, s), total+s
	}
	mu.Unlock()
	if largest < 2 || total < n {
		t.Fatalf("enqueue transactions of sizes %v: want many requests per transaction, every job_id in one", sizes)
	}
	t.Logf("%d requests in %d enqueue transactions (largest %d)", n, len(sizes), largest)
	verifyClean(t, h.st)
}
