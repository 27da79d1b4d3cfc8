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
// statement. Each request id is looked up on its own, an equality on the
// request id index of every partition (the DISTINCT keeps the lookup from
// being flattened into a join). Written as request_id = ANY($1), it went
// out ahead of the claim's plan settings and, from statistics taken while
// the events were few, was planned as a sequential scan of every event:
// 0.5 ms per claim at 9,000 events, growing with the table (auto_explain of
// stint bench remote, 2026-11-26).
const qJobsByClaimRequest = `
SELECT r.request_id, e.job_id
FROM (SELECT DISTINCT id FROM unnest($1::text[]) AS ids(id) WHERE id <> '') AS r(request_id)
CROSS JOIN LATERAL (
    SELECT DISTINCT e.job_id FROM job_events e JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at
    WHERE e.request_id = r.request_id AND e.request_id <> '' AND e.type = 'claimed'
) AS e`

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
