package stint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// openExampleStore opens a store on a SQLite file in a temporary directory;
// close removes it.
func openExampleStore() (s store.Store, close func()) {
	dir, err := os.MkdirTemp("", "stint-example")
	if err != nil {
		log.Fatal(err)
	}
	s, err = sqlite.OpenStore(context.Background(), filepath.Join(dir, "stint.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	return s, func() {
		s.Close()
		os.RemoveAll(dir)
	}
}

// Enqueue a job, work it with a handler, read its result.
func Example() {
	s, closeStore := openExampleStore()
	defer closeStore()
	ctx := context.Background()

	mux := stint.NewMux()
	mux.HandleFunc("greet", func(ctx context.Context, j *stint.Job) error {
		var p struct{ Name string }
		if err := j.Decode(&p); err != nil {
			return err
		}
		return j.SetResult("hello, " + p.Name)
	})
	pool, err := stint.NewPool(s, mux, stint.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := pool.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer pool.Stop(ctx)

	client, err := stint.NewClient(s, stint.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, stint.Spec{Kind: "greet", Payload: json.RawMessage(`{"Name":"Ada"}`)})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Wait(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, string(job.Result))
	// Output: succeeded "hello, Ada"
}

// Middleware wraps every handler of a Mux, as net/http middleware does.
func ExampleMux_Use() {
	s, closeStore := openExampleStore()
	defer closeStore()
	ctx := context.Background()

	mux := stint.NewMux()
	mux.Use(func(next stint.Handler) stint.Handler {
		return stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			err := next.Work(ctx, j)
			fmt.Printf("%s attempt %d: %v\n", j.Kind(), j.Attempt(), err)
			return err
		})
	})
	mux.HandleFunc("resize", func(ctx context.Context, j *stint.Job) error {
		return stint.Permanent(errors.New("not an image"))
	})
	pool, _ := stint.NewPool(s, mux, stint.Config{Logger: quietLogger()})
	_ = pool.Start(ctx)
	defer pool.Stop(ctx)

	client, _ := stint.NewClient(s, stint.ClientConfig{})
	res, _ := client.Enqueue(ctx, stint.Spec{Kind: "resize"})
	job, _ := client.Wait(ctx, res.Job.ID)
	fmt.Println(job.State, job.Error.Message)
	// Output:
	// resize attempt 1: permanent: not an image
	// failed not an image
}

// A job that exhausts its attempts is dead-lettered; once the cause is
// fixed, Replay runs it again as a new job linked to the original.
func ExampleClient_Replay() {
	s, closeStore := openExampleStore()
	defer closeStore()
	ctx := context.Background()

	var fixed atomic.Bool
	mux := stint.NewMux()
	mux.HandleFunc("charge", func(ctx context.Context, j *stint.Job) error {
		if !fixed.Load() {
			return errors.New("card processor down")
		}
		return nil
	})
	pool, _ := stint.NewPool(s, mux, stint.Config{Logger: quietLogger()})
	_ = pool.Start(ctx)
	defer pool.Stop(ctx)
	client, _ := stint.NewClient(s, stint.ClientConfig{})

	res, _ := client.Enqueue(ctx, stint.Spec{Kind: "charge", MaxAttempts: 1})
	original, _ := client.Wait(ctx, res.Job.ID)
	fmt.Println(original.State, original.ReasonCode, original.LastError.Message)

	fixed.Store(true)
	replay, err := client.Replay(ctx, original.ID)
	if err != nil {
		log.Fatal(err)
	}
	replay, _ = client.Wait(ctx, replay.ID)
	fmt.Println(replay.State, replay.ReplayOf == original.ID)
	// Output:
	// dead_lettered exhausted_retries card processor down
	// succeeded true
}
