package bus

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Each distinct job_id becomes one job, whatever the redeliveries and
// duplicate publishes; every state change reaches the event subjects.
func TestIntakeExactlyOnce(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, open(t), uniqueConfig(t, machineNATS))
			const n = 200
			for i := range n {
				req := JobRequest{JobID: fmt.Sprintf("req-%d", i), Priority: "interactive", Payload: []byte(`{"q":"hello"}`),
					Env: map[string]string{"tenant": "acme"}, WorkflowID: "wf-1", StepIndex: i % 3}
				h.publish("job.chat.simple", req)
				if i%5 == 0 { // a duplicate publish, byte for byte
					h.publish("job.chat.simple", req)
				}
			}
			eventually(t, "every request to be taken", func() bool {
				return testutil.ToFloat64(h.b.m.enqueued)+testutil.ToFloat64(h.b.m.duplicates) == n+n/5
			})
			all := jobs(t, h.st)
			if len(all) != n {
				t.Fatalf("%d jobs for %d distinct job_ids", len(all), n)
			}
			seen := map[string]bool{}
			for _, j := range all {
				if seen[j.CorrelationID] {
					t.Fatalf("job_id %s has two jobs", j.CorrelationID)
				}
				seen[j.CorrelationID] = true
				if j.Topic != "job.chat.simple" || j.Kind != "job.chat.simple" || j.Queue != "bus" || j.Priority != lifecycle.PriorityInteractive || j.Env["tenant"] != "acme" || j.Env[envWorkflow] != "wf-1" {
					t.Fatalf("job %+v does not carry its request", j)
				}
			}
			if d := testutil.ToFloat64(h.b.m.duplicates); d != n/5 {
				t.Fatalf("%v duplicates counted, want %d", d, n/5)
			}
			// Each job's enqueued event reaches stint.event.<topic> once.
			eventually(t, "the enqueued events", func() bool { return len(h.readStream(h.cfg.EventStream, h.cfg.EventPrefix)) == n })
			for id, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
				if m.Subject != h.cfg.EventPrefix+"job.chat.simple" || m.Result.Status != StatusScheduled || m.Result.Revision != 1 || !seen[m.Result.JobID] {
					t.Fatalf("event %s: %+v on %s", id, m.Result, m.Subject)
				}
			}
			verifyClean(t, h.st)
		})
	}
}

// Each bad request gets its error result and changes nothing else: the
// first job of a conflicting duplicate stays as it was.
func TestIntakeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	cfg := uniqueConfig(t, machineNATS)
	cfg.MaxPayloadBytes = 1024
	h := newHarness(t, sqliteStore(t, store.Options{}), cfg)
	h.publish("job.chat.simple", JobRequest{JobID: "first", Payload: []byte(`{"n":1}`)})
	eventually(t, "the first job", func() bool { return testutil.ToFloat64(h.b.m.enqueued) == 1 })
	before := jobs(t, h.st)

	cases := []struct {
		name, code, jobID string
		body              any
	}{
		{"malformed json", CodeMalformed, "", []byte(`{"job_id": "x", `)},
		{"not an object", CodeMalformed, "", []byte(`[1,2]`)},
		{"missing job_id", CodeMissingID, "", JobRequest{Payload: []byte(`{}`)}},
		{"unknown priority", CodePriority, "p1", JobRequest{JobID: "p1", Priority: "urgent"}},
		{"oversize payload", CodeTooLarge, "big", JobRequest{JobID: "big", Payload: []byte(`"` + strings.Repeat("x", 2000) + `"`)}},
		{"conflicting duplicate", CodeConflict, "first", JobRequest{JobID: "first", Payload: []byte(`{"n":2}`)}},
		{"reserved env key", CodeInvalid, "env", JobRequest{JobID: "env", Env: map[string]string{"stint.x": "y"}}},
		{"topic mismatch", CodeInvalid, "tm", JobRequest{JobID: "tm", Topic: "job.code.llm"}},
	}
	for _, c := range cases {
		h.publish("job.chat.simple", c.body)
	}
	eventually(t, "every refusal", func() bool { return len(h.readStream(h.cfg.EventStream, h.cfg.RejectPrefix)) == len(cases) })
	got := map[string]JobResult{}
	for _, m := range h.readStream(h.cfg.EventStream, h.cfg.RejectPrefix) {
		got[m.Result.ErrorCode+"/"+m.Result.JobID] = m.Result
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := got[c.code+"/"+c.jobID]
			if !ok {
				t.Fatalf("no error result %s for job_id %q; got %v", c.code, c.jobID, got)
			}
			if r.Status != StatusFailed || r.ErrorMessage == "" || r.Topic != "job.chat.simple" {
				t.Fatalf("error result %+v", r)
			}
		})
	}
	after := jobs(t, h.st)
	if len(after) != len(before) || after[0].Rev != before[0].Rev || string(after[0].Payload) != `{"n":1}` {
		t.Fatalf("a refused request changed the jobs: before %+v, after %+v", before, after)
	}
	verifyClean(t, h.st)
}

// A request the admission policy denies becomes a denied job, and its
// event answers DENIED.
func TestIntakeDenied(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	st := sqliteStore(t, store.Options{Admission: &store.Admission{Rules: []store.AdmissionRule{{Queue: "bus", Kinds: []string{"job.chat.simple"}}}}})
	h := newHarness(t, st, uniqueConfig(t, machineNATS))
	h.publish("job.code.llm", JobRequest{JobID: "nope"})
	eventually(t, "the DENIED event", func() bool { return len(h.readStream(h.cfg.EventStream, h.cfg.EventPrefix)) == 1 })
	for _, m := range h.readStream(h.cfg.EventStream, h.cfg.EventPrefix) {
		if m.Result.Status != StatusDenied || m.Result.JobID != "nope" || m.Result.ErrorMessage == "" || m.Subject != h.cfg.EventPrefix+"job.code.llm" {
			t.Fatalf("denial event %+v on %s", m.Result, m.Subject)
		}
	}
	if d := testutil.ToFloat64(h.b.m.denied); d != 1 {
		t.Fatalf("denied counted %v", d)
	}
}
