// Command busworker is a bus worker: it serves the jobs stint dispatches on
// stint.dispatch.job.chat.* and answers each on stint.result.<topic> with
// the fencing token it came with. Run stint dev --nats-url nats://127.0.0.1:4222
// beside it, and publish a request: nats pub job.chat.simple '{"job_id":"j1"}'.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/bus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nc, err := nats.Connect(cmp.Or(os.Getenv("NATS_URL"), nats.DefaultURL), nats.MaxReconnects(-1))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Drain()
	js, _ := jetstream.New(nc)
	c, err := js.CreateOrUpdateConsumer(ctx, "STINT_DISPATCH", jetstream.ConsumerConfig{Durable: "chat-workers",
		FilterSubject: "stint.dispatch.job.chat.*", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		log.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var d bus.Dispatch
		if json.Unmarshal(m.Data(), &d) != nil {
			_ = m.Term()
			return
		}
		out, _ := json.Marshal(bus.JobResult{JobID: d.JobID, Status: bus.StatusSucceeded, WorkerID: "busworker",
			Result: json.RawMessage(`{"answer":"hello from the bus"}`), StintJobID: d.StintJobID, Attempt: d.Attempt, LeaseID: d.LeaseID})
		if _, err := js.Publish(ctx, "stint.result."+d.Topic, out); err == nil {
			_ = m.Ack() // not acked: the dispatch comes again, and a repeated result changes nothing
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Stop()
	log.Print("serving job.chat.*; Ctrl-C stops")
	<-ctx.Done()
}
