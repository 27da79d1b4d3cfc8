package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgObserver observes a PostgreSQL schema from connections of its own.
type pgObserver struct {
	url    string
	schema string
	conn   *pgx.Conn // for the storage figures
}

// PostgresObserver returns the [Observer] of the stint schema at url: its
// long transaction is REPEATABLE READ, so it holds one snapshot (and with it
// the xmin horizon) until released; its figures are every table's dead
// tuples and every table's and index's size in the schema.
func PostgresObserver(ctx context.Context, url, schema string) (Observer, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to observe schema %s: %w", schema, err)
	}
	return &pgObserver{url: url, schema: schema, conn: conn}, nil
}

func (o *pgObserver) Hold(ctx context.Context) (func() error, error) {
	conn, err := pgx.Connect(ctx, o.url)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err == nil {
		// The snapshot is taken by the first statement, not by BEGIN; any
		// statement will do.
		_, err = tx.Exec(ctx, "SELECT 1")
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return func() error {
		ctx := context.WithoutCancel(ctx)
		rerr := tx.Rollback(ctx)
		if cerr := conn.Close(ctx); rerr == nil {
			rerr = cerr
		}
		return rerr
	}, nil
}

// qRelations lists the schema's tables (plain and partitioned) and indexes,
// each partition with its partitioned table. It calls the statistics
// functions per relation rather than joining pg_stat_user_tables, which
// computes its row for every table of the database first.
const qRelations = `
SELECT c.relname,
       coalesce((SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
                 WHERE i.inhrelid = c.oid AND c.relkind = 'r'), ''),
       CASE WHEN c.relkind IN ('i', 'I') THEN 'index' ELSE 'table' END,
       CASE WHEN c.relkind = 'r' THEN pg_stat_get_dead_tuples(c.oid) ELSE 0 END,
       CASE WHEN c.relkind = 'r' THEN pg_stat_get_live_tuples(c.oid) ELSE 0 END,
       pg_relation_size(c.oid), pg_total_relation_size(c.oid)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'i', 'I')
ORDER BY c.relkind <> 'r' AND c.relkind <> 'p', c.relname`

func (o *pgObserver) Storage(ctx context.Context) (Storage, error) {
	rows, err := o.conn.Query(ctx, qRelations, o.schema)
	if err != nil {
		return Storage{}, err
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Relation, error) {
		var r Relation
		err := row.Scan(&r.Name, &r.Partitioned, &r.Kind, &r.DeadTuples, &r.LiveTuples, &r.Bytes, &r.TotalBytes)
		return r, err
	})
	return Storage{Relations: rels}, err
}

func (o *pgObserver) Close() error { return o.conn.Close(context.Background()) }
