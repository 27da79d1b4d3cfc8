package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

const chromium = "/usr/bin/chromium"

// unavailable skips the test, or fails it under CI=true: CI must run it.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("the browser test cannot run under CI: %s", why)
	}
	t.Skipf("skipping the browser test: %s (CI=true makes this a failure)", why)
}

// prerequisites finds node and npm, installs chromium with apt when it is
// missing, and installs playwright-core from the committed lock file.
func prerequisites(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, tool+" is not installed")
		}
	}
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "true" && testing.Short() {
			unavailable(t, chromium+" is missing and -short is set")
		}
		t.Logf("installing chromium with apt-get")
		if out, err := exec.Command("apt-get", "install", "-y", "chromium").CombinedOutput(); err != nil {
			unavailable(t, fmt.Sprintf("apt-get install -y chromium: %v\n%s", err, tail(out)))
		}
	}
	if _, err := os.Stat(filepath.Join("node_modules", "playwright-core", "package.json")); err != nil {
		if out, err := exec.Command("npm", "ci", "--no-audit", "--no-fund").CombinedOutput(); err != nil {
			unavailable(t, fmt.Sprintf("npm ci: %v\n%s", err, tail(out)))
		}
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// TestDashboardInBrowser runs stint dev from a freshly built binary, adds
// real jobs with the binary, and has browser.mjs click through every page:
// a wrong token is refused, filters narrow the list, and the cancel and
// replay buttons and the queue's pause button change the store, which this
// test then reads itself.
// Screenshots land in testdata/artifacts (gitignored).
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("the browser test is not short")
	}
	prerequisites(t)
	dir := t.TempDir()
	bin, db := filepath.Join(dir, "stint"), filepath.Join(dir, "stint.db")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/stint-dev/stint/cmd/stint").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	url, token := startStint(t, ctx, bin, []string{"--db", db, "dev", "--api", "127.0.0.1:0", "--shutdown-grace", "0"},
		regexp.MustCompile(`Dashboard: (\S+)#token=(\S+)`), nil)

	enqueue := func(args ...string) string {
		out, err := exec.CommandContext(ctx, bin, append([]string{"--db", db, "enqueue"}, args...)...).Output()
		if err != nil {
			t.Fatalf("stint enqueue %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	queued := enqueue("--kind", "nobody.handles.this") // stays queued: no worker knows the kind
	const deadKind = "demo.fail"
	// A webhook on dead letters of deadKind whose receiver refuses its first
	// delivery for good (the message dies) and accepts every later one (the
	// message replayed from the Outbox page is delivered).
	var calls atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer receiver.Close()
	st, err := sqlite.OpenStore(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.WebhookAdd(ctx, store.Webhook{URL: receiver.URL, Secret: "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		EventTypes: []string{"dead_lettered"}, Kinds: []string{deadKind}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	enqueue("--kind", deadKind, "--max-attempts", "1")
	waitFor(t, ctx, db, func(st store.Store) bool {
		js, err := st.JobList(ctx, &store.JobListParams{States: []lifecycle.State{lifecycle.DeadLettered}, Kind: deadKind})
		return err == nil && len(js) > 0
	})
	var deadMessage int64
	waitFor(t, ctx, db, func(st store.Store) bool {
		ms, err := st.OutboxList(ctx, &store.OutboxListParams{State: store.OutboxDead})
		if err == nil && len(ms) > 0 {
			deadMessage = ms[0].ID
		}
		return deadMessage != 0
	})

	// A run of two steps, the second waiting on the first (a kind no worker
	// runs, so it stays as it is), written straight into the database.
	const runID = "browser-run"
	st, err = sqlite.OpenStore(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{ID: runID}, Jobs: []store.RunJobSpec{
		{Name: "first", Spec: lifecycle.Spec{Kind: "nobody.step"}},
		{Name: "second", Spec: lifecycle.Spec{Kind: "nobody.step"}, DependsOn: []string{"first"}},
	}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	artifacts, _ := filepath.Abs(filepath.Join("testdata", "artifacts"))
	node := exec.CommandContext(ctx, "node", "browser.mjs")
	node.Env = append(os.Environ(), "DASHBOARD_URL="+url, "TOKEN="+token, "QUEUED_ID="+queued,
		"DEAD_KIND="+deadKind, "RUN_ID="+runID, "ARTIFACTS="+artifacts)
	var nodeErr strings.Builder
	node.Stderr = &nodeErr
	out, err := node.Output()
	if err != nil {
		t.Fatalf("browser.mjs: %v\n%s\n(screenshots in %s)", err, nodeErr.String(), artifacts)
	}
	var got struct {
		Cancelled string   `json:"cancelled"`
		Replayed  []string `json:"replayed"`
		Dead      []string `json:"dead"`
		Paused    string   `json:"paused"`
		Outbox    int64    `json:"outbox_replayed"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("browser.mjs printed %q: %v", out, err)
	}
	t.Logf("screenshots in %s", artifacts)

	// The buttons changed the store: read it directly.
	st, err = sqlite.OpenStore(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if j, err := st.JobGet(ctx, queued); err != nil || j.State != lifecycle.Cancelled {
		t.Errorf("the job cancelled in the browser is %s (%v), want cancelled", j.State, err)
	}
	if len(got.Replayed) == 0 {
		t.Fatal("the browser replayed nothing")
	}
	qs, err := store.Queues(st)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := qs.QueueSettingsList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(settings, func(q store.QueueSettings) bool { return q.Name == got.Paused }); got.Paused == "" || i < 0 || !settings[i].Paused {
		t.Errorf("the queue paused in the browser (%q) is not paused in the store: %+v", got.Paused, settings)
	}
	// The outbox message replayed in the browser is delivered this time.
	if got.Outbox != deadMessage {
		t.Errorf("the browser replayed outbox message %d, want %d", got.Outbox, deadMessage)
	}
	waitFor(t, ctx, db, func(st store.Store) bool {
		ms, err := st.OutboxList(ctx, &store.OutboxListParams{State: store.OutboxDelivered})
		return err == nil && slices.ContainsFunc(ms, func(m store.OutboxMessage) bool { return m.ID == deadMessage })
	})
	for i, id := range got.Replayed {
		j, err := st.JobGet(ctx, id)
		if err != nil || j.ReplayOf == "" || (i < len(got.Dead) && j.ReplayOf != got.Dead[i]) {
			t.Errorf("replayed job %s: replay_of %q (%v)", id, j.ReplayOf, err)
		}
	}
}

// waitFor polls the SQLite store at db until cond holds.
func waitFor(t *testing.T, ctx context.Context, db string, cond func(store.Store) bool) {
	t.Helper()
	st, err := sqlite.OpenStore(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond(st) {
		select {
		case <-ctx.Done():
			t.Fatal("gave up waiting for stint dev")
		case <-tick.C:
		}
	}
}
