package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// OpenAt opens a driver whose schema is migrated up to version only, as a
// release that had no later migration left it; its Migrate brings it up to
// date.
func OpenAt(ctx context.Context, url string, opts Options, version int) (*Driver, error) {
	d, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if err := d.migrateTo(ctx, version); err != nil {
		d.pool.Close()
		return nil, err
	}
	return d, nil
}

// RoundTrips counts what a driver's connections send: each statement sent
// alone and each batch is one round trip.
type RoundTrips struct{ n atomic.Int64 }

// N returns the round trips so far.
func (r *RoundTrips) N() int64 { return r.n.Load() }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// WithRoundTrips returns opts counting round trips into r.
func WithRoundTrips(opts Options, r *RoundTrips) Options {
	opts.tracer = r
	return opts
}
