package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stint-dev/stint/bus"
)

// Names of the bus checks.
const (
	CheckBusStreams   = "bus_streams"
	CheckBusConsumers = "bus_consumers"
	CheckBusWorkers   = "bus_workers"
)

// BusBacklog is how many messages a bridge consumer may have waiting before
// the bus checks report it.
const BusBacklog = 10_000

// Bus checks the JetStream side of a bus bridge (docs/bus.md): that its four
// streams exist, that its durable consumers exist with explicit acks and a
// bound on messages in flight, that a bridge is pulling from them and they
// are not far behind, and that some bus worker consumes the dispatch
// stream. It changes nothing on the bus.
func Bus(ctx context.Context, cfg bus.Config) (Report, error) {
	cfg = cfg.WithDefaults()
	rep := Report{Backend: "nats", Database: cfg.URL}
	nc, err := nats.Connect(cfg.URL, nats.Timeout(5*time.Second), nats.Name("stint-doctor"))
	if err != nil {
		return rep, fmt.Errorf("doctor: connect to NATS at %s: %w", cfg.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return rep, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var missing []Finding
	streams := map[string]jetstream.Stream{}
	for _, name := range []string{cfg.RequestStream, cfg.DispatchStream, cfg.ResultStream, cfg.EventStream} {
		s, err := js.Stream(ctx, name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			missing = append(missing, Finding{Subject: name, Problem: "stream " + name + " does not exist",
				Fix: "start `stint server --nats-url " + cfg.URL + "` (the bridge creates what is missing), or check --nats-streams"})
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
			return rep, fmt.Errorf("doctor: JetStream is not enabled on %s: start nats-server with -js", cfg.URL)
		case err != nil:
			return rep, fmt.Errorf("doctor: stream %s: %w", name, err)
		default:
			streams[name] = s
		}
	}
	rep.check(CheckBusStreams, fmt.Sprintf("%d of 4 streams present", len(streams)), missing...)
	rep.busConsumers(ctx, cfg, streams)
	rep.busWorkers(ctx, cfg, streams[cfg.DispatchStream])
	return rep, nil
}

// busConsumers checks the bridge's durable consumers of requests and results.
func (r *Report) busConsumers(ctx context.Context, cfg bus.Config, streams map[string]jetstream.Stream) {
	var found []Finding
	summary := ""
	for _, p := range []struct{ stream, what string }{{cfg.RequestStream, "requests"}, {cfg.ResultStream, "results"}} {
		s := streams[p.stream]
		if s == nil {
			continue
		}
		name := cfg.Name + "-" + p.what
		c, err := s.Consumer(ctx, name)
		if err != nil {
			found = append(found, Finding{Subject: name, Problem: fmt.Sprintf("the bridge's consumer %s of %s is missing (%v)", name, p.stream, err),
				Fix: "start `stint server --nats-url " + cfg.URL + " --nats-name " + cfg.Name + "`; it creates its consumers"})
			continue
		}
		info := c.CachedInfo()
		summary += fmt.Sprintf("%s: %d waiting, %d in flight, %d redelivered; ", name, info.NumPending, info.NumAckPending, info.NumRedelivered)
		switch {
		case info.Config.AckPolicy != jetstream.AckExplicitPolicy || info.Config.MaxAckPending <= 0:
			found = append(found, Finding{Subject: name, Problem: fmt.Sprintf("consumer %s has ack policy %s and max ack pending %d: the bridge needs explicit acks and a bound", name, info.Config.AckPolicy, info.Config.MaxAckPending),
				Fix: "delete the consumer (nats consumer rm " + p.stream + " " + name + "); the bridge creates it again as it should be"})
		case info.NumPending > 0 && info.NumWaiting == 0 && info.NumAckPending == 0:
			found = append(found, Finding{Subject: name, Problem: fmt.Sprintf("%d %s wait in %s and no bridge is pulling them", info.NumPending, p.what, p.stream),
				Fix: "start a bridge: `stint server --nats-url " + cfg.URL + "`"})
		case info.NumPending > BusBacklog:
			found = append(found, Finding{Subject: name, Problem: fmt.Sprintf("%d %s wait in %s: the bridge is far behind", info.NumPending, p.what, p.stream),
				Fix: "check that the bridged queue is not paused (`stint queues ls`), that --nats-max-queued is not reached, and the store's health (`stint doctor`)"})
		}
	}
	if summary == "" {
		summary = "no consumer to check"
	}
	r.check(CheckBusConsumers, summary, found...)
}

// busWorkers checks that dispatched jobs have someone to take them.
func (r *Report) busWorkers(ctx context.Context, cfg bus.Config, s jetstream.Stream) {
	if s == nil {
		return
	}
	info, err := s.Info(ctx)
	if err != nil {
		r.check(CheckBusWorkers, "dispatch stream unreadable", Finding{Subject: cfg.DispatchStream, Problem: err.Error(), Fix: "check the NATS server's health"})
		return
	}
	summary := fmt.Sprintf("%d bus worker consumers, %d dispatches waiting", info.State.Consumers, info.State.Msgs)
	if info.State.Msgs > 0 && info.State.Consumers == 0 {
		r.check(CheckBusWorkers, summary, Finding{Subject: cfg.DispatchStream,
			Problem: fmt.Sprintf("%d jobs wait in %s and no bus worker consumes it", info.State.Msgs, cfg.DispatchStream),
			Fix:     "start bus workers on " + cfg.DispatchPrefix + "<topic> (examples/busworker), or drop the topics from --nats-worker-topics so pool workers serve them"})
		return
	}
	r.check(CheckBusWorkers, summary)
}
