package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
)

// Config configures a [Bridge]. Every subject and name has a default; tests
// and side-by-side deployments change them so bridges never share a stream.
type Config struct {
	// URL is the NATS server (nats://host:port, or a comma-separated list);
	// required.
	URL string
	// Name tells bridges on one bus apart: it prefixes the durable consumer
	// names and is the owner name of the jobs dispatched to bus workers.
	// Defaults to "stint".
	Name string

	// RequestStream captures RequestSubjects. Defaults to "STINT_REQUESTS".
	RequestStream string
	// RequestSubjects are the subjects JobRequests are published on.
	// Defaults to ["job.>"].
	RequestSubjects []string
	// TopicPrefix is cut from a request's subject to give its topic (the
	// subject is the topic when it is empty, the default).
	TopicPrefix string

	// DispatchStream captures the dispatch subjects. Defaults to "STINT_DISPATCH".
	DispatchStream string
	// DispatchPrefix + topic is where jobs served by bus workers go.
	// Defaults to "stint.dispatch.".
	DispatchPrefix string
	// ResultStream captures the result subjects. Defaults to "STINT_RESULTS".
	ResultStream string
	// ResultPrefix + topic is where bus workers publish JobResults.
	// Defaults to "stint.result.".
	ResultPrefix string
	// EventStream captures events and rejections. Defaults to "STINT_EVENTS".
	EventStream string
	// EventPrefix + topic is where every state change of a bridged job is
	// published. Defaults to "stint.event.".
	EventPrefix string
	// RejectPrefix + topic is where a refused request's error result goes.
	// Defaults to "stint.rejected.".
	RejectPrefix string
	// DedupWindow is the event stream's duplicate window (Nats-Msg-Id).
	// Defaults to 10m.
	DedupWindow time.Duration

	// Queue is the stint queue bridged jobs go into. Defaults to "bus".
	Queue string
	// Tenant is the tenant of bridged jobs. Defaults to "" (the default tenant).
	Tenant string
	// WorkerTopics are topic patterns (job.chat.*) served by bus workers:
	// their jobs are dispatched on the bus. Others wait for pool workers
	// (a job's kind is its topic). Empty: none.
	WorkerTopics []string
	// LeaseTTL is the lease of a dispatched job: a bus worker that neither
	// reports nor heartbeats within it loses the job (it is requeued, or
	// dead-lettered with no attempts left). Defaults to 60s.
	LeaseTTL time.Duration
	// MaxAttempts of a bridged job when its request names none. 0 is the
	// store's default.
	MaxAttempts int

	// MaxInFlight bounds the unacknowledged messages of each consumer
	// (JetStream MaxAckPending). Defaults to 2000.
	MaxInFlight int
	// MaxDispatched bounds the jobs out with bus workers at once (per
	// bridge): more would wait in the dispatch stream while their leases
	// run. Defaults to 2000.
	MaxDispatched int
	// Concurrency is how many results of a fetched batch that do not
	// complete together (see applyResults) are handled at once (messages
	// about the same job always in order, one at a time): the store
	// commits concurrent writes together. Defaults to 32.
	Concurrency int
	// Batch is the most messages fetched (a batch of requests is one
	// enqueue transaction), or jobs claimed, at a time. Defaults to 500.
	Batch int
	// MaxQueued pauses intake while the bridged queue holds this many jobs
	// waiting to be claimed; 0 means no bound. Intake also pauses while the
	// queue is paused. Requests wait in the stream meanwhile.
	MaxQueued int
	// MaxPayloadBytes bounds a request's payload. Defaults to (and is at
	// most) lifecycle.MaxPayloadBytes.
	MaxPayloadBytes int
	// AckWait is how long JetStream waits for an ack before redelivering.
	// Defaults to 30s.
	AckWait time.Duration

	// Registerer takes the bridge's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default(); Clock to the system clock.
	Logger *slog.Logger
	Clock  clock.Clock
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	str := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	str(&c.Name, "stint")
	str(&c.RequestStream, "STINT_REQUESTS")
	str(&c.DispatchStream, "STINT_DISPATCH")
	str(&c.ResultStream, "STINT_RESULTS")
	str(&c.EventStream, "STINT_EVENTS")
	str(&c.DispatchPrefix, "stint.dispatch.")
	str(&c.ResultPrefix, "stint.result.")
	str(&c.EventPrefix, "stint.event.")
	str(&c.RejectPrefix, "stint.rejected.")
	str(&c.Queue, "bus")
	if len(c.RequestSubjects) == 0 {
		c.RequestSubjects = []string{"job.>"}
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&c.DedupWindow, 10*time.Minute)
	dur(&c.LeaseTTL, 60*time.Second)
	dur(&c.AckWait, 30*time.Second)
	num := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	num(&c.MaxInFlight, 2000)
	num(&c.Batch, 500)
	num(&c.MaxDispatched, 2000)
	num(&c.Concurrency, 32)
	num(&c.MaxPayloadBytes, lifecycle.MaxPayloadBytes)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	return c
}

// validate refuses a configuration that cannot work, saying what to change.
func (c Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("bus: URL is required: give the NATS server, e.g. nats://127.0.0.1:4222"))
	}
	for _, p := range []struct{ name, v string }{{"DispatchPrefix", c.DispatchPrefix}, {"ResultPrefix", c.ResultPrefix},
		{"EventPrefix", c.EventPrefix}, {"RejectPrefix", c.RejectPrefix}} {
		if !strings.HasSuffix(p.v, ".") || strings.ContainsAny(p.v, "*> ") {
			errs = append(errs, fmt.Errorf("bus: %s %q: a subject prefix ends with a dot and has no wildcards or spaces", p.name, p.v))
		}
	}
	if c.TopicPrefix != "" && !strings.HasSuffix(c.TopicPrefix, ".") {
		errs = append(errs, fmt.Errorf("bus: TopicPrefix %q must end with a dot", c.TopicPrefix))
	}
	for _, t := range c.WorkerTopics {
		if err := lifecycle.CheckTopicPattern(t); err != nil {
			errs = append(errs, fmt.Errorf("bus: WorkerTopics: %w", err))
		}
	}
	if err := lifecycle.CheckName("queue", c.Queue); err != nil {
		errs = append(errs, fmt.Errorf("bus: Queue: %w", err))
	}
	if c.MaxPayloadBytes > lifecycle.MaxPayloadBytes {
		errs = append(errs, fmt.Errorf("bus: MaxPayloadBytes %d is over the store's limit %d", c.MaxPayloadBytes, lifecycle.MaxPayloadBytes))
	}
	return errors.Join(errs...)
}

// consumer names the durable consumer of one stream.
func (c Config) consumer(what string) string { return c.Name + "-" + what }

// owner is the worker id that holds the leases of dispatched jobs.
func (c Config) owner() string { return "bus:" + c.Name }

// topicOf returns the topic of a request published on subject.
func (c Config) topicOf(subject string) string { return strings.TrimPrefix(subject, c.TopicPrefix) }
