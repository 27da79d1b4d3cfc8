package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestWorkerTopics: `stint worker --topics job.chat.*` runs the chat jobs
// and leaves the others queued. It works one command at a time, in claim
// order, so the older mail job would have gone first had the filter not
// held.
func TestWorkerTopics(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	for _, topic := range []string{"job.mail.send", "", "job.chat.simple"} {
		res, err := st.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "exec", Topic: topic}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res[0].Job.ID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errs syncBuffer
	go func() {
		done <- cli.Main(ctx, []string{"worker", "--db", db, "--queues", "default=1", "--topics", "job.chat.*",
			"--exec", "--", "true"}, cli.Env{Stdout: &out, Stderr: &errs})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint worker exited %d: %s", code, errs.String())
		}
	}()
	for deadline := time.Now().Add(patience); ; tick(t) {
		j, err := st.JobGet(t.Context(), ids[2])
		if err != nil {
			t.Fatal(err)
		}
		if j.State == lifecycle.Succeeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chat job is %s; the worker said:\n%s", j.State, errs.String())
		}
	}
	for _, id := range ids[:2] {
		if j, err := st.JobGet(t.Context(), id); err != nil || j.State != lifecycle.Queued {
			t.Errorf("job of topic %q is %s (%v): the worker took a job outside job.chat.*", j.Topic, j.State, err)
		}
	}
}
