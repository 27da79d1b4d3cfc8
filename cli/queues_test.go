package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQueues(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	stint(t, db, "enqueue", "--kind", "mail", "--queue", "email").ok(t)
	stint(t, db, "enqueue", "--kind", "sms", "--queue", "email").ok(t)
	stint(t, db, "queues", "pause", "email").ok(t)
	stint(t, db, "queues", "limit", "email", "--max-running", "3", "--rate", "10", "--per", "1m", "--fair", "--weight", "acme=2").ok(t)
	var got []struct {
		Name       string         `json:"name"`
		Paused     bool           `json:"paused"`
		MaxRunning int            `json:"max_running"`
		RateLimit  int            `json:"rate_limit"`
		Jobs       map[string]int `json:"jobs"`
		Unserved   []string       `json:"unserved"`
	}
	if err := json.Unmarshal([]byte(stint(t, db, "queues", "ls", "--json").ok(t).stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Paused || got[0].MaxRunning != 3 || got[0].RateLimit != 10 || got[0].Jobs["queued"] != 2 ||
		strings.Join(got[0].Unserved, ",") != "mail,sms" {
		t.Fatalf("queues %+v", got)
	}
	if out := stint(t, db, "queues", "ls").ok(t).stdout; !strings.Contains(out, "UNSERVED") || !strings.Contains(out, "mail,sms") {
		t.Fatalf("table %q", out)
	}
	stint(t, db, "queues", "resume", "email").ok(t)
	if out := stint(t, db, "queues", "limit", "--kind", "sms", "--rate", "5", "--per", "1s").ok(t).stdout; !strings.Contains(out, "kind sms: rate 5 per 1s") {
		t.Fatalf("kind limit said %q", out)
	}
}

func TestQueuesBadInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	stint(t, db, "migrate").ok(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no limit given", []string{"limit", "q"}, "give --max-running"},
		{"bad weight", []string{"limit", "q", "--fair", "--weight", "acme=0"}, "weight 0 of tenant"},
		{"rate without interval", []string{"limit", "q", "--rate", "5"}, "needs --per"},
		{"negative", []string{"limit", "q", "--max-running", "-1"}, "expected an integer"},
		{"bad queue name", []string{"pause", "a b"}, "queue name"},
		{"two queues", []string{"resume", "a", "b"}, "expected one queue name"},
		{"kind with max running", []string{"limit", "sms", "--kind", "--rate", "1", "--per", "1s", "--max-running", "1"}, "--kind takes only --rate"},
		{"kind without rate", []string{"limit", "sms", "--kind", "--fair"}, "--kind takes only --rate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stint(t, db, append([]string{"queues"}, c.args...)...).usageError(t, c.want)
		})
	}
	var got []any
	if err := json.Unmarshal([]byte(stint(t, db, "queues", "ls", "--json").ok(t).stdout), &got); err != nil || len(got) != 0 {
		t.Fatalf("bad input wrote settings: %v (%v)", got, err)
	}
}
