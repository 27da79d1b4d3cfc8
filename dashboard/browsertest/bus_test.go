package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

const machineNATS = "nats://127.0.0.1:4222"

// TestBusPageInBrowser runs `stint dev --nats-url` (SQLite) and `stint
// server --nats-url` (PostgreSQL) on the machine's NATS
// (streams and subjects of its own), publishes a JobRequest no bus worker
// takes, and has bus.mjs read the bus page in Chromium: the bridge
// connected, the request enqueued and dispatched, its events published,
// the bus worker's consumer one message behind, checked against the store
// and the server after each step; axe-core at desktop and phone width.
func TestBusPageInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("the browser test is not short")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(machineNATS, "nats://"), 2*time.Second); err != nil {
		unavailable(t, "NATS is not running at "+machineNATS)
	} else {
		c.Close()
	}
	prerequisites(t)
	bin := filepath.Join(t.TempDir(), "stint")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/stint-dev/stint/cmd/stint").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("sqlite-dev", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "stint.db")
		driveBus(t, bin, func(ctx context.Context, nats []string) (string, string, store.Store) {
			url, token := startStint(t, ctx, bin, append([]string{"--db", db, "dev", "--api", "127.0.0.1:0", "--shutdown-grace", "0"}, nats...),
				regexp.MustCompile(`Dashboard: (\S+)#token=(\S+)`), nil)
			st, err := sqlite.OpenStore(ctx, db, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return url, token, st
		}, os.Getenv("DASHBOARD_DOCS"))
	})
	t.Run("postgres-server", func(t *testing.T) {
		dsn, schema := pgtest.URL(t), pgtest.NewSchema(t)
		driveBus(t, bin, func(ctx context.Context, nats []string) (string, string, store.Store) {
			global := []string{"--database-url", dsn, "--schema", schema}
			mint := func() string {
				out, err := exec.CommandContext(ctx, bin, append(global, "tokens", "create", "--role", "admin", "--name", "browser")...).Output()
				if err != nil {
					t.Fatalf("stint tokens create: %v", err)
				}
				return strings.TrimSpace(string(out))
			}
			url, token := startStint(t, ctx, bin, append(append(global, "server", "--listen", "127.0.0.1:0"), nats...),
				regexp.MustCompile(`stint server listening on (\S+)`), mint)
			st, err := postgres.OpenStore(ctx, dsn, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			return url + "/dashboard/", token, st
		}, "")
	})
}

// driveBus starts stint with start (given the bridge's flags: streams and
// subjects of its own on the machine's NATS), publishes a JobRequest no bus
// worker takes, and has bus.mjs drive the bus page, checking st and the
// NATS server after each step. docs, when set, receives the screenshots.
func driveBus(t *testing.T, bin string, start func(ctx context.Context, nats []string) (url, token string, st store.Store), docs string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	id := "brw" + hex.EncodeToString(r)
	streams := strings.ToUpper(id)
	nc, err := nats.Connect(machineNATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	t.Cleanup(func() {
		for _, s := range []string{"_REQUESTS", "_DISPATCH", "_RESULTS", "_EVENTS"} {
			_ = js.DeleteStream(context.Background(), streams+s)
		}
	})
	url, token, st := start(ctx, []string{"--nats-url", machineNATS, "--nats-name", id, "--nats-streams", streams, "--nats-requests", id + ".job.>",
		"--nats-topic-prefix", id + ".", "--nats-dispatch-prefix", id + ".dispatch.", "--nats-result-prefix", id + ".result.",
		"--nats-event-prefix", id + ".event.", "--nats-reject-prefix", id + ".rejected."})
	defer st.Close()
	worker := id + "-worker"
	if _, err := js.CreateOrUpdateConsumer(ctx, streams+"_DISPATCH", jetstream.ConsumerConfig{Durable: worker,
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"job_id": "browser-1", "priority": "interactive", "payload": map[string]string{"q": "hi"}})
	if _, err := js.Publish(ctx, id+".job.chat.simple", body); err != nil {
		t.Fatal(err)
	}

	checks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c check
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			err := busHolds(ctx, st, js, streams, c)
			if err == nil {
				t.Logf("check %s %v: ok", c.What, c.Args)
				return
			}
			select {
			case <-ctx.Done():
				http.Error(w, err.Error(), http.StatusConflict)
				return
			case <-tick.C:
			}
		}
	}))
	defer checks.Close()
	artifacts, _ := filepath.Abs(filepath.Join("testdata", "artifacts", "bus", filepath.Base(t.Name())))
	node := exec.CommandContext(ctx, "node", "bus.mjs")
	node.Env = append(os.Environ(), "DASHBOARD_URL="+url, "TOKEN="+token, "WORKER="+worker, "CHECK_URL="+checks.URL,
		"ARTIFACTS="+artifacts, "DOCS="+docs)
	var stderr strings.Builder
	node.Stderr = &stderr
	if out, err := node.Output(); err != nil {
		t.Fatalf("bus.mjs: %v\n%s\n%s\n(screenshots in %s)", err, out, stderr.String(), artifacts)
	}
}

// busHolds checks, once, what bus.mjs saw: the request's job in the store,
// or the worker consumer's lag on the server.
func busHolds(ctx context.Context, st store.Store, js jetstream.JetStream, streams string, c check) error {
	switch c.What {
	case "bus-job":
		jobs, err := st.JobList(ctx, &store.JobListParams{Queue: "bus"})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.CorrelationID == c.Args["job_id"] {
				if string(j.State) != c.Args["state"] {
					return fmt.Errorf("job %s is %s", j.ID, j.State)
				}
				return nil
			}
		}
		return fmt.Errorf("no job for job_id %s among %d", c.Args["job_id"], len(jobs))
	case "bus-lag":
		cons, err := js.Consumer(ctx, streams+"_DISPATCH", c.Args["consumer"])
		if err != nil {
			return err
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if fmt.Sprint(info.NumPending) != c.Args["pending"] {
			return fmt.Errorf("consumer %s has %d pending", c.Args["consumer"], info.NumPending)
		}
		return nil
	}
	return fmt.Errorf("unknown check %q", c.What)
}
