package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// loadV2 makes a database of schema v2 (the release before the typed-column
// layout) from the committed dump.
func loadV2(t *testing.T) string {
	t.Helper()
	dump, err := os.ReadFile("testdata/v2.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), string(dump)); err != nil {
		t.Fatalf("load v2 dump: %v", err)
	}
	var v int
	if err := db.QueryRowContext(t.Context(), `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("fixture schema version = %d, %v; want 2", v, err)
	}
	return path
}

// golden is what the v2 release read back for one job.
type golden struct {
	Job        map[string]json.RawMessage   `json:"job"`
	Events     []map[string]json.RawMessage `json:"events"`
	Provenance map[string]json.RawMessage   `json:"provenance"`
}

// TestUpgradeV2 migrates a database made by the previous release in place
// and expects every job, event and provenance record to read back as that
// release read them, and Verify to find nothing.
func TestUpgradeV2(t *testing.T) {
	path := loadV2(t)
	b, err := os.ReadFile("testdata/v2.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]golden
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}

	d, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open (migrate) v2 database: %v", err)
	}
	// Later migrations (0004 and on) may follow; the layout comes first.
	if got := d.Applied(); len(got) == 0 || got[0] != "0003_layout" {
		t.Errorf("applied %v, want 0003_layout first", got)
	}
	s := store.New(d, store.Options{})
	defer s.Close()
	ctx := t.Context()

	// Fields the v2 release did not have: the upgrade derives them.
	newJobFields := map[string]bool{"failures": true, "attempt_started_at": true, "result_digest": true}
	for name, g := range want {
		var id string
		json.Unmarshal(g.Job["id"], &id)
		j, err := s.JobGet(ctx, id)
		if err != nil {
			t.Errorf("%s: get: %v", name, err)
			continue
		}
		sameFields(t, name+" job", g.Job, asFields(t, j), newJobFields)
		evs, err := s.JobEvents(ctx, id)
		if err != nil {
			t.Errorf("%s: events: %v", name, err)
			continue
		}
		if len(evs) != len(g.Events) {
			t.Errorf("%s: %d events, want %d", name, len(evs), len(g.Events))
			continue
		}
		for i := range evs {
			sameFields(t, name+" event", g.Events[i], asFields(t, evs[i]), nil)
		}
		p, err := s.JobProvenance(ctx, id)
		if g.Provenance == nil {
			if err == nil {
				t.Errorf("%s: provenance of a live job: %+v", name, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: provenance: %v", name, err)
			continue
		}
		sameFields(t, name+" provenance", g.Provenance, asFields(t, p), nil)
		if string(g.Provenance["result_digest"]) != string(asFields(t, j)["result_digest"]) {
			t.Errorf("%s: result_digest %s, want the provenance's %s", name, asFields(t, j)["result_digest"], g.Provenance["result_digest"])
		}
	}

	// Derived fields: failures from the event log (a release is no failure),
	// the last attempt's start from its started event.
	for name, failures := range map[string]int{"retrying": 1, "succeeded_after_retry": 1, "failed": 1,
		"stalled": 0, "running": 0, "queued": 0} {
		var id string
		json.Unmarshal(want[name].Job["id"], &id)
		j, _ := s.JobGet(ctx, id)
		if j.Failures != failures {
			t.Errorf("%s: failures = %d, want %d", name, j.Failures, failures)
		}
	}
	var runID string
	json.Unmarshal(want["running_heartbeats"].Job["id"], &runID)
	j, _ := s.JobGet(ctx, runID)
	evs, _ := s.JobEvents(ctx, runID)
	if j.AttemptStartedAt == nil || !j.AttemptStartedAt.Equal(evs[2].At) {
		t.Errorf("running job: attempt_started_at = %v, want its started event's %v", j.AttemptStartedAt, evs[2].At)
	}

	rep, err := s.Verify(ctx, &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Jobs != len(want) || len(rep.Findings) != 0 {
		t.Errorf("verify after upgrade: %d jobs (want %d), findings %+v", rep.Jobs, len(want), rep.Findings)
	}
}

func asFields(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sameFields compares two JSON objects field by field, byte for byte once
// compacted (so payloads keep their exact numbers and escapes); extra may
// appear in got only.
func sameFields(t *testing.T, what string, want, got map[string]json.RawMessage, extra map[string]bool) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || compact(g) != compact(w) {
			t.Errorf("%s: %s = %s, want %s", what, k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && !extra[k] {
			t.Errorf("%s: unexpected field %s = %s", what, k, g)
		}
	}
}

func compact(r json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, r); err != nil {
		return string(r)
	}
	return b.String()
}
