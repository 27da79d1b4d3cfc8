package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/stint-dev/stint/bus"
	"github.com/stint-dev/stint/doctor"
	"github.com/stint-dev/stint/store"
)

// busOptions are the --nats-* flags of stint server and stint dev: the bus
// bridge (docs/bus.md) runs when --nats-url is given.
type busOptions struct {
	url, name, queue, streams                              string
	requests, workerTopics                                 []string
	topicPrefix, dispatchPrefix, resultPrefix, eventPrefix string
	rejectPrefix                                           string
	maxInFlight, maxQueued                                 int
	lease                                                  time.Duration
	// client is the outbox deliverers' HTTP client once the bridge runs:
	// its deliveries to the bridge's webhook are published on the bus.
	client *http.Client
}

func (o *busOptions) register(f *pflag.FlagSet) {
	d := bus.Config{}.WithDefaults()
	f.StringVar(&o.url, "nats-url", "", "run the NATS JetStream bus bridge against this server (docs/bus.md); off when empty")
	f.StringVar(&o.name, "nats-name", d.Name, "the bridge's name: prefixes its durable consumers, names its outbox subscription")
	f.StringVar(&o.queue, "nats-queue", d.Queue, "the stint queue bridged jobs go into")
	f.StringSliceVar(&o.requests, "nats-requests", d.RequestSubjects, "subjects JobRequests are published on (comma-separated)")
	f.StringVar(&o.topicPrefix, "nats-topic-prefix", "", "cut from a request's subject to give its topic (default: the subject is the topic)")
	f.StringSliceVar(&o.workerTopics, "nats-worker-topics", []string{"job.>"}, "topic patterns served by bus workers (dispatched on the bus); other topics wait for pool workers")
	f.StringVar(&o.dispatchPrefix, "nats-dispatch-prefix", d.DispatchPrefix, "jobs for bus workers are published on PREFIX<topic>")
	f.StringVar(&o.resultPrefix, "nats-result-prefix", d.ResultPrefix, "bus workers publish JobResults on PREFIX<topic>")
	f.StringVar(&o.eventPrefix, "nats-event-prefix", d.EventPrefix, "state changes of bridged jobs are published on PREFIX<topic>")
	f.StringVar(&o.rejectPrefix, "nats-reject-prefix", d.RejectPrefix, "refused requests are answered on PREFIX<topic>")
	f.StringVar(&o.streams, "nats-streams", "STINT", "the JetStream streams are NAME_REQUESTS, NAME_DISPATCH, NAME_RESULTS and NAME_EVENTS")
	f.IntVar(&o.maxInFlight, "nats-max-in-flight", d.MaxInFlight, "most unacknowledged messages per consumer")
	f.IntVar(&o.maxQueued, "nats-max-queued", 0, "stop taking requests while the bridged queue has this many jobs waiting (0: no bound)")
	f.Var(durationFlag{&o.lease}, "nats-lease", "lease of a job dispatched to a bus worker (default 60s)")
}

// config is the bridge configuration the flags describe.
func (o *busOptions) config(reg prometheus.Registerer, logger *slog.Logger) bus.Config {
	s := strings.ToUpper(o.streams)
	return bus.Config{URL: o.url, Name: o.name, Queue: o.queue, RequestSubjects: o.requests, TopicPrefix: o.topicPrefix,
		WorkerTopics: o.workerTopics, DispatchPrefix: o.dispatchPrefix, ResultPrefix: o.resultPrefix,
		EventPrefix: o.eventPrefix, RejectPrefix: o.rejectPrefix, RequestStream: s + "_REQUESTS",
		DispatchStream: s + "_DISPATCH", ResultStream: s + "_RESULTS", EventStream: s + "_EVENTS",
		MaxInFlight: o.maxInFlight, MaxQueued: o.maxQueued, LeaseTTL: o.lease, Registerer: reg, Logger: logger}
}

// startBus starts the bus bridge when --nats-url is given, and points the
// outbox deliverers of this process at it (o.client). It returns the
// function that stops it.
func (a *app) startBus(ctx context.Context, out io.Writer, st store.Store, o *busOptions, logger *slog.Logger) (func(), error) {
	if o.url == "" {
		return func() {}, nil
	}
	var reg prometheus.Registerer
	obs := observabilityOf(st)
	if obs != nil {
		reg = obs.reg
	}
	cfg := o.config(reg, logger)
	b, err := bus.New(st, cfg)
	if err != nil {
		return nil, usageErrorf("--nats-*: %v", err)
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	o.client = &http.Client{Timeout: 10 * time.Second, Transport: b.Transport(nil)}
	if obs != nil {
		obs.bus = b // the dashboard's bus page (mounted after this)
	}
	cfg = cfg.WithDefaults()
	fmt.Fprintf(out, "bus bridge on %s: requests on %s → queue %s; bus workers get %s<topic>, answer on %s<topic>; events on %s<topic>\n",
		o.url, strings.Join(cfg.RequestSubjects, ","), cfg.Queue, cfg.DispatchPrefix, cfg.ResultPrefix, cfg.EventPrefix)
	return b.Stop, nil
}

// registerDoctor registers the flags stint doctor needs to find a bridge.
func (o *busOptions) registerDoctor(f *pflag.FlagSet) {
	d := bus.Config{}.WithDefaults()
	f.StringVar(&o.url, "nats-url", "", "also check the bus bridge's streams and consumers on this NATS server (docs/bus.md)")
	f.StringVar(&o.name, "nats-name", d.Name, "the bridge's name (--nats-name of stint server)")
	f.StringVar(&o.streams, "nats-streams", "STINT", "the bridge's stream name prefix (--nats-streams of stint server)")
	f.StringVar(&o.dispatchPrefix, "nats-dispatch-prefix", d.DispatchPrefix, "the bridge's dispatch subject prefix")
}

// doctor adds the bus checks to rep when --nats-url is given.
func (o *busOptions) doctor(ctx context.Context, rep *doctor.Report) error {
	if o.url == "" {
		return nil
	}
	br, err := doctor.Bus(ctx, o.config(nil, nil))
	if err != nil {
		return err
	}
	rep.Checks = append(rep.Checks, br.Checks...)
	rep.Findings = append(rep.Findings, br.Findings...)
	return nil
}
