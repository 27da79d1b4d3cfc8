package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmtCache holds the driver's statements, prepared once per pool when the
// driver opens; database/sql re-uses (or re-prepares) each on whichever
// connection a transaction holds. Preparing during a transaction could wait
// for a connection the transaction itself holds, so nothing is prepared later.
type stmtCache struct {
	m map[string]*sql.Stmt
}

func newStmtCache(ctx context.Context, db *sql.DB, queries []string) (*stmtCache, error) {
	c := &stmtCache{m: make(map[string]*sql.Stmt, len(queries))}
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
		c.m[q] = st
	}
	return c, nil
}

func (c *stmtCache) get(query string) (*sql.Stmt, error) {
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	return nil, fmt.Errorf("sqlite: statement not prepared at open: %.40q", query)
}

func (c *stmtCache) close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// readQueries are prepared on the reader pool when the driver opens (the
// writer prepares its statements on its own connection as it first runs them).
var readQueries = []string{qJobGet, qJobGetOne, qJobByDedupe, qJobClaimable, qJobList, qDuePromote, qDueLease,
	qDueStalled, qDueCancel, qDueTimeout, qDueDeadline, qEventByRequest, qEventList, qEventJobsByRequest,
	qNoticesAfter, qNoticesLast}
