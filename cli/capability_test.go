package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
)

// TestShippedBinaryFiresCron adds a schedule that ticks every second and runs
// stint dev, then stint server, on the database exactly as the binary does:
// each must make the schedule's job. The stores they build are wrapped for
// metrics and tracing; a capability lookup that stopped at the first wrapper
// never started the cron service there (the jobs of a schedule never came).
func TestShippedBinaryFiresCron(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"dev", "server"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := migratedDB(t)
			stint(t, db, "cron", "add", "every1", "--expr", "* * * * * *", "--kind", "cron.probe", "--queue", "cronq").ok(t)
			args := []string{"--db", db, mode}
			if mode == "server" {
				args = append(args, "--listen", "127.0.0.1:0", "--no-auth")
			} else {
				args = append(args, "--enqueue-demo=false", "--api", "127.0.0.1:0", "--shutdown-grace", "0")
			}
			ctx, cancel := context.WithCancel(context.Background())
			var out, errs syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- cli.Main(ctx, args, cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
			}()
			defer func() {
				cancel()
				<-done
			}()
			eventually(t, "a job made by the schedule", func() bool {
				r := stint(t, db, "jobs", "ls", "--queue", "cronq", "--json")
				return r.code == 0 && strings.Contains(r.stdout, "cron.probe")
			})
		})
	}
}
