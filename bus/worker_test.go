package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// busWorker is a bus worker as any NATS client would write it: a durable
// pull consumer on the dispatch subjects of filter, answering each job with
// what answer returns (nil: no answer). It runs until the test ends.
type busWorker struct {
	mu   sync.Mutex
	seen []Dispatch
}

func (h *harness) runWorker(filter string, answer func(Dispatch) *JobResult) *busWorker {
	t := h.t
	ctx, cancel := context.WithCancel(context.Background())
	s, err := h.js.Stream(ctx, h.cfg.DispatchStream)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: h.cfg.Name + "-worker", FilterSubject: h.cfg.DispatchPrefix + filter, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	w := &busWorker{}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var d Dispatch
		if err := json.Unmarshal(m.Data(), &d); err != nil {
			t.Errorf("dispatch %s: %v", m.Data(), err)
			return
		}
		w.mu.Lock()
		w.seen = append(w.seen, d)
		w.mu.Unlock()
		if r := answer(d); r != nil {
			h.result(d.Topic, *r)
		}
		_ = m.Ack()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Stop(); cancel() })
	return w
}

// result publishes a bus worker's result.
func (h *harness) result(topic string, r JobResult) {
	data, _ := json.Marshal(r)
	m := nats.NewMsg(h.cfg.ResultPrefix + topic)
	m.Data = data
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.js.PublishMsg(ctx, m); err != nil {
		h.t.Errorf("publish result: %v", err)
	}
}

// succeed answers a dispatch with SUCCEEDED and its token.
func succeed(d Dispatch) *JobResult {
	return &JobResult{JobID: d.JobID, Status: StatusSucceeded, ResultPtr: "s3://out/" + d.JobID, WorkerID: "w1", ExecutionMS: 7,
		StintJobID: d.StintJobID, Attempt: d.Attempt, LeaseID: d.LeaseID}
}

