package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// Open a store on PostgreSQL: the schema is created and migrated on the way.
func ExampleOpenStore() {
	ctx := context.Background()
	s, err := postgres.OpenStore(ctx, os.Getenv("STINT_DATABASE_URL"), postgres.Options{Schema: "stint"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "email.send", Queue: "mail"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Job.State)
}

// Enqueue a job in the same transaction as the application's own write: the
// job exists only if the order does.
func ExampleEnqueueTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("STINT_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES ($1)`, 42); err != nil {
		log.Fatal(err)
	}
	spec := lifecycle.Spec{Kind: "order.confirm", Payload: []byte(`{"order":42}`)}
	if _, err := postgres.EnqueueTx(ctx, tx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}}, postgres.Options{Schema: "stint"}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}
