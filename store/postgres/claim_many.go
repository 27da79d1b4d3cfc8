package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
)

var (
	_ store.ClaimRequestLookup      = (*tx)(nil)
	_ store.ClaimRequestLookupLater = (*tx)(nil)
)

// qJobsByClaimRequest finds the jobs whose claimed event carries any of
// many request ids: the retry checks of a multi-owner claim in one
// statement.
const qJobsByClaimRequest = `
SELECT DISTINCT e.request_id, e.job_id FROM job_events e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at
WHERE e.request_id = ANY($1::text[]) AND e.request_id <> '' AND e.type = 'claimed'`

// JobsByClaimRequest implements store.ClaimRequestLookup.
func (t *tx) JobsByClaimRequest(ctx context.Context, requestIDs []string) (map[string][]string, error) {
	type pair struct{ Request, Job string }
	pairs, err := rows(ctx, t, qJobsByClaimRequest, []any{requestIDs}, pgx.RowToStructByPos[pair])
	if err != nil {
		return nil, fmt.Errorf("postgres: find jobs by claim request ids: %w", err)
	}
	out := make(map[string][]string, len(pairs))
	for _, p := range pairs {
		out[p.Request] = append(out[p.Request], p.Job)
	}
	return out, nil
}

// JobsByClaimRequestLater implements store.ClaimRequestLookupLater: the
// lookup waits with the pending writes and goes out in the batch of the
// next statement (the claim), saving the round trip of its own.
func (t *tx) JobsByClaimRequestLater(requestIDs []string, found map[string][]string) {
	if len(requestIDs) == 0 {
		return
	}
	t.pending.Queue(qJobsByClaimRequest, requestIDs).Query(func(r pgx.Rows) error {
		for r.Next() {
			var req, job string
			if err := r.Scan(&req, &job); err != nil {
				return fmt.Errorf("postgres: find jobs by claim request ids: %w", err)
			}
			found[req] = append(found[req], job)
		}
		return r.Err()
	})
}
