package stint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store/sqlite"
)

// The README's Go quick start, as written: readmeQuickStart's body between
// the markers is the README's snippet (TestReadmeSnippetIsInSync checks it),
// and Example_readme runs it. Its send fails once, so the job succeeds only
// if the retry is promoted: by the maintenance services the pool runs.

var sendCalls atomic.Int32

// send is the README's email sender: it fails on its first call.
func send(_ context.Context, payload json.RawMessage) error {
	if sendCalls.Add(1) == 1 {
		return errors.New("smtp: 421 try again later")
	}
	return nil
}

func readmeQuickStart() {
	// README:begin
	ctx := context.Background()
	s, err := sqlite.OpenStore(ctx, "stint.db", sqlite.Options{}) // or postgres.OpenStore(ctx, url, postgres.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	mux := stint.NewMux()
	mux.HandleFunc("email.send", func(ctx context.Context, j *stint.Job) error {
		// ctx is cancelled on a cancel request, a lost lease, the timeout or the deadline;
		// j.Fence() is the fencing token (attempt + lease id) for your own side effects.
		return send(ctx, j.Payload()) // nil succeeds; an error is retried with backoff
	})
	// The pool also runs the maintenance services (retries, schedules, lease
	// expiry, timeouts), electing one process to run them when several share a
	// database. Every field of Config has a documented default.
	pool, err := stint.NewPool(s, mux, stint.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := pool.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer pool.Stop(context.Background())

	client, err := stint.NewClient(s, stint.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, stint.Spec{Kind: "email.send", Payload: json.RawMessage(`{"to":"ada@example.com"}`)})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Wait(ctx, res.Job.ID) // succeeded on attempt 2: the first one failed
	fmt.Println(job.State, job.Attempt, err)
	// README:end
}

// Example_readme runs the README's quick start in a fresh directory
// (examples run after every test, so changing directory is safe here).
func Example_readme() {
	dir, err := os.MkdirTemp("", "stint-readme")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	wd, err := os.Getwd()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		log.Fatal(err)
	}
	defer os.Chdir(wd)
	readmeQuickStart()
	// Output:
	// succeeded 2 <nil>
}

// TestReadmeSnippetIsInSync checks that README.md's Go quick start is the
// body of readmeQuickStart, so the example runs what the README says.
func TestReadmeSnippetIsInSync(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Using it from Go")
	_, rest, ok2 := strings.Cut(rest, "```go\n")
	snippet, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no ```go block under \"## Using it from Go\"")
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "// README:begin\n")
	body, _, _ = strings.Cut(body, "\t// README:end")
	var lines []string
	for l := range strings.SplitSeq(strings.TrimRight(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if want := strings.Join(lines, "\n") + "\n"; snippet != want {
		t.Errorf("README.md's Go snippet differs from readmeQuickStart's body; copy one to the other.\nREADME:\n%s\nreadme_test.go:\n%s", snippet, want)
	}
}
