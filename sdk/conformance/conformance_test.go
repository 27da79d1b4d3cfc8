package conformance_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
)

// runner is how to start one language's scenario worker.
type runner struct {
	lang string
	cmd  func(t *testing.T) *exec.Cmd
}

var runners = []runner{
	{"go", func(t *testing.T) *exec.Cmd {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(c.Env, envGoWorker+"=1")
		return c
	}},
	{"typescript", func(t *testing.T) *exec.Cmd {
		node := need(t, "node", "install Node.js 20 or later")
		if _, err := os.Stat("../typescript/dist/index.js"); err != nil {
			missing(t, "sdk/typescript is not built: run `npm ci && npm run build` in sdk/typescript")
		}
		return exec.Command(node, "testdata/worker.mjs")
	}},
	{"python", func(t *testing.T) *exec.Cmd {
		return exec.Command(need(t, "python3", "install python3 (3.9 or later)"), "testdata/worker.py")
	}},
}

// TestScenarios runs the scenario set of doc.go against each language's worker.
func TestScenarios(t *testing.T) {
	bin := stintBinary(t)
	for _, r := range runners {
		t.Run(r.lang, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, bin)
			start := func() *worker { return startWorker(t, r.cmd(t), s, "conf") }
			w := start()
			t.Run("claim and complete", func(t *testing.T) { claimAndComplete(t, s, r.lang) })
			t.Run("retry with backoff", func(t *testing.T) { retryWithBackoff(t, s) })
			t.Run("cancel reaches the handler", func(t *testing.T) { cancelReachesHandler(t, s, w) })
			t.Run("a stale lease's report is rejected", func(t *testing.T) { staleLeaseRejected(t, s, w) })
			t.Run("shutdown loses no attempt", func(t *testing.T) { shutdownLosesNoAttempt(t, s, w, start) })
			t.Run("steps replayed after a kill", func(t *testing.T) {
				stepsReplayedAfterKill(t, s, func() *worker { return startWorker(t, r.cmd(t), s, "conf-steps") })
			})
		})
	}
}

func claimAndComplete(t *testing.T, s *server, lang string) {
	var ids []string
	for i := range 5 {
		ids = append(ids, s.enqueue(t, "echo", map[string]any{"i": i}))
	}
	for i, id := range ids {
		j := s.wait(t, id, stintv1.JobState_JOB_STATE_SUCCEEDED)
		r := j.GetResult().GetStructValue().AsMap()
		if r["lang"] != lang || r["attempt"] != 1.0 || r["echo"].(map[string]any)["i"] != float64(i) {
			t.Fatalf("job %d: result %v", i, r)
		}
		if j.Attempt != 1 || !strings.HasPrefix(j.LastOwner, "conf-worker/") {
			t.Fatalf("job %d: attempt %d, last owner %q", i, j.Attempt, j.LastOwner)
		}
	}
}

func retryWithBackoff(t *testing.T, s *server) {
	id := s.enqueue(t, "flaky", map[string]any{"fail": 2})
	j := s.wait(t, id, stintv1.JobState_JOB_STATE_SUCCEEDED)
	if j.Attempt != 3 || j.Failures != 2 || j.GetLastError().GetCode() != "flaky" {
		t.Fatalf("attempt %d, failures %d, last error %v", j.Attempt, j.Failures, j.LastError)
	}
	// Each failure scheduled its retry by the backoff: the retry's run_at
	// lies after the failure.
	retries := 0
	for _, e := range s.events(t, id) {
		if e.Type == stintv1.EventType_EVENT_TYPE_RETRY_SCHEDULED {
			retries++
			if !e.RunAt.AsTime().After(e.At.AsTime()) {
				t.Fatalf("retry scheduled at %v to run at %v: no backoff", e.At.AsTime(), e.RunAt.AsTime())
			}
		}
	}
	if retries != 2 {
		t.Fatalf("%d retries scheduled, want 2", retries)
	}
	// RetryAfter replaces the backoff.
	id = s.enqueue(t, "flaky", map[string]any{"fail": 0, "retryAfterMs": 50})
	if j := s.wait(t, id, stintv1.JobState_JOB_STATE_SUCCEEDED); j.Attempt != 2 || j.Failures != 1 {
		t.Fatalf("RetryAfter: attempt %d, failures %d", j.Attempt, j.Failures)
	}
}

func cancelReachesHandler(t *testing.T, s *server, w *worker) {
	id := s.enqueue(t, "block", nil)
	w.expect(t, "started "+id)
	if _, err := s.jobs.CancelJob(t.Context(), connect.NewRequest(&stintv1.CancelJobRequest{Id: id, Reason: "conformance"})); err != nil {
		t.Fatal(err)
	}
	// The lease is 10 minutes long and heartbeats come every 200s: the
	// handler hears of the cancel from the notices stream, well within the
	// wait's deadline.
	w.expect(t, "aborted "+id+" cancel")
	if j := s.wait(t, id, stintv1.JobState_JOB_STATE_CANCELLED); j.ReasonCode != "cancelled" {
		t.Fatalf("reason %q", j.ReasonCode)
	}
}

func staleLeaseRejected(t *testing.T, s *server, w *worker) {
	id := s.enqueue(t, "stale", nil)
	w.expect(t, "rejected "+id+" stale_lease")
	j := s.wait(t, id, stintv1.JobState_JOB_STATE_SUCCEEDED)
	if j.GetResult().GetStringValue() != "second" || j.Failures != 0 {
		t.Fatalf("result %v, failures %d: the stale report must not have counted", j.Result, j.Failures)
	}
}

