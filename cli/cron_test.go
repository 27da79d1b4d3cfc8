package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCron(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	stint(t, db, "cron", "add", "nightly", "--expr", "0 2 * * *", "--tz", "Europe/Paris", "--kind", "report").ok(t)
	file := filepath.Join(t.TempDir(), "schedules.json")
	if err := os.WriteFile(file, []byte(`[{"name": "ping", "expr": "@every 30s", "kind": "ping", "queue": "ops", "timeout": "10s"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	stint(t, db, "cron", "add", "--file", file).ok(t)
	stint(t, db, "cron", "pause", "ping").ok(t)
	var got []struct {
		Name   string `json:"name"`
		Paused bool   `json:"paused"`
		TZ     string `json:"time_zone"`
	}
	if err := json.Unmarshal([]byte(stint(t, db, "cron", "ls", "--json").ok(t).stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "nightly" || got[0].TZ != "Europe/Paris" || got[1].Name != "ping" || !got[1].Paused {
		t.Fatalf("schedules %+v", got)
	}
	if out := stint(t, db, "cron", "ls").ok(t).stdout; !strings.Contains(out, "NEXT TICK") || !strings.Contains(out, "nightly") {
		t.Fatalf("table %q", out)
	}
	stint(t, db, "cron", "resume", "ping").ok(t)
	stint(t, db, "cron", "rm", "ping").ok(t)
	stint(t, db, "cron", "rm", "ping").notFound(t, `schedule "ping": not found`)
}

func TestCronBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad expression", []string{"add", "x", "--expr", "61 * * * *", "--kind", "k"}, "cron expression"},
		{"unknown zone", []string{"add", "x", "--expr", "@daily", "--tz", "Nowhere/City", "--kind", "k"}, "time zone"},
		{"no kind", []string{"add", "x", "--expr", "@daily"}, "kind is required"},
		{"bad policy", []string{"add", "x", "--expr", "@daily", "--kind", "k", "--missed", "some"}, "missed-tick policy"},
		{"no name", []string{"add", "--expr", "@daily", "--kind", "k"}, "name the schedule"},
		{"bad name", []string{"pause", "a b"}, "schedule name"},
		{"missing file", []string{"add", "--file", "/nonexistent/s.json"}, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			r := stint(t, db, append([]string{"cron"}, c.args...)...)
			r.usageError(t, c.want)
			if _, err := os.Stat(db); err == nil {
				t.Fatal("bad input created the database")
			}
		})
	}
}
