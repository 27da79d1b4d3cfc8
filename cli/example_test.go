package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stint-dev/stint/cli"
)

// Main runs one command line and returns its exit code: 0 on success, 1
// for findings, 2 for bad input, 4 for something that does not exist, with
// one line on stderr saying what was expected.
func ExampleMain() {
	dir, err := os.MkdirTemp("", "stint-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "stint.db")
	ctx := context.Background()
	noEnv := func(string) string { return "" } // ignore STINT_* in the caller's environment
	quiet := cli.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: noEnv}
	shown := cli.Env{Stdout: os.Stdout, Stderr: os.Stdout, Getenv: noEnv}

	cli.Main(ctx, []string{"--db", db, "migrate"}, quiet)
	cli.Main(ctx, []string{"--db", db, "enqueue", "--kind", "email.send", "--payload", `{"to": "ada"}`}, quiet)
	verified := cli.Main(ctx, []string{"--db", db, "verify"}, shown)
	rejected := cli.Main(ctx, []string{"--db", db, "enqueue", "--kind", "email.send", "--priority", "urgent"}, shown)
	fmt.Println(verified, rejected)
	// Output:
	// verified 1 job, 1 event: 0 findings
	// stint: invalid argument "urgent" for "--priority" flag: expected an integer from -1000 to 1000, or critical, interactive, default or batch (see "stint enqueue --help")
	// 0 2
}
