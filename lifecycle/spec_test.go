package lifecycle_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func wantValidation(t *testing.T, err error, inMsg string) {
	t.Helper()
	if !errors.Is(err, lifecycle.ErrValidation) {
		t.Fatalf("err = %v, want ErrValidation", err)
	}
	if !strings.Contains(err.Error(), inMsg) {
		t.Errorf("error %q does not say %q", err, inMsg)
	}
}

func TestSpecValidateRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 201)
	cases := []struct {
		name   string
		mutate func(s *lifecycle.Spec)
		inMsg  string
	}{
		{"no kind", func(s *lifecycle.Spec) { s.Kind = "" }, "kind is required"},
		{"blank kind", func(s *lifecycle.Spec) { s.Kind = " \t" }, "kind is required"},
		{"long kind", func(s *lifecycle.Spec) { s.Kind = long }, "limited to 200 bytes"},
		{"long queue", func(s *lifecycle.Spec) { s.Queue = long }, "limited to 200 bytes"},
		{"long topic", func(s *lifecycle.Spec) { s.Topic = long }, "limited to 200 bytes"},
		{"long dedupe key", func(s *lifecycle.Spec) { s.DedupeKey = strings.Repeat("d", 801) }, "dedupe_key is limited to 800 bytes"},
		{"priority too high", func(s *lifecycle.Spec) { s.Priority = 1001 }, "priority 1001 out of range"},
		{"priority too low", func(s *lifecycle.Spec) { s.Priority = -1001 }, "priority -1001 out of range"},
		{"payload too big", func(s *lifecycle.Spec) {
			s.Payload = json.RawMessage(`"` + strings.Repeat("p", lifecycle.MaxPayloadBytes) + `"`)
		}, "pass context_ptr"},
		{"payload not JSON", func(s *lifecycle.Spec) { s.Payload = json.RawMessage(`{to:1}`) }, "payload is not valid JSON"},
		{"negative max_attempts", func(s *lifecycle.Spec) { s.MaxAttempts = -1 }, "max_attempts -1 out of range"},
		{"max_attempts too high", func(s *lifecycle.Spec) { s.MaxAttempts = 1001 }, "max_attempts 1001 out of range"},
		{"negative timeout", func(s *lifecycle.Spec) { s.Timeout = -time.Second }, "timeout -1s is negative"},
		{"negative cancel grace", func(s *lifecycle.Spec) { s.CancelGrace = -time.Second }, "cancel_grace -1s is negative"},
		{"deadline now", func(s *lifecycle.Spec) { s.Deadline = ptr(t0) }, "not in the future"},
		{"deadline past", func(s *lifecycle.Spec) { s.Deadline = ptr(t0.Add(-time.Hour)) }, "not in the future"},
		{"on_exhausted queued", func(s *lifecycle.Spec) { s.OnExhausted = lifecycle.Queued }, "expected dead_lettered or failed"},
		{"topic with empty token", func(s *lifecycle.Spec) { s.Topic = "job..chat" }, "dotted tokens"},
		{"topic with trailing dot", func(s *lifecycle.Spec) { s.Topic = "job.chat." }, "dotted tokens"},
		{"topic with wildcard", func(s *lifecycle.Spec) { s.Topic = "job.*" }, "without spaces or wildcards"},
		{"topic with tail wildcard", func(s *lifecycle.Spec) { s.Topic = "job.>" }, "without spaces or wildcards"},
		{"topic with space", func(s *lifecycle.Spec) { s.Topic = "job.chat simple" }, "without spaces or wildcards"},
		{"negative budget", func(s *lifecycle.Spec) { s.Budget = &lifecycle.Budget{MaxCost: -1} }, "budget limits must not be negative"},
		{"blank queue", func(s *lifecycle.Spec) { s.Queue = "  " }, `queue "  " is blank`},
		{"queue with a space", func(s *lifecycle.Spec) { s.Queue = "my queue" }, `queue "my queue" contains ' '`},
		{"kind with a tab", func(s *lifecycle.Spec) { s.Kind = "email\tsend" }, `contains '\t'`},
		{"kind with a control character", func(s *lifecycle.Spec) { s.Kind = "email\x1bsend" }, "no spaces or control characters"},
		{"kind with an at sign", func(s *lifecycle.Spec) { s.Kind = "me@host" }, "letters, digits and . _ - : /"},
		{"NUL in kind", func(s *lifecycle.Spec) { s.Kind = "a\x00b" }, "kind contains a NUL byte"},
		{"invalid UTF-8 queue", func(s *lifecycle.Spec) { s.Queue = "q\xff" }, "queue is not valid UTF-8"},
		{"NUL in tenant", func(s *lifecycle.Spec) { s.Tenant = "\x00" }, "tenant contains a NUL byte"},
		{"invalid UTF-8 topic", func(s *lifecycle.Spec) { s.Topic = "job.\xfe" }, "topic is not valid UTF-8"},
		{"NUL in dedupe key", func(s *lifecycle.Spec) { s.DedupeKey = "k\x00" }, "dedupe_key contains a NUL byte"},
		{"NUL in env name", func(s *lifecycle.Spec) { s.Env = map[string]string{"A\x00": "1"} }, "env name contains a NUL byte"},
		{"invalid UTF-8 env value", func(s *lifecycle.Spec) { s.Env = map[string]string{"A": "\xff"} }, `env "A" is not valid UTF-8`},
		{"NUL in parent id", func(s *lifecycle.Spec) { s.ParentJobID = "p\x00" }, "parent_job_id contains a NUL byte"},
		{"NUL in depends_on", func(s *lifecycle.Spec) { s.DependsOn = []string{"ok", "\x00"} }, "depends_on[1] contains a NUL byte"},
		{"invalid UTF-8 payload", func(s *lifecycle.Spec) { s.Payload = json.RawMessage("\"\xff\"") }, "payload is not valid UTF-8"},
		{"payload 65 deep", func(s *lifecycle.Spec) {
			s.Payload = json.RawMessage(strings.Repeat("[", 65) + strings.Repeat("]", 65))
		}, "the limit is 64 levels"},
		{"payload 100000 deep", func(s *lifecycle.Spec) {
			s.Payload = json.RawMessage(strings.Repeat("[", 100000) + strings.Repeat("]", 100000))
		}, "the limit is 64 levels"},
		{"run_at after 9999", func(s *lifecycle.Spec) { s.RunAt = ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) }, "run_at 10000-01-01T00:00:00Z is out of range"},
		{"run_at before year 1", func(s *lifecycle.Spec) { s.RunAt = ptr(time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)) }, "between years 1 and 9999"},
		{"deadline after 9999", func(s *lifecycle.Spec) { s.Deadline = ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) }, "deadline 10000-01-01T00:00:00Z is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			tc.mutate(&s)
			wantValidation(t, s.Validate(t0), tc.inMsg)
			st, err := lifecycle.New(testJobID, s, "producer", "", t0)
			wantValidation(t, err, tc.inMsg)
			if !reflect.DeepEqual(st, lifecycle.Step{}) {
				t.Errorf("a rejected enqueue returned a step: %+v", st)
			}
		})
	}
}

func TestSpecValidateAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(s *lifecycle.Spec)
	}{
		{"minimal", func(s *lifecycle.Spec) { *s = lifecycle.Spec{Kind: "k"} }},
		{"limits", func(s *lifecycle.Spec) {
			s.Priority, s.MaxAttempts = -lifecycle.MaxPriority, lifecycle.MaxMaxAttempts
			s.Kind, s.DedupeKey = strings.Repeat("k", 200), strings.Repeat("d", 800)
		}},
		{"topic", func(s *lifecycle.Spec) { s.Topic = "job.chat.simple" }},
		{"failed policy", func(s *lifecycle.Spec) { s.OnExhausted = lifecycle.Failed }},
		{"future deadline", func(s *lifecycle.Spec) { s.Deadline = ptr(t0.Add(time.Nanosecond)) }},
		{"zero budget", func(s *lifecycle.Spec) { s.Budget = &lifecycle.Budget{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			tc.mutate(&s)
			if err := s.Validate(t0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	t.Run("empty id", func(t *testing.T) {
		t.Parallel()
		_, err := lifecycle.New("", baseSpec(), "producer", "", t0)
		wantValidation(t, err, "job id is required")
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		j := enqueue(t, lifecycle.Spec{Kind: "k"}).job
		if j.Queue != "default" || j.MaxAttempts != 3 || j.OnExhausted != lifecycle.DeadLettered ||
			j.CancelGrace.D() != lifecycle.DefaultCancelGrace || j.Priority != lifecycle.PriorityDefault {
			t.Errorf("defaults: queue %q max_attempts %d on_exhausted %s cancel_grace %s priority %d",
				j.Queue, j.MaxAttempts, j.OnExhausted, j.CancelGrace.D(), j.Priority)
		}
	})
	t.Run("copies the spec", func(t *testing.T) {
		t.Parallel()
		s := baseSpec()
		s.Queue, s.MaxAttempts, s.OnExhausted, s.Timeout = "mail", 7, lifecycle.Failed, time.Minute
		s.DependsOn, s.Budget, s.Deadline = []string{"job-0"}, &lifecycle.Budget{MaxSteps: 9}, ptr(t0.Add(time.Hour))
		before := deepCopy(s)
		st, err := lifecycle.New(testJobID, s, "producer", "req-1", t0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before, s) {
			t.Fatalf("New modified its spec")
		}
		j := st.Job
		if j.Queue != "mail" || j.MaxAttempts != 7 || j.OnExhausted != lifecycle.Failed || j.Timeout.D() != time.Minute ||
			j.Budget.MaxSteps != 9 || !j.Deadline.Equal(*s.Deadline) || j.Env["REGION"] != "eu" || string(j.Payload) != string(s.Payload) {
			t.Errorf("job does not carry the spec: %+v", j)
		}
		if shared := sharedRefs(reflect.ValueOf(s), reflect.ValueOf(lifecycle.Spec{
			Payload: j.Payload, Env: j.Env, DependsOn: j.DependsOn, Budget: j.Budget, Deadline: j.Deadline,
		}), "Spec"); len(shared) > 0 {
			t.Errorf("the job shares memory with the spec through %v", shared)
		}
	})
	cases := []struct {
		name   string
		mutate func(s *lifecycle.Spec)
		state  lifecycle.State
		event  lifecycle.EventType
		runAt  time.Time
	}{
		{"now", func(*lifecycle.Spec) {}, lifecycle.Queued, lifecycle.EventEnqueued, t0},
		{"run_at now", func(s *lifecycle.Spec) { s.RunAt = ptr(t0) }, lifecycle.Queued, lifecycle.EventEnqueued, t0},
		{"run_at past", func(s *lifecycle.Spec) { s.RunAt = ptr(t0.Add(-time.Hour)) }, lifecycle.Queued, lifecycle.EventEnqueued, t0},
		{"run_at future", func(s *lifecycle.Spec) { s.RunAt = ptr(t0.Add(time.Hour)) }, lifecycle.Scheduled, lifecycle.EventEnqueued, t0.Add(time.Hour)},
		{"depends_on", func(s *lifecycle.Spec) { s.DependsOn = []string{"a", "b"} }, lifecycle.Blocked, lifecycle.EventEnqueued, t0},
		{"deny reason", func(s *lifecycle.Spec) { s.DenyReason = "over quota" }, lifecycle.Denied, lifecycle.EventDenied, t0},
		{"deny beats depends_on", func(s *lifecycle.Spec) {
			s.DenyReason, s.DependsOn = "over quota", []string{"a"}
		}, lifecycle.Denied, lifecycle.EventDenied, t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := baseSpec()
			tc.mutate(&s)
			st, err := lifecycle.New(testJobID, s, "producer", "req-1", t0)
			if err != nil {
				t.Fatal(err)
			}
			j, ev := st.Job, st.Event
			if j.State != tc.state || !j.RunAt.Equal(tc.runAt) {
				t.Errorf("state %s run_at %s, want %s at %s", j.State, j.RunAt, tc.state, tc.runAt)
			}
			if j.Rev != 1 || j.Attempt != 0 || !j.CreatedAt.Equal(t0) || j.ID != testJobID {
				t.Errorf("rev %d attempt %d created %s id %q", j.Rev, j.Attempt, j.CreatedAt, j.ID)
			}
			if ev.Type != tc.event || ev.Op != lifecycle.OpEnqueue || ev.FromState != "" || ev.ToState != tc.state ||
				ev.Actor != lifecycle.ActorClient || ev.ActorID != "producer" || ev.RequestID != "req-1" || ev.Rev != 1 {
				t.Errorf("event %+v", ev)
			}
			if tc.state.Terminal() {
				if j.FinishedAt == nil || !j.FinishedAt.Equal(t0) || j.Reason != s.DenyReason || ev.Reason != s.DenyReason {
					t.Errorf("denied job: finished_at %v reason %q event reason %q", j.FinishedAt, j.Reason, ev.Reason)
				}
			} else if j.FinishedAt != nil {
				t.Errorf("finished_at %v on a live job", j.FinishedAt)
			}
			if err := lifecycle.Check(j); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParsePriority(t *testing.T) {
	t.Parallel()
	good := map[string]int{
		"critical": 20, "interactive": 10, "default": 0, "batch": -10, "": 0,
		"CRITICAL": 20, " Batch ": -10, "5": 5, "-1000": -1000, "1000": 1000, "+7": 7,
	}
	for in, want := range good {
		t.Run("ok "+in, func(t *testing.T) {
			t.Parallel()
			if got, err := lifecycle.ParsePriority(in); err != nil || got != want {
				t.Errorf("ParsePriority(%q) = %d, %v; want %d", in, got, err, want)
			}
		})
	}
	for _, in := range []string{"urgent", "1001", "-1001", "1.5", "0x10", "99999999999999999999"} {
		t.Run("bad "+in, func(t *testing.T) {
			t.Parallel()
			_, err := lifecycle.ParsePriority(in)
			wantValidation(t, err, "critical, interactive, default, batch")
		})
	}
}

func TestParseState(t *testing.T) {
	t.Parallel()
	for _, s := range lifecycle.States {
		if got, err := lifecycle.ParseState(string(s)); err != nil || got != s {
			t.Errorf("ParseState(%q) = %q, %v", s, got, err)
		}
	}
	for _, in := range []string{"", "Queued", "done", "∅"} {
		_, err := lifecycle.ParseState(in)
		if !errors.Is(err, lifecycle.ErrValidation) || !strings.Contains(err.Error(), "dead_lettered") {
			t.Errorf("ParseState(%q) err = %v, want ErrValidation listing the states", in, err)
		}
	}
}

func TestStatePredicates(t *testing.T) {
	t.Parallel()
	terminal := map[lifecycle.State]bool{
		lifecycle.Succeeded: true, lifecycle.Failed: true, lifecycle.Cancelled: true, lifecycle.TimedOut: true,
		lifecycle.Halted: true, lifecycle.DeadLettered: true, lifecycle.Denied: true,
	}
	leased := map[lifecycle.State]bool{lifecycle.Claimed: true, lifecycle.Running: true, lifecycle.CancelRequested: true}
	if len(lifecycle.States) != 15 {
		t.Fatalf("%d states, DESIGN.md has 15", len(lifecycle.States))
	}
	for _, s := range lifecycle.States {
		if s.Terminal() != terminal[s] || s.Leased() != leased[s] || !s.Valid() {
			t.Errorf("%s: terminal %v leased %v valid %v", s, s.Terminal(), s.Leased(), s.Valid())
		}
	}
	if lifecycle.State("").String() != "∅" || lifecycle.State("").Valid() {
		t.Errorf("the empty state should print ∅ and be invalid")
	}
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want time.Duration
	}{
		{`"30s"`, 30 * time.Second},
		{`"1m30s"`, 90 * time.Second},
		{`"0s"`, 0},
		{`"-2ms"`, -2 * time.Millisecond},
		{`1000000000`, time.Second},
	}
	for _, tc := range good {
		t.Run("ok "+tc.in, func(t *testing.T) {
			t.Parallel()
			var d lifecycle.Duration
			if err := json.Unmarshal([]byte(tc.in), &d); err != nil || d.D() != tc.want {
				t.Errorf("Unmarshal(%s) = %s, %v; want %s", tc.in, d.D(), err, tc.want)
			}
		})
	}
	bad := []struct{ in, inMsg string }{
		{`"30 seconds"`, `expected a Go duration like "30s"`},
		{`""`, `expected a Go duration like "30s"`},
		{`"5"`, `expected a Go duration like "30s"`},
		{`1.5`, `duration must be a string like "30s"`},
		{`true`, `duration must be a string like "30s"`},
		{`{}`, `duration must be a string like "30s"`},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.in, func(t *testing.T) {
			t.Parallel()
			var d lifecycle.Duration
			wantValidation(t, d.UnmarshalJSON([]byte(tc.in)), tc.inMsg)
			var j struct{ Timeout lifecycle.Duration }
			wantValidation(t, json.Unmarshal([]byte(`{"Timeout":`+tc.in+`}`), &j), tc.inMsg)
		})
	}
	t.Run("null leaves the value alone", func(t *testing.T) {
		t.Parallel()
		// encoding/json: "By convention, to approximate the behavior of
		// Unmarshal itself, Unmarshalers implement UnmarshalJSON([]byte("null"))
		// as a no-op." A client sending "timeout": null must not be refused.
		j := struct{ Timeout lifecycle.Duration }{Timeout: lifecycle.Duration(time.Minute)}
		if err := json.Unmarshal([]byte(`{"Timeout":null}`), &j); err != nil || j.Timeout.D() != time.Minute {
			t.Errorf("Unmarshal null = %s, %v; want 1m0s kept and no error", j.Timeout.D(), err)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		t.Parallel()
		in := struct {
			Timeout lifecycle.Duration `json:"timeout"`
		}{lifecycle.Duration(90 * time.Second)}
		b, err := json.Marshal(in)
		if err != nil || string(b) != `{"timeout":"1m30s"}` {
			t.Fatalf("Marshal = %s, %v", b, err)
		}
		out := in
		out.Timeout = 0
		if err := json.Unmarshal(b, &out); err != nil || out != in {
			t.Fatalf("round trip = %+v, %v", out, err)
		}
	})
}
