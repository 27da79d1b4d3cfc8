package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// machineNATS is the machine's NATS server. Tests use streams and subjects
// of their own there; without it they skip, except under CI, where they fail.
const machineNATS = "nats://127.0.0.1:4222"

func needNATS(t *testing.T, url string) {
	t.Helper()
	host := strings.TrimPrefix(url, "nats://")
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("NATS is not running at %s (CI needs it: .ci/run starts it): %v", url, err)
	}
	t.Skipf("NATS is not running at %s: %v", url, err)
}

// uniqueConfig is a bridge configuration whose streams, consumers and
// subjects no other test shares.
func uniqueConfig(t *testing.T, url string) Config {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := "t" + hex.EncodeToString(b)
	up := strings.ToUpper(id)
	return Config{URL: url, Name: id, RequestStream: up + "_REQ", DispatchStream: up + "_DISPATCH",
		ResultStream: up + "_RESULT", EventStream: up + "_EVENT", RequestSubjects: []string{id + ".job.>"},
		TopicPrefix: id + ".", DispatchPrefix: id + ".dispatch.", ResultPrefix: id + ".result.",
		EventPrefix: id + ".event.", RejectPrefix: id + ".rejected.", Registerer: prometheus.NewRegistry(),
		AckWait: 5 * time.Second, Batch: 200}
}

func sqliteStore(t *testing.T, opts store.Options) store.Store {
	d, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(d, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// backends opens a fresh store of each backend this machine has.
func backends() map[string]func(t *testing.T) store.Store {
	b := map[string]func(t *testing.T) store.Store{"sqlite": func(t *testing.T) store.Store { return sqliteStore(t, store.Options{}) }}
	if os.Getenv("STINT_TEST_DATABASE_URL") != "" {
		b["postgres"] = func(t *testing.T) store.Store { return pgtest.NewStore(t) }
	}
	return b
}

// harness is a started bridge with its outbox deliverer, and a client
// connection for the test's publishes and reads.
type harness struct {
	t   *testing.T
	st  store.Store
	cfg Config
	b   *Bridge
	d   *outbox.Deliverer
	nc  *nats.Conn
	js  jetstream.JetStream
	// before, when set, is called on each bridge before it starts.
	before func(*Bridge)
}

func newHarness(t *testing.T, st store.Store, cfg Config) *harness {
	t.Helper()
	return newHarnessWith(t, st, cfg, nil)
}

// newHarnessWith is newHarness with before called on the bridge before it
// starts (to set its fault hooks).
func newHarnessWith(t *testing.T, st store.Store, cfg Config, before func(*Bridge)) *harness {
	t.Helper()
	nc, err := nats.Connect(cfg.URL, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, cfg: cfg, nc: nc, js: js, before: before}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range []string{cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream} {
			_ = js.DeleteStream(ctx, s)
		}
		nc.Close()
	})
	h.start()
	return h
}

// start starts a bridge and an outbox deliverer that publishes through it.
func (h *harness) start() {
	h.t.Helper()
	b, err := New(h.st, h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.before != nil {
		h.before(b)
	}
	if err := b.Start(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
	d, err := outbox.New(h.st, &outbox.Config{Client: &http.Client{Transport: b.Transport(nil)}, Interval: 20 * time.Millisecond, Workers: 2, Limit: 64})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := d.Start(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
	h.b, h.d = b, d
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.d != nil {
		h.d.Stop()
	}
	if h.b != nil {
		h.b.Stop()
	}
}

// publish publishes a request on topic, optionally with a Nats-Msg-Id.
func (h *harness) publish(topic string, body any) {
	h.t.Helper()
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			h.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.js.Publish(ctx, h.cfg.TopicPrefix+topic, data); err != nil {
		h.t.Fatal(err)
	}
}

// eventually polls cond until it holds or 60s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 60*time.Second, what, cond)
}

// eventuallyWithin polls cond until it holds or d passes (a shared, loaded
// machine makes the fault tests slow, never wrong).
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(min(d/600, time.Second)) // 100ms a minute: the checks read a lot
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// jobs lists every job of the store.
func jobs(t *testing.T, st store.Store) []lifecycle.Job {
	t.Helper()
	var all []lifecycle.Job
	after := ""
	for {
		page, err := st.JobList(context.Background(), &store.JobListParams{AfterID: after, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 10000 {
			return all
		}
		after = page[len(page)-1].ID
	}
}

// streamMsgs reads every message of a stream under subjects prefix, keyed
// by Nats-Msg-Id (duplicates dropped), with the subjects they came on.
type streamMsg struct {
	Subject string
	Result  JobResult
}

func (h *harness) readStream(stream, prefix string) map[string]streamMsg {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := h.js.Stream(ctx, stream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]streamMsg{}
	if info.State.Msgs == 0 {
		return out
	}
	c, err := h.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{prefix + ">"}})
	if err != nil {
		h.t.Fatal(err)
	}
	var mu sync.Mutex
	for {
		batch, err := c.FetchNoWait(1000)
		if err != nil {
			h.t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var r JobResult
			if err := json.Unmarshal(m.Data(), &r); err != nil {
				h.t.Fatalf("event %s is not a JobResult: %v", m.Data(), err)
			}
			mu.Lock()
			out[m.Headers().Get(jetstream.MsgIDHeader)] = streamMsg{Subject: m.Subject(), Result: r}
			mu.Unlock()
		}
		if n == 0 {
			return out
		}
	}
}

// verifyClean fails the test when stint verify finds anything.
func verifyClean(t *testing.T, st store.Store) {
	t.Helper()
	rep, err := st.Verify(context.Background(), &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) > 0 {
		t.Fatalf("verify: %d findings, first %+v", len(rep.Findings), rep.Findings[0])
	}
}
