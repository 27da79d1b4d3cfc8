package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestQueueDefaults: `stint queues limit --default-*` keeps a queue's and a
// kind's job defaults in the database, and `stint enqueue` (which says
// nothing of them) gets them: the kind's first, then the queue's. A bad
// default is a usage error.
func TestQueueDefaults(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	out := stint(t, db, "queues", "limit", "mail", "--default-max-attempts", "5", "--default-timeout", "30s", "--default-priority", "batch").ok(t).stdout
	if !strings.Contains(out, "defaults: max attempts 5, timeout 30s, priority -10") {
		t.Errorf("queues limit said %q", out)
	}
	stint(t, db, "queues", "limit", "--kind", "send", "--default-max-attempts", "7").ok(t)
	show := func(id string) lifecycle.Job {
		t.Helper()
		var j lifecycle.Job
		if err := json.Unmarshal([]byte(stint(t, db, "jobs", "show", id, "--json").ok(t).stdout), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	enqueue := func(args ...string) string {
		t.Helper()
		return strings.Fields(stint(t, db, append([]string{"enqueue"}, args...)...).ok(t).stdout)[0]
	}
	if j := show(enqueue("--kind", "other", "--queue", "mail")); j.MaxAttempts != 5 || j.Timeout.D() != 30*time.Second || j.Priority != -10 {
		t.Errorf("the queue's defaults: max_attempts %d timeout %s priority %d", j.MaxAttempts, j.Timeout.D(), j.Priority)
	}
	if j := show(enqueue("--kind", "send", "--queue", "mail")); j.MaxAttempts != 7 || j.Timeout.D() != 30*time.Second {
		t.Errorf("the kind's then the queue's: max_attempts %d timeout %s", j.MaxAttempts, j.Timeout.D())
	}
	stint(t, db, "queues", "limit", "mail", "--default-max-attempts", "5000").usageError(t, "--default-max-attempts")
	stint(t, db, "queues", "limit", "--kind", "send", "--max-running", "1", "--default-priority", "1").usageError(t, "--kind takes only")
}
