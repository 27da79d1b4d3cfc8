package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestQueueDefaultBackoff: `stint queues limit --default-backoff-*` keeps
// a queue's and a kind's default backoff in the database, on the database
// and through a server (same answers), `queues ls --json` shows it, and
// the failed attempt of a job `stint enqueue` made is retried on it. A
// negative backoff, or a max below the base, is a usage error that
// changes nothing.
func TestQueueDefaultBackoff(t *testing.T) {
	t.Parallel()
	v := newViaServer(t)
	db, st := v.db, v.st
	out := stint(t, db, "queues", "limit", "mail", "--default-backoff-base", "1h", "--default-backoff-max", "2h", "--default-backoff-factor", "3").ok(t).stdout
	if !strings.Contains(out, "backoff base 1h0m0s, factor 3, max 2h0m0s") {
		t.Errorf("queues limit said %q", out)
	}
	stint(t, db, "queues", "limit", "--kind", "send", "--default-backoff-base", "90m").ok(t)
	stint(t, db, "queues", "limit", "mail", "--default-backoff-base", "-1s").usageError(t, "--default-backoff-base")
	stint(t, db, "queues", "limit", "mail", "--default-backoff-max", "1m").usageError(t, "below its base")
	stint(t, db, "queues", "limit", "mail", "--default-backoff-factor", "0.5").usageError(t, "factor")

	remote := func(args ...string) result { return v.remote(v.admin, args...) }
	remote("queues", "limit", "mail", "--default-backoff-max", "1m").usageError(t, "below its base")
	for _, args := range [][]string{{"queues", "limit", "mail", "--default-backoff-factor", "3"}, {"queues", "ls", "--json"}} {
		r, l := remote(args...).ok(t).stdout, stint(t, db, args...).ok(t).stdout
		if r != l {
			t.Errorf("%v through the server:\n%s\non the database:\n%s", args, r, l)
		}
	}
	var queues []store.QueueInfo
	if err := json.Unmarshal([]byte(stint(t, db, "queues", "ls", "--json").ok(t).stdout), &queues); err != nil {
		t.Fatal(err)
	}
	want := store.SpecDefaults{BackoffBase: time.Hour, BackoffFactor: 3, BackoffMax: 2 * time.Hour}
	for _, q := range queues {
		if q.Name == "mail" && q.Defaults != want {
			t.Errorf("queues ls: %+v, want %+v", q.Defaults, want)
		}
	}

	ctx := context.Background()
	for _, c := range []struct {
		kind string
		want lifecycle.Backoff
	}{{"other", want.Backoff()}, {"send", lifecycle.Backoff{Base: 90 * time.Minute, Factor: 3, Max: 2 * time.Hour}}} {
		id := strings.Fields(stint(t, db, "enqueue", "--kind", c.kind, "--queue", "mail").ok(t).stdout)[0]
		jobs, err := st.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"mail"}, Limit: 1, LeaseTTL: time.Minute})
		if err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("claim: %v %d", err, len(jobs))
		}
		if _, err := st.JobStart(ctx, &store.OwnerParams{JobID: id, LeaseID: jobs[0].LeaseID}); err != nil {
			t.Fatal(err)
		}
		j, err := st.JobFail(ctx, &store.JobFailParams{OwnerParams: store.OwnerParams{JobID: id, LeaseID: jobs[0].LeaseID}, Error: lifecycle.JobError{Code: "boom"}})
		if err != nil {
			t.Fatal(err)
		}
		if at := j.UpdatedAt.Add(c.want.Delay(id, 1)).Truncate(time.Microsecond); !j.RunAt.Equal(at) {
			t.Errorf("%s: retry at %s (%s after the fail), want %s", c.kind, j.RunAt, j.RunAt.Sub(j.UpdatedAt), at)
		}
	}
}
