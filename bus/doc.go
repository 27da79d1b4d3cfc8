// Package bus bridges stint to a NATS JetStream bus, as seed-bus describes
// it: JobRequests published on job subjects become stint jobs exactly once,
// jobs of topics served by bus workers are published to them with their
// fencing token, the workers' JobResults come back through the same
// lifecycle, and every state change of a bridged job goes out as a
// JobResult-shaped event through the transactional outbox.
//
// A [Bridge] is a long-lived service (Start, Stop). It needs nothing from
// the store beyond its public contract: a request's job_id is the
// enqueue's request id (so a redelivered or duplicated request finds the
// job it made), and events reach NATS through an outbox webhook whose
// deliveries [Bridge.Transport] turns into JetStream publishes.
//
// docs/bus.md describes the subjects, the message shapes, the mapping of
// seed-bus states to stint's, and the guarantees.
package bus
