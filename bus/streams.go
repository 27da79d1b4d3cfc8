package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// streamConfig is the configuration the bridge creates a missing stream
// with: requests, dispatches and results are work queues (a message goes
// away once acked), events keep a week for any number of readers.
func (c Config) streamConfig(name string) jetstream.StreamConfig {
	s := jetstream.StreamConfig{Name: name, Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy,
		Duplicates: 2 * time.Minute}
	switch name {
	case c.RequestStream:
		s.Subjects = c.RequestSubjects
		s.Description = "stint bus: JobRequests in"
	case c.DispatchStream:
		s.Subjects = []string{c.DispatchPrefix + ">"}
		s.Description = "stint bus: jobs out to bus workers"
	case c.ResultStream:
		s.Subjects = []string{c.ResultPrefix + ">"}
		s.Description = "stint bus: JobResults in from bus workers"
	case c.EventStream:
		s.Subjects = []string{c.EventPrefix + ">", c.RejectPrefix + ">"}
		s.Description = "stint bus: state changes of bridged jobs, and refused requests"
		s.Retention, s.MaxAge, s.Duplicates = jetstream.LimitsPolicy, 7*24*time.Hour, c.DedupWindow
	}
	return s
}

// stream returns the named stream, creating it when missing.
func (b *Bridge) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := b.js.Stream(ctx, name)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return s, err
	}
	s, err = b.js.CreateStream(ctx, b.cfg.streamConfig(name))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // another bridge was quicker
		return b.js.Stream(ctx, name)
	}
	if err == nil {
		b.log.Info("bus stream created", "stream", name)
	}
	return s, err
}

// consumerConfig is the bridge's durable pull consumer of a stream:
// explicit acks, at most MaxInFlight unacked, redelivered after AckWait.
func (c Config) consumerConfig(stream string) jetstream.ConsumerConfig {
	what := "requests"
	if stream == c.ResultStream {
		what = "results"
	}
	return jetstream.ConsumerConfig{Durable: c.consumer(what), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: c.AckWait, MaxAckPending: c.MaxInFlight, MaxDeliver: -1, DeliverPolicy: jetstream.DeliverAllPolicy,
		Description: "stint bus bridge " + c.Name + ": " + what}
}

// consumer returns the bridge's consumer of a stream, creating both when
// missing.
func (b *Bridge) consumer(ctx context.Context, stream string) (jetstream.Consumer, error) {
	s, err := b.stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	cc := b.cfg.consumerConfig(stream)
	c, err := s.Consumer(ctx, cc.Durable)
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return c, err
	}
	return s.CreateConsumer(ctx, cc)
}
