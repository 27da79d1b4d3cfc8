package doctor_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/bus"
	"github.com/stint-dev/stint/doctor"
)

// busConfig is a bridge configuration on the machine's NATS whose streams
// and subjects no other test shares; the test fails under CI without NATS.
func busConfig(t *testing.T) bus.Config {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", 2*time.Second); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS is not running on 127.0.0.1:4222 (CI needs it): %v", err)
		}
		t.Skipf("NATS is not running on 127.0.0.1:4222: %v", err)
	} else {
		c.Close()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := "d" + hex.EncodeToString(b)
	up := strings.ToUpper(id)
	cfg := bus.Config{URL: "nats://127.0.0.1:4222", Name: id, RequestStream: up + "_REQ", DispatchStream: up + "_DISPATCH",
		ResultStream: up + "_RESULT", EventStream: up + "_EVENT", RequestSubjects: []string{id + ".job.>"},
		TopicPrefix: id + ".", DispatchPrefix: id + ".dispatch.", ResultPrefix: id + ".result.",
		EventPrefix: id + ".event.", RejectPrefix: id + ".rejected.", WorkerTopics: []string{"job.>"}}
	t.Cleanup(func() {
		nc, err := nats.Connect(cfg.URL)
		if err != nil {
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		for _, s := range []string{cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream} {
			_ = js.DeleteStream(context.Background(), s)
		}
	})
	return cfg
}

func busFindings(rep doctor.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Check+": "+f.Problem)
	}
	return out
}

// The bus checks find missing streams, a backlog no bridge pulls, and
// dispatched jobs no bus worker takes; a running bridge with a worker is clean.
func TestBusChecks(t *testing.T) {
	t.Parallel()
	cfg := busConfig(t)
	rep, err := doctor.Bus(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 4 || rep.Findings[0].Check != doctor.CheckBusStreams {
		t.Fatalf("before any bridge: %q", busFindings(rep))
	}

	st, _ := newSQLite(t)
	b, err := bus.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep, err = doctor.Bus(t.Context(), cfg)
	if err != nil || !rep.Clean() {
		t.Fatalf("a running bridge: %q %v", busFindings(rep), err)
	}
	b.Stop() // requests now wait with nobody pulling; dispatches with no worker

	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, subj := range []string{cfg.TopicPrefix + "job.chat.simple", cfg.DispatchPrefix + "job.chat.simple"} {
		if _, err := js.Publish(t.Context(), subj, []byte(`{"job_id":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond) // the stopped bridge's pull requests expire on the server
	defer tick.Stop()
	for {
		rep, err = doctor.Bus(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got = busFindings(rep)
		if len(got) == 2 || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	want := []string{"no bridge is pulling", "no bus worker consumes"}
	if len(got) != 2 || !strings.Contains(got[0], want[0]) || !strings.Contains(got[1], want[1]) {
		t.Fatalf("findings %q, want %q", got, want)
	}
}