func (h *harness) maintain() {
	m, err := maintenance.New(h.st, &maintenance.Config{SingleNode: true,
		Reaper: maintenance.ReaperConfig{Interval: 100 * time.Millisecond}, Timeouts: maintenance.TimeoutsConfig{Interval: 100 * time.Millisecond}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := m.Start(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(m.Stop)
}

// Jobs of topics served by bus workers go out with their token, and the
// workers' results come back through the lifecycle; every state change
// reaches the event subjects, in revision order per job.
func TestBusWorkers(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	cfg := uniqueConfig(t, machineNATS)
	cfg.WorkerTopics = []string{"job.chat.*"}
	h := newHarness(t, sqliteStore(t, store.Options{}), cfg)
	h.runWorker("job.chat.*", succeed)
	const n = 100
	for i := range n {
		h.publish("job.chat.simple", JobRequest{JobID: fmt.Sprintf("c-%d", i), Payload: []byte(`{"q":1}`)})
	}
	eventually(t, "every job to succeed", func() bool { return testutil.ToFloat64(h.b.m.applied.WithLabelValues("SUCCEEDED")) == n })
	for _, j := range jobs(t, h.st) {
		if j.State != lifecycle.Succeeded || j.ResultPtr != "s3://out/"+j.CorrelationID || j.ExecutionMS != 7 {
			t.Fatalf("job %s: %s %q", j.CorrelationID, j.State, j.ResultPtr)
		}
	}
	// enqueued, claimed, started, succeeded: four state changes per job.
	eventually(t, "every event", func() bool { return len(h.readStream(h.cfg.EventStream, h.cfg.EventPrefix)) == 4*n })
	perJob := map[string][]JobResult{}
	for _, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
		perJob[m.Result.JobID] = append(perJob[m.Result.JobID], m.Result)
	}
	for id, evs := range perJob {
		want := map[int64]Status{1: StatusScheduled, 2: StatusDispatched, 3: StatusRunning, 4: StatusSucceeded}
		for _, e := range evs {
			if want[e.Revision] != e.Status {
				t.Fatalf("job %s revision %d: %s, want %s", id, e.Revision, e.Status, want[e.Revision])
			}
			if e.Status == StatusSucceeded && (e.ResultPtr != "s3://out/"+id || e.ExecutionMS != 7) {
				t.Fatalf("job %s: SUCCEEDED event without its result: %+v", id, e)
			}
		}
	}
	verifyClean(t, h.st)
}

// A result with a stale token is ignored and counted; a result for a
// terminal job is logged and changes nothing.
func TestBusWorkerStaleAndLateResults(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	cfg := uniqueConfig(t, machineNATS)
	cfg.WorkerTopics = []string{"job.chat.*"}
	h := newHarness(t, sqliteStore(t, store.Options{}), cfg)
	got := make(chan Dispatch, 1)
	h.runWorker("job.chat.*", func(d Dispatch) *JobResult { got <- d; return nil })
	h.publish("job.chat.simple", JobRequest{JobID: "a"})
	d := <-got

	stale := *succeed(d)
	stale.LeaseID = "not-the-lease"
	h.result(d.Topic, stale)
	old := *succeed(d)
	old.Attempt = d.Attempt + 1
	h.result(d.Topic, old)
	eventually(t, "the stale results", func() bool { return testutil.ToFloat64(h.b.m.ignored.WithLabelValues(ignoredStale)) == 2 })
	j, err := h.st.JobGet(t.Context(), d.StintJobID)
	if err != nil || j.State != lifecycle.Running || j.Rev != 3 {
		t.Fatalf("a stale result changed the job: %s %v", j.State, err)
	}

	h.result(d.Topic, JobResult{Status: StatusRunning, StintJobID: d.StintJobID, Attempt: d.Attempt, LeaseID: d.LeaseID})
	failed := JobResult{JobID: d.JobID, Status: StatusFailed, ErrorCode: "bad_input", ErrorMessage: "nope", Retryable: new(bool),
		StintJobID: d.StintJobID, Attempt: d.Attempt, LeaseID: d.LeaseID}
	h.result(d.Topic, failed)
	eventually(t, "the failure", func() bool { return testutil.ToFloat64(h.b.m.applied.WithLabelValues("FAILED")) == 1 })
	h.result(d.Topic, *succeed(d)) // late: the job failed for good already
	eventually(t, "the late result", func() bool { return testutil.ToFloat64(h.b.m.ignored.WithLabelValues(ignoredTerminal)) == 1 })
	j, err = h.st.JobGet(t.Context(), d.StintJobID)
	if err != nil || j.State != lifecycle.Failed || j.Error.Code != "bad_input" {
		t.Fatalf("the late result changed a terminal job: %+v %v", j, err)
	}
	h.result(d.Topic, JobResult{Status: "DONE", StintJobID: d.StintJobID, LeaseID: d.LeaseID})
	h.result(d.Topic, JobResult{Status: StatusSucceeded, StintJobID: "no-such-job", LeaseID: "x"})
	eventually(t, "the invalid results", func() bool {
		return testutil.ToFloat64(h.b.m.ignored.WithLabelValues(ignoredInvalid)) == 1 && testutil.ToFloat64(h.b.m.ignored.WithLabelValues(ignoredUnknown)) == 1
	})
	eventually(t, "the FAILED event", func() bool {
		for _, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
			if m.Result.Status == StatusFailed && m.Result.ErrorCode == "bad_input" {
				return true
			}
		}
		return false
	})
	verifyClean(t, h.st)
}

// A dispatched job no worker answers is taken back when its lease runs out
// and retried; with no attempts left it ends TIMEOUT.
func TestBusWorkerNoAnswer(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	cfg := uniqueConfig(t, machineNATS)
	cfg.WorkerTopics = []string{"job.chat.*"}
	cfg.LeaseTTL = 300 * time.Millisecond
	h := newHarness(t, sqliteStore(t, store.Options{}), cfg)
	h.maintain()
	w := h.runWorker("job.chat.*", func(Dispatch) *JobResult { return nil })
	h.publish("job.chat.simple", JobRequest{JobID: "silent", MaxAttempts: 2})
	eventually(t, "the TIMEOUT event", func() bool {
		for _, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
			if m.Result.Status == StatusTimeout && m.Result.JobID == "silent" {
				return true
			}
		}
		return false
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) != 2 || w.seen[0].Attempt != 1 || w.seen[1].Attempt != 2 {
		t.Fatalf("dispatches %+v: want attempts 1 and 2", w.seen)
	}
	verifyClean(t, h.st)
}
