package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stint-dev/stint/clock"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/dispatch"
	"github.com/stint-dev/stint/store"
)

// BenchmarkLongPollPickup measures how long a worker long-polling an empty
// queue takes to get a job after the job's enqueue returned (pickup-ms/op),
// on SQLite, over HTTP with tokens.
func BenchmarkLongPollPickup(b *testing.B) {
	// The wait's clock never moves: only a wake-up ends a claim, and the
	// dispatcher says when it waits.
	clk := clock.NewManual(time.Now())
	s := backends[0].open(b)
	d, err := dispatch.New(dispatch.Config{Store: s, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	e := start(b, s, server.Config{Clock: clk, Dispatcher: d})
	client, worker := e.jobs(e.token("acme", store.RoleClient)), e.worker(e.token("acme", store.RoleWorker))
	var total time.Duration
	for b.Loop() {
		got := make(chan time.Time, 1)
		go func() {
			res, err := worker.Claim(b.Context(), connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"q"}, Wait: durationpb.New(10 * time.Second)}))
			if err != nil || len(res.Msg.Jobs) != 1 {
				b.Errorf("claim: %v", err)
			}
			got <- time.Now()
		}()
		for { // enqueue once the claim waits: its first, empty claim is past
			changed := d.Changed()
			if d.Waiting() > 0 {
				break
			}
			<-changed
		}
		if _, err := client.Enqueue(b.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k", Queue: "q"}})); err != nil {
			b.Fatal(err)
		}
		enqueued := time.Now()
		total += (<-got).Sub(enqueued)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "pickup-ms/op")
}
