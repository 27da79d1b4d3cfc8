package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// BenchConfig configures [Bench].
type BenchConfig struct {
	// URL is the NATS server; required.
	URL string
	// Jobs is how many requests to publish. Defaults to 10,000.
	Jobs int
	// Bridge tunes the bridge; its URL, names and subjects are the bench's own.
	Bridge Config
	// Outbox tunes the outbox deliverer that publishes the events (its
	// client is the bridge's).
	Outbox outbox.Config
}

// BenchReport is what [Bench] measured. Times come from the events: a
// request's commit is its enqueued event, its result's its succeeded event.
type BenchReport struct {
	Jobs      int           `json:"jobs"`
	Published time.Duration `json:"published"` // first publish to last publish acked
	Elapsed   time.Duration `json:"elapsed"`   // first publish to last result applied
	JobsPerS  float64       `json:"jobs_per_s"`
	// Commit is publish → job committed; EndToEnd is publish → result applied.
	CommitP50, CommitP99     time.Duration
	EndToEndP50, EndToEndP99 time.Duration
	// EventLagP99 is commit → event received on the bus (the outbox's lag).
	EventLagP99 time.Duration
	Duplicates  float64 `json:"duplicates"`
}

// Bench publishes Jobs JobRequests on a bridge over st with a bus worker
// answering every dispatch SUCCEEDED, and measures the way through:
// published → committed → result applied. It uses streams of its own on
// the server and deletes them afterwards.
func Bench(ctx context.Context, st store.Store, c BenchConfig) (BenchReport, error) {
	if c.Jobs <= 0 {
		c.Jobs = 10_000
	}
	cfg := benchBridge(c)
	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		return BenchReport{}, fmt.Errorf("bench: connect to %s: %w", cfg.URL, err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	defer func() {
		for _, s := range []string{cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream} {
			_ = js.DeleteStream(context.WithoutCancel(ctx), s)
		}
	}()
	b, err := New(st, cfg)
	if err != nil {
		return BenchReport{}, err
	}
	if err := b.Start(ctx); err != nil {
		return BenchReport{}, err
	}
	defer b.Stop()
	oc := c.Outbox
	oc.Client = &http.Client{Transport: b.Transport(nil)}
	if oc.Interval <= 0 {
		oc.Interval = 10 * time.Millisecond
	}
	d, err := outbox.New(st, &oc)
	if err != nil {
		return BenchReport{}, err
	}
	if err := d.Start(ctx); err != nil {
		return BenchReport{}, err
	}
	defer d.Stop()
	w := &benchWatch{committed: map[string]time.Time{}, done: map[string]time.Time{}, lags: nil, all: make(chan struct{}), want: c.Jobs}
	sub, err := nc.Subscribe(cfg.EventPrefix+">", w.event)
	if err != nil {
		return BenchReport{}, err
	}
	defer sub.Unsubscribe()
	stopWorker, err := benchWorker(ctx, js, cfg)
	if err != nil {
		return BenchReport{}, err
	}
	defer stopWorker()
	return w.run(ctx, js, cfg, c.Jobs, b)
}

// benchBridge is the bridge the bench runs: names of its own.
func benchBridge(c BenchConfig) Config {
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	id := "bench" + hex.EncodeToString(r)
	up := strings.ToUpper(id)
	cfg := c.Bridge
	cfg.URL, cfg.Name = c.URL, id
	cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream = up+"_REQ", up+"_DISPATCH", up+"_RESULT", up+"_EVENT"
	cfg.RequestSubjects, cfg.TopicPrefix = []string{id + ".job.>"}, id+"."
	cfg.DispatchPrefix, cfg.ResultPrefix, cfg.EventPrefix, cfg.RejectPrefix = id+".dispatch.", id+".result.", id+".event.", id+".rejected."
	cfg.WorkerTopics = []string{"job.>"}
	return cfg
}

// benchWorker answers every dispatch SUCCEEDED, with async publishes.
func benchWorker(ctx context.Context, js jetstream.JetStream, cfg Config) (func(), error) {
	c, err := js.CreateOrUpdateConsumer(ctx, cfg.DispatchStream, jetstream.ConsumerConfig{Durable: cfg.Name + "-worker",
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10_000})
	if err != nil {
		return nil, err
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var d Dispatch
		if json.Unmarshal(m.Data(), &d) != nil {
			_ = m.Term()
			return
		}
		out, _ := json.Marshal(JobResult{JobID: d.JobID, Status: StatusSucceeded, StintJobID: d.StintJobID, Attempt: d.Attempt, LeaseID: d.LeaseID})
		if _, err := js.PublishAsync(cfg.ResultPrefix+d.Topic, out); err == nil {
			_ = m.Ack()
		}
	})
	if err != nil {
		return nil, err
	}
	return cc.Stop, nil
}

// benchWatch collects the events of the bench's jobs.
type benchWatch struct {
	mu        sync.Mutex
	published map[string]time.Time
	committed map[string]time.Time
	done      map[string]time.Time
	lags      []time.Duration
	want      int
	all       chan struct{}
}

func (w *benchWatch) event(m *nats.Msg) {
	var r JobResult
	if json.Unmarshal(m.Data, &r) != nil || r.At == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch r.Status {
	case StatusScheduled:
		if _, ok := w.committed[r.JobID]; !ok && r.Revision == 1 {
			w.committed[r.JobID] = *r.At
			w.lags = append(w.lags, time.Since(*r.At))
		}
	case StatusSucceeded:
		if _, ok := w.done[r.JobID]; !ok {
			w.done[r.JobID] = *r.At
			if len(w.done) == w.want {
				close(w.all)
			}
		}
	}
}

func (w *benchWatch) run(ctx context.Context, js jetstream.JetStream, cfg Config, n int, b *Bridge) (BenchReport, error) {
	w.published = make(map[string]time.Time, n)
	start := time.Now()
	var futures []jetstream.PubAckFuture
	for i := range n {
		id := fmt.Sprintf("b-%d", i)
		body, _ := json.Marshal(JobRequest{JobID: id, Priority: "interactive", Payload: json.RawMessage(`{"q":"hi"}`)})
		w.mu.Lock()
		w.published[id] = time.Now()
		w.mu.Unlock()
		f, err := js.PublishAsync(cfg.TopicPrefix+"job.chat.simple", body)
		if err != nil {
			return BenchReport{}, err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return BenchReport{}, fmt.Errorf("bench: publish: %w", err)
		}
	}
	published := time.Since(start)
	select {
	case <-w.all:
	case <-ctx.Done():
		return BenchReport{}, ctx.Err()
	case <-time.After(10*time.Minute + time.Duration(n)*time.Millisecond):
		return BenchReport{}, errors.New("bench: not every job succeeded in time")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var commit, e2e []time.Duration
	last := start
	for id, p := range w.published {
		if c, ok := w.committed[id]; ok {
			commit = append(commit, c.Sub(p))
		}
		d := w.done[id]
		e2e = append(e2e, d.Sub(p))
		if d.After(last) {
			last = d
		}
	}
	rep := BenchReport{Jobs: n, Published: published, Elapsed: last.Sub(start)}
	rep.JobsPerS = float64(n) / rep.Elapsed.Seconds()
	rep.CommitP50, rep.CommitP99 = quantile(commit, 0.5), quantile(commit, 0.99)
	rep.EndToEndP50, rep.EndToEndP99 = quantile(e2e, 0.5), quantile(e2e, 0.99)
	rep.EventLagP99 = quantile(w.lags, 0.99)
	return rep, nil
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}
