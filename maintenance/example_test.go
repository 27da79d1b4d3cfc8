package maintenance_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// A Maintainer elects itself leader of a fresh database and runs the
// services; its scheduler promotes a job when it is due. A manual clock
// stands in for time.
func ExampleMaintainer() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-example")
	defer os.RemoveAll(dir)
	clk := clock.NewManual(time.Date(2030, time.January, 1, 9, 0, 0, 0, time.UTC))
	s, err := sqlite.OpenStore(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	elected := make(chan maintenance.LeaderChange, 1)
	m, err := maintenance.New(s, &maintenance.Config{
		Clock:  clk,
		Logger: slog.New(slog.DiscardHandler),
		Election: maintenance.ElectorConfig{
			ID: "node-1",
			OnChange: func(c maintenance.LeaderChange) {
				select {
				case elected <- c:
				default: // the hook must never block the election
				}
			},
		},
	})
	if err != nil {
		panic(err)
	}
	if err := m.Start(ctx); err != nil {
		panic(err)
	}
	defer m.Stop()
	c := <-elected
	fmt.Printf("%s leads: %v, term %d\n", c.ID, c.Leader, c.Term)

	ready, unsubscribe := s.Wakeups()
	defer unsubscribe()
	runAt := clk.Now().Add(3 * time.Second)
	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "email", RunAt: &runAt}}}); err != nil {
		panic(err)
	}
	clk.Advance(3 * time.Second)
	m.Wake() // or wait for the scheduler's next tick
	fmt.Println("claimable in queue", <-ready)
	// Output:
	// node-1 leads: true, term 1
	// claimable in queue default
}
