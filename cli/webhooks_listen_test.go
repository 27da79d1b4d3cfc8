package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestDevDemoRunReachesWebhooksListen is the newcomer's path: `stint
// webhooks listen` in one terminal, `stint dev --webhook URL
// --webhook-secret S` (the command listen prints) in another; the demo run's
// events, its final status among them, arrive signed, and the run is
// reported.
func TestDevDemoRunReachesWebhooksListen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"webhooks", "listen", "--listen", "127.0.0.1:0"},
			cli.Env{Stdout: out, Stderr: errOut, Getenv: func(string) string { return "" }})
	}()
	t.Cleanup(func() { cancel(); <-done })

	devCmd := regexp.MustCompile(`stint dev --webhook (\S+) --webhook-secret (\S+)`)
	var m []string
	eventually(t, "listen to print the dev command", func() bool {
		m = devCmd.FindStringSubmatch(out.String())
		return m != nil
	})
	db := newDB(t)
	d := startDev(t, "--db", db, "dev", "--shutdown-grace", "0", "--api", "127.0.0.1:0", "--webhook", m[1], "--webhook-secret", m[2])
	eventually(t, "the demo run's final status to be received", func() bool {
		return strings.Contains(out.String(), "run_succeeded")
	})
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventually(t, "the demo run to be reported", func() bool {
		runs, err := st.RunList(t.Context(), &store.RunListParams{})
		return err == nil && len(runs) == 1 && runs[0].ReportedAt != nil
	})
	if code := d.stop(t); code != cli.ExitOK {
		t.Fatalf("stint dev exited %d: %s", code, d.errOut.String())
	}
	got := out.String()
	if strings.Contains(got, "BAD") || !strings.Contains(got, "signature ok") {
		t.Errorf("deliveries should all verify:\n%s", got)
	}
	if !strings.Contains(d.out.String(), "webhook ") || !strings.Contains(d.out.String(), m[1]) {
		t.Errorf("stint dev does not say it subscribed %s:\n%s", m[1], d.out.String())
	}
}

// TestWebhooksListenRefusesBadSignatures checks that a delivery signed with
// another secret is printed as BAD and answered 401 (so the outbox
// retries), and a good one 204.
func TestWebhooksListenRefusesBadSignatures(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan int, 1)
	secret := "whsec_" + strings.Repeat("QUJD", 8)
	go func() {
		done <- cli.Main(ctx, []string{"webhooks", "listen", "--listen", "127.0.0.1:0", "--secret", secret},
			cli.Env{Stdout: out, Stderr: &syncBuffer{}, Getenv: func(string) string { return "" }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var url string
	eventually(t, "listen to print its URL", func() bool {
		m := regexp.MustCompile(`receiving webhooks on (\S+)`).FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	post := func(key string) int {
		body := []byte(`{"type":"succeeded","aggregate":"job","aggregate_id":"j1"}`)
		ts := time.Now()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(outbox.HeaderID, "msg_1")
		req.Header.Set(outbox.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set(outbox.HeaderSignature, outbox.Sign(key, "msg_1", ts, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(secret); code != http.StatusNoContent {
		t.Errorf("a good signature was answered %d, want 204", code)
	}
	if code := post("whsec_" + strings.Repeat("WFla", 8)); code != http.StatusUnauthorized {
		t.Errorf("a bad signature was answered %d, want 401", code)
	}
	if got := out.String(); !strings.Contains(got, "signature ok") || !strings.Contains(got, "signature BAD") {
		t.Errorf("output:\n%s", got)
	}
}

// TestDevWebhookBadInput checks that a bad --webhook is refused before
// anything is created.
func TestDevWebhookBadInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	stint(t, db, "dev", "--webhook", "ftp://example.com/x").usageError(t, "--webhook")
	stint(t, db, "dev", "--webhook-secret", "whsec_abcdefghijklmnopqrstuvwxyz").usageError(t, "--webhook-secret goes with --webhook")
	stint(t, db, "webhooks", "listen", "--secret", "short").usageError(t, "--secret is 5 bytes")
	stint(t, db, "webhooks", "listen", "--path", "hook").usageError(t, "--path")
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad input created %s (%v)", db, err)
	}
}
