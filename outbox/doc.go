// Package outbox delivers the transactional outbox to webhooks.
//
// The store writes one outbox row per (event, matching subscription) in the
// transaction of the transition itself, so a row exists if and only if its
// transition committed. A [Deliverer] claims rows (FOR UPDATE SKIP LOCKED on
// PostgreSQL, the single writer on SQLite) under a lease, oldest first per
// aggregate (job or run), POSTs each to its webhook signed in the Standard
// Webhooks format ([Sign]), and records the outcome: delivered, retried with
// backoff (network errors, timeouts, 5xx and 429, honouring Retry-After), or
// dead after MaxAttempts with the last error. A [BatchSender] in the
// client's transport (the bus bridge) takes its webhooks' messages many at
// a time instead of over HTTP, and is never dead-lettered for being away.
//
// Delivery is at-least-once: a deliverer that dies after the receiver got a
// message, before recording it, delivers it again after its lease. Every
// attempt carries the same webhook-id and Idempotency-Key, so a receiver
// that remembers the keys it processed handles each message effectively once.
package outbox