func shutdownLosesNoAttempt(t *testing.T, s *server, w *worker, start func() *worker) {
	id := s.enqueue(t, "block", nil)
	w.expect(t, "started "+id)
	w.stop(t)
	w.expect(t, "aborted "+id+" shutdown")
	w.expect(t, "stopped")
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("the worker's graceful stop failed: %v", err)
	}
	j := s.get(t, id)
	if j.State != stintv1.JobState_JOB_STATE_QUEUED || j.Failures != 0 {
		t.Fatalf("after shutdown: state %s, failures %d; want queued with no failure", j.State, j.Failures)
	}
	// The next worker runs it: block again, so cancel it there.
	w2 := start()
	w2.expect(t, "started "+id)
	if _, err := s.jobs.CancelJob(t.Context(), connect.NewRequest(&stintv1.CancelJobRequest{Id: id})); err != nil {
		t.Fatal(err)
	}
	s.wait(t, id, stintv1.JobState_JOB_STATE_CANCELLED)
	if j := s.get(t, id); j.Attempt != 2 || j.Failures != 0 {
		t.Fatalf("attempt %d, failures %d", j.Attempt, j.Failures)
	}
}

// stepsReplayedAfterKill: the steps handler runs step one, then waits for
// a signal with the lease given back; its worker is killed (SIGKILL), and
// a new worker, woken by the signal, replays step one without running it,
// sleeps durably and runs step two. Every step's side effect (a line on
// stdout) happens once across the kill, and step outputs cross the API
// byte for byte.
func stepsReplayedAfterKill(t *testing.T, s *server, start func() *worker) {
	w := start()
	id := s.enqueueTo(t, "conf-steps", "steps", nil)
	w.expect(t, "ran "+id+" one")
	s.wait(t, id, stintv1.JobState_JOB_STATE_SCHEDULED) // waiting for its signal, no lease held
	w.kill(t)
	w2 := start()
	if _, err := s.jobs.SignalJob(t.Context(), connect.NewRequest(&stintv1.SignalJobRequest{Id: id, Name: "go", Payload: `{"n":12345678901234567}`})); err != nil {
		t.Fatal(err)
	}
	j := s.wait(t, id, stintv1.JobState_JOB_STATE_SUCCEEDED)
	w2.expect(t, "ran "+id+" two")
	if slices.Contains(w2.seen, "ran "+id+" one") {
		t.Fatalf("step one ran again after the kill: %q", w2.seen)
	}
	r := j.GetResult().GetStructValue().AsMap()
	if r["one"] != 1.0 || r["two"] != 2.0 || r["received"] != true {
		t.Fatalf("result %v", r)
	}
	res, err := s.jobs.ListSteps(t.Context(), connect.NewRequest(&stintv1.ListStepsRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range res.Msg.Steps {
		names = append(names, st.Kind+":"+st.Name)
	}
	if got, want := strings.Join(names, " "), "run:one wait:go signal:go sleep:nap run:two"; got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if got, want := res.Msg.Steps[2].Output, `{"received":true,"payload":{"n":12345678901234567}}`; got != want {
		t.Fatalf("the signal's record %s, want %s", got, want)
	}
}

// server is a `stint server` process and a client of it.
type server struct {
	url, client, worker string
	jobs                stintv1connect.JobServiceClient
}

func (s *server) enqueue(t *testing.T, kind string, payload map[string]any) string {
	t.Helper()
	return s.enqueueTo(t, "conf", kind, payload)
}

func (s *server) enqueueTo(t *testing.T, queue, kind string, payload map[string]any) string {
	t.Helper()
	p, err := structpb.NewStruct(payload)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.jobs.Enqueue(t.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: kind, Queue: queue, Payload: p, MaxAttempts: 5}}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Msg.Job.Id
}

func (s *server) get(t *testing.T, id string) *stintv1.Job {
	t.Helper()
	res, err := s.jobs.GetJob(t.Context(), connect.NewRequest(&stintv1.GetJobRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Msg.Job
}

func (s *server) events(t *testing.T, id string) []*stintv1.Event {
	t.Helper()
	res, err := s.jobs.ListEvents(t.Context(), connect.NewRequest(&stintv1.ListEventsRequest{JobId: id}))
	if err != nil {
		t.Fatal(err)
	}
	return res.Msg.Events
}

// wait polls the job until it reaches state, for at most a minute.
func (s *server) wait(t *testing.T, id string, state stintv1.JobState) *stintv1.Job {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		j := s.get(t, id)
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after a minute, want %s", id, j.State, state)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func startServer(t *testing.T, bin string) *server {
	t.Helper()
	db := filepath.Join(t.TempDir(), "stint.db")
	token := func(role string) string {
		out, err := exec.Command(bin, "--db", db, "tokens", "create", "--tenant", "acme", "--role", role, "--name", "conf-"+role).Output()
		if err != nil {
			t.Fatalf("tokens create: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	s := &server{client: token("client"), worker: token("worker")}
	cmd := exec.Command(bin, "--db", db, "server", "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "stint server listening on "); ok {
			s.url = url
			break
		}
	}
	if s.url == "" {
		t.Fatalf("stint server exited before listening: %v", sc.Err())
	}
	go func() { // keep draining, so the server never blocks on its output
		for sc.Scan() {
		}
	}()
	s.jobs = stintv1connect.NewJobServiceClient(http.DefaultClient, s.url, connect.WithInterceptors(bearer(s.client)))
	return s
}

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}
