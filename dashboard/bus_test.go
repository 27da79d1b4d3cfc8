package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/bus"
	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

const machineNATS = "nats://127.0.0.1:4222"

type busPage struct {
	Enabled bool             `json:"enabled"`
	Status  bus.BridgeStatus `json:"status"`
}

// The bus page shows a real bridge on the machine's NATS: its consumers
// (and how far behind they are), its streams and its counts; only admins of
// the default tenant see it; a dashboard with no bridge says so.
func TestBusPage(t *testing.T) {
	t.Parallel()
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(machineNATS, "nats://"), 2*time.Second); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS is not running at %s (CI needs it): %v", machineNATS, err)
		}
		t.Skipf("NATS is not running at %s: %v", machineNATS, err)
	} else {
		c.Close()
	}
	ctx := context.Background()
	s := stinttest.NewStore(t)
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	id := "dash" + hex.EncodeToString(r)
	up := strings.ToUpper(id)
	cfg := bus.Config{URL: machineNATS, Name: id, RequestStream: up + "_REQ", DispatchStream: up + "_DISPATCH",
		ResultStream: up + "_RESULT", EventStream: up + "_EVENT", RequestSubjects: []string{id + ".job.>"},
		TopicPrefix: id + ".", DispatchPrefix: id + ".dispatch.", ResultPrefix: id + ".result.",
		EventPrefix: id + ".event.", RejectPrefix: id + ".rejected.", WorkerTopics: []string{"job.chat.*"}}
	b, err := bus.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(machineNATS)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	t.Cleanup(func() {
		b.Stop()
		for _, st := range []string{cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream} {
			_ = js.DeleteStream(context.Background(), st)
		}
		nc.Close()
	})
	d, err := outbox.New(s, &outbox.Config{Client: &http.Client{Transport: b.Transport(nil)}, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	// A bus worker's durable consumer on the dispatch stream, which nobody
	// pulls: the dispatched job waits there (its lag).
	if _, err := js.CreateOrUpdateConsumer(ctx, cfg.DispatchStream, jetstream.ConsumerConfig{Durable: id + "-worker",
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(bus.JobRequest{JobID: "dash-1"})
	if _, err := js.Publish(ctx, id+".job.chat.simple", body); err != nil {
		t.Fatal(err)
	}

	tokens := map[string]string{}
	keeper, err := store.TokensOf(s)
	if err != nil {
		t.Fatal(err)
	}
	for name, tr := range map[string]struct {
		tenant string
		role   store.Role
	}{"admin": {server.DefaultTenant, store.RoleAdmin}, "client": {server.DefaultTenant, store.RoleClient}, "acme": {"acme", store.RoleAdmin}} {
		tok, secret, err := server.NewToken(tr.tenant, tr.role, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keeper.TokenCreate(ctx, tok); err != nil {
			t.Fatal(err)
		}
		tokens[name] = secret
	}
	counter := stats.NewCounter(s, stats.Config{})
	if err := counter.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	serve := func(bb dashboard.BusBridge) string {
		h, err := dashboard.New(dashboard.Config{Store: s, Counter: counter, Bus: bb})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	with, without := serve(b), serve(nil)
	get := func(base, path, who string, out any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tokens[who])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if out != nil && res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode
	}
	for _, who := range []string{"client", "acme"} {
		if code := get(with, "/api/bus", who, nil); code != http.StatusForbidden {
			t.Errorf("%s reads the bus page: %d, want 403", who, code)
		}
	}
	var me struct {
		CanSeeBus bool `json:"can_see_bus"`
	}
	if get(with, "/api/whoami", "admin", &me); !me.CanSeeBus {
		t.Error("whoami: an admin may not see the bus page of a process with a bridge")
	}
	if get(without, "/api/whoami", "admin", &me); me.CanSeeBus {
		t.Error("whoami: the bus page offered where no bridge runs")
	}
	var off busPage
	if code := get(without, "/api/bus", "admin", &off); code != http.StatusOK || off.Enabled {
		t.Fatalf("no bridge: %d, enabled %v", code, off.Enabled)
	}

	var p busPage
	deadline := time.NewTicker(50 * time.Millisecond)
	defer deadline.Stop()
	for start := time.Now(); ; <-deadline.C {
		if code := get(with, "/api/bus", "admin", &p); code != http.StatusOK {
			t.Fatalf("GET /api/bus: %d", code)
		}
		if p.Status.Counts.Enqueued == 1 && p.Status.Counts.Dispatched == 1 && p.Status.Counts.Published >= 2 {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("the bus page never showed the request enqueued, dispatched and its events published: %+v", p.Status)
		}
	}
	st := p.Status
	if !p.Enabled || !st.Connected || st.Name != id || st.Queue != "bus" || st.Counts.Received != 1 || st.Dispatched != 1 {
		t.Fatalf("bus page: %+v", st)
	}
	if len(st.Streams) != 4 {
		t.Errorf("streams: %+v, want the four", st.Streams)
	}
	consumers := map[string]bus.ConsumerStatus{}
	for _, c := range st.Consumers {
		consumers[c.Name] = c
	}
	for _, name := range []string{id + "-requests", id + "-results", id + "-worker"} {
		if _, ok := consumers[name]; !ok {
			t.Errorf("consumer %s missing: %+v", name, st.Consumers)
		}
	}
	if w := consumers[id+"-worker"]; w.Pending != 1 {
		t.Errorf("the unpulled worker consumer shows %d pending, want 1 (the dispatched job)", w.Pending)
	}
}
