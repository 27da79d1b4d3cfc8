// Command stint is the one binary of the stint job orchestrator. Its commands
// live in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stint-dev/stint/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C asks the command to stop cleanly (stint dev drains its
	// workers); once it is noticed, a second one ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], cli.Env{})
	stop()
	os.Exit(code)
}
