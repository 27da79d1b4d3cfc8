package remote

import (
	"context"

	"github.com/stint-dev/stint/store"
)

// Runs and the outbox are not offered over the API yet: run them with the
// server's own store (stint runs, stint webhooks, stint outbox on its
// database). A remote worker's jobs that belong to runs are still settled
// by the server, in the transaction of each transition it reports.

func (s *Store) RunCreate(context.Context, *store.RunCreateParams) (store.RunView, error) {
	return store.RunView{}, &UnsupportedError{"RunCreate"}
}
func (s *Store) RunAddJobs(context.Context, *store.RunAddJobsParams) (store.RunView, error) {
	return store.RunView{}, &UnsupportedError{"RunAddJobs"}
}
func (s *Store) RunCancel(context.Context, *store.RunCancelParams) (store.RunView, error) {
	return store.RunView{}, &UnsupportedError{"RunCancel"}
}
func (s *Store) RunRerun(context.Context, *store.RunRerunParams) (store.RunView, error) {
	return store.RunView{}, &UnsupportedError{"RunRerun"}
}
func (s *Store) RunTimeOutDue(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"RunTimeOutDue"}
}
func (s *Store) RunGet(context.Context, string) (store.RunView, error) {
	return store.RunView{}, &UnsupportedError{"RunGet"}
}
func (s *Store) RunList(context.Context, *store.RunListParams) ([]store.Run, error) {
	return nil, &UnsupportedError{"RunList"}
}
func (s *Store) RunEvents(context.Context, string) ([]store.RunEvent, error) {
	return nil, &UnsupportedError{"RunEvents"}
}
func (s *Store) WebhookAdd(context.Context, store.Webhook) (store.Webhook, error) {
	return store.Webhook{}, &UnsupportedError{"WebhookAdd"}
}
func (s *Store) WebhookList(context.Context) ([]store.Webhook, error) {
	return nil, &UnsupportedError{"WebhookList"}
}
func (s *Store) WebhookRemove(context.Context, string) error {
	return &UnsupportedError{"WebhookRemove"}
}
func (s *Store) OutboxClaim(context.Context, *store.OutboxClaimParams) ([]store.OutboxDelivery, error) {
	return nil, &UnsupportedError{"OutboxClaim"}
}
func (s *Store) OutboxDelivered(context.Context, *store.OutboxReportParams) error {
	return &UnsupportedError{"OutboxDelivered"}
}
func (s *Store) OutboxFailed(context.Context, *store.OutboxReportParams) error {
	return &UnsupportedError{"OutboxFailed"}
}
func (s *Store) OutboxList(context.Context, *store.OutboxListParams) ([]store.OutboxMessage, error) {
	return nil, &UnsupportedError{"OutboxList"}
}
func (s *Store) OutboxReplay(context.Context, int64) (store.OutboxMessage, error) {
	return store.OutboxMessage{}, &UnsupportedError{"OutboxReplay"}
}
